/**
 * A model as a set of entities, each with a stable identity made of names and keys (never a
 * server id): what plan compares, what apply writes and what export is made from. References
 * (a role key in a membership, a permission key in a role) are resolved here, by the rules the
 * API applies: a role or permission is found at the referring scope or the nearest ancestor.
 */
import type { JsonValue } from '../engine/model.js';
import {
  BUILT_IN_SCOPE_TYPES, type Section, type TagRef, type TenantModel,
} from './format.js';
import { attributesJson, canonicalJson } from './normalize.js';
import { formatPath, type PathPart } from './parse.js';
import { isValidClientId } from '../common/ids.js';

/** The kinds of entity of a model, in the order they are created (a kind refers only to kinds before it). */
export const ENTITY_KINDS = [
  'scopeType', 'scope', 'resourceType', 'resourceTypeEdge', 'permission', 'role', 'rolePermission',
  'scopeOverride', 'tagGroup', 'tag', 'tagBinding', 'subject', 'membership', 'roleAssignment', 'resource',
  'resourceEdge', 'scopeLink', 'ownershipGrant', 'tagAssignment', 'collection', 'policy',
] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

/** The section of the file each kind is written in. */
export const SECTION_OF: Record<EntityKind, Section> = {
  scopeType: 'scopeTypes', scope: 'scopes', resourceType: 'resourceTypes', resourceTypeEdge: 'resourceTypeHierarchy',
  permission: 'permissions', role: 'roles', rolePermission: 'roles', scopeOverride: 'scopeOverrides', tagGroup: 'tagGroups',
  tag: 'tagGroups', tagBinding: 'tagBindings', subject: 'subjects', membership: 'memberships', roleAssignment: 'memberships',
  resource: 'resources', resourceEdge: 'resourceHierarchy', scopeLink: 'scopeLinks', ownershipGrant: 'ownershipGrants',
  tagAssignment: 'tagAssignments', collection: 'collections', policy: 'policies',
};

/** One entity: its identity, where it is written, what it holds and what it depends on. */
export interface Entity {
  kind: EntityKind;
  /** The identity, unique per kind: a JSON array of names and keys. */
  key: string;
  /** The identity as people read it (`viewer at /eng`). */
  label: string;
  /** Where the entity is written in its model. */
  path: PathPart[];
  /** Everything but the identity, normalised; references as the identity keys of what they name. */
  fields: Record<string, JsonValue>;
  /** The entities it cannot outlive (`<kind> <key>`): deleting one of them deletes or recreates it. */
  refs: string[];
}

export type Entities = Map<EntityKind, Map<string, Entity>>;

export const ROOT = '/';
export const qualified = (kind: EntityKind, key: string) => `${kind} ${key}`;
export const identity = (...parts: string[]) => JSON.stringify(parts);

/** The parent of a scope path; undefined for the root. */
export function parentPath(path: string): string | undefined {
  if (path === ROOT) return undefined;
  const at = path.lastIndexOf('/');
  return at === 0 ? ROOT : path.slice(0, at);
}

/** A scope and its ancestors, nearest first, ending at the root. */
export function chainOf(path: string): string[] {
  const out: string[] = [];
  for (let p: string | undefined = path; p !== undefined; p = parentPath(p)) out.push(p);
  return out;
}

/** `<type key>/<external id>` split at the first `/` (type keys hold none). */
export function splitResource(ref: string): { type: string; externalId: string } {
  const at = ref.indexOf('/');
  return { type: ref.slice(0, at), externalId: ref.slice(at + 1) };
}

/**
 * What references resolve against: per kind, the names that exist. A kind left undefined is
 * unknown (a section the file leaves out, checked offline): references to it are not checked.
 */
export interface Universe {
  scopes?: Set<string>;
  scopeTypes?: Set<string>;
  /** Role key -> the scopes defining a role with that key. */
  roles?: Map<string, Set<string>>;
  permissions?: Map<string, Set<string>>;
  /** Resource type key -> its scope. */
  resourceTypes?: Map<string, string>;
  /** Tag group key -> its identifiers, and whether it is locked and its per-target limit. */
  tagGroups?: Map<string, { identifiers: Set<string>; locked: boolean; max: number }>;
  subjects?: Set<string>;
  /**
   * External ids of the tenant's API keys' subjects (their keys' ids): named by members and
   * owners, never listed. Unknown offline: any API key id is taken as one.
   */
  keySubjects?: Set<string>;
  /** `<type>/<external id>` -> the owner scope. */
  resources?: Map<string, string>;
  collections?: Set<string>;
}

/** The universe a model defines by itself (its sections present; the others unknown). */
export function universeOf(m: TenantModel): Universe {
  const byKey = (items: { key: string; scope?: string }[]) => {
    const out = new Map<string, Set<string>>();
    for (const i of items) out.set(i.key, (out.get(i.key) ?? new Set()).add(i.scope ?? ROOT));
    return out;
  };
  return {
    scopes: m.scopes ? new Set([ROOT, ...m.scopes.map((s) => s.path)]) : undefined,
    scopeTypes: m.scopeTypes ? new Set([...BUILT_IN_SCOPE_TYPES, ...m.scopeTypes.map((t) => t.name)]) : undefined,
    roles: m.roles ? byKey(m.roles) : undefined,
    permissions: m.permissions ? byKey(m.permissions) : undefined,
    resourceTypes: m.resourceTypes ? new Map(m.resourceTypes.map((t) => [t.key, t.scope ?? ROOT])) : undefined,
    tagGroups: m.tagGroups
      ? new Map(m.tagGroups.map((g) => [g.key, { identifiers: new Set((g.tags ?? []).map((t) => t.identifier)), locked: g.locked ?? false, max: g.maxAppliedPerTarget ?? 0 }]))
      : undefined,
    subjects: m.subjects ? new Set(m.subjects.map((s) => s.externalId)) : undefined,
    resources: m.resources ? new Map(m.resources.map((r) => [`${r.type}/${r.externalId}`, r.scope ?? ROOT])) : undefined,
    collections: m.collections ? new Set(m.collections.map((c) => c.name)) : undefined,
  };
}

/** Reports a problem at a path of the model. */
export type Report = (path: PathPart[], message: string) => void;

/** A role or permission found by key from a scope, or why not. */
type Found = { scope: string } | { error: string };

/**
 * The definition of `key` a reference at `from` names: the nearest one at `from` or above it;
 * with `anywhere`, else the only one in the tenant. Undefined when the kind is unknown.
 */
export function resolveByKey(defs: Map<string, Set<string>> | undefined, key: string, from: string, what: string, anywhere = false): Found | undefined {
  if (!defs) return undefined;
  const scopes = defs.get(key);
  for (const s of chainOf(from)) if (scopes?.has(s)) return { scope: s };
  if (anywhere && scopes?.size === 1) return { scope: [...scopes][0] };
  if (anywhere && scopes && scopes.size > 1) {
    return { error: `${what} "${key}" is defined at several scopes (${[...scopes].sort().join(', ')}), none of them ${from} or above it` };
  }
  return { error: anywhere ? `no ${what} "${key}" exists` : `no ${what} "${key}" is defined at ${from} or above it` };
}

/** `key at /scope`, how labels name roles and permissions. */
const at = (key: string, scope: string) => `${key} at ${scope}`;

/**
 * The entities of a model, references resolved against `u`. Problems (a reference to nothing, a
 * duplicate identity) go to `report`; an entity whose reference cannot be resolved is left out.
 */
export function entitiesOf(m: TenantModel, u: Universe, report: Report): Entities {
  const out: Entities = new Map(ENTITY_KINDS.map((k) => [k, new Map<string, Entity>()]));
  const add = (kind: EntityKind, key: string, label: string, path: PathPart[], fields: Record<string, JsonValue | undefined>, refs: string[] = []) => {
    const m = out.get(kind)!;
    const prior = m.get(key);
    if (prior) {
      report(path, `${label} appears twice (first at ${formatPath(prior.path)})`);
      return;
    }
    const clean: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) clean[k] = v;
    m.set(key, { kind, key, label, path, fields: clean, refs });
  };
  const scope = (path: PathPart[], s: string | undefined): string => {
    const p = s ?? ROOT;
    if (u.scopes && !u.scopes.has(p)) report(path, `scope ${p} does not exist`);
    return p;
  };
  /** The role a reference at scope `from` names, as [identity, label], or undefined (reported). */
  const role = (path: PathPart[], key: string, from: string, anywhere = false): [string, string] | undefined => {
    const f = resolveByKey(u.roles, key, from, 'role', anywhere);
    if (f === undefined) return [identity('?', key), key];
    if ('error' in f) return void report(path, f.error);
    return [identity(f.scope, key), at(key, f.scope)];
  };
  const permission = (path: PathPart[], key: string, from: string, anywhere = false): [string, string] | undefined => {
    const f = resolveByKey(u.permissions, key, from, 'permission', anywhere);
    if (f === undefined) return [identity('?', key), key];
    if ('error' in f) return void report(path, f.error);
    return [identity(f.scope, key), at(key, f.scope)];
  };
  const resourceType = (path: PathPart[], key: string) => {
    if (u.resourceTypes && !u.resourceTypes.has(key)) report(path, `resource type "${key}" does not exist`);
    return identity(key);
  };
  const tag = (path: PathPart[], t: TagRef) => {
    const g = u.tagGroups?.get(t.group);
    if (u.tagGroups && !g) report([...path, 'group'], `tag group "${t.group}" does not exist`);
    else if (g && !g.identifiers.has(t.identifier)) report([...path, 'identifier'], `tag group "${t.group}" has no tag "${t.identifier}"`);
    return identity(t.group, t.identifier);
  };
  const subject = (path: PathPart[], externalId: string) => {
    const ofKey = u.keySubjects ? u.keySubjects.has(externalId) : isValidClientId('apk', externalId);
    if (u.subjects && !u.subjects.has(externalId) && !ofKey) report(path, `subject "${externalId}" does not exist`);
    return identity(externalId);
  };
  const resource = (path: PathPart[], ref: string) => {
    if (u.resources && !u.resources.has(ref)) report(path, `resource ${ref} does not exist`);
    const r = splitResource(ref);
    return identity(r.type, r.externalId);
  };

  m.scopeTypes?.forEach((t, i) => add('scopeType', identity(t.name), `scope type ${t.name}`, ['scopeTypes', i], { description: t.description }));
  m.scopes?.forEach((s, i) => {
    const path: PathPart[] = ['scopes', i];
    const parent = parentPath(s.path)!;
    if (u.scopes && !u.scopes.has(parent)) report([...path, 'path'], `the parent scope ${parent} does not exist`);
    if (u.scopeTypes && !u.scopeTypes.has(s.type)) report([...path, 'type'], `scope type "${s.type}" is neither built in nor listed in scopeTypes`);
    add('scope', identity(s.path), `scope ${s.path}`, path, { type: s.type });
  });
  m.resourceTypes?.forEach((t, i) => {
    const path: PathPart[] = ['resourceTypes', i];
    add('resourceType', identity(t.key), `resource type ${t.key}`, path, { name: t.name ?? t.key, scope: scope([...path, 'scope'], t.scope) });
  });
  m.resourceTypeHierarchy?.forEach((e, i) => {
    const path: PathPart[] = ['resourceTypeHierarchy', i];
    const parent = resourceType([...path, 'parent'], e.parent);
    const child = resourceType([...path, 'child'], e.child);
    add('resourceTypeEdge', identity(e.parent, e.child), `resource type edge ${e.parent} > ${e.child}`, path, {},
      [qualified('resourceType', parent), qualified('resourceType', child)]);
  });
  m.permissions?.forEach((p, i) => {
    const path: PathPart[] = ['permissions', i];
    const s = scope([...path, 'scope'], p.scope);
    add('permission', identity(s, p.key), `permission ${at(p.key, s)}`, path, { name: p.name ?? '', description: p.description ?? '' });
  });
  m.roles?.forEach((r, i) => {
    const path: PathPart[] = ['roles', i];
    const s = scope([...path, 'scope'], r.scope);
    const roleKey = identity(s, r.key);
    add('role', roleKey, `role ${at(r.key, s)}`, path, { name: r.name ?? r.key, description: r.description ?? '' });
    r.permissions?.forEach((key, j) => {
      const pp: PathPart[] = [...path, 'permissions', j];
      const p = permission(pp, key, s);
      if (p) add('rolePermission', identity(s, r.key, p[0]), `grant of ${p[1]} to role ${at(r.key, s)}`, pp, { permission: p[0] }, [qualified('role', roleKey), qualified('permission', p[0])]);
    });
  });
  m.scopeOverrides?.forEach((o, i) => {
    const path: PathPart[] = ['scopeOverrides', i];
    const s = scope([...path, 'scope'], o.scope);
    const r = role([...path, 'role'], o.role, s, true);
    if (o.mode === 'block' && (o.permissions?.length ?? 0) > 0) report([...path, 'permissions'], 'must be absent for mode block');
    if (o.mode !== 'block' && (o.permissions?.length ?? 0) === 0) report([...path, 'permissions'], `is required for mode ${o.mode}`);
    const perms = (o.permissions ?? []).map((key, j) => permission([...path, 'permissions', j], key, s, true));
    if (!r || perms.some((p) => !p)) return;
    const ids = perms.map((p) => p![0]).sort();
    add('scopeOverride', identity(s, r[0], o.mode), `${o.mode} override of role ${r[1]} at ${s}`, path, { permissions: ids },
      [qualified('role', r[0]), ...ids.map((p) => qualified('permission', p))]);
  });
  m.tagGroups?.forEach((g, i) => {
    const path: PathPart[] = ['tagGroups', i];
    const s = scope([...path, 'scope'], g.scope);
    add('tagGroup', identity(g.key), `tag group ${g.key}`, path, {
      scope: s, name: g.name ?? g.key, description: g.description ?? '', maxAppliedPerTarget: g.maxAppliedPerTarget ?? 0, locked: g.locked ?? false,
    });
    g.tags?.forEach((t, j) => {
      const tp: PathPart[] = [...path, 'tags', j];
      add('tag', identity(g.key, t.identifier), `tag ${g.key}/${t.identifier}`, tp, {
        label: t.label ?? '', scope: t.scope === undefined ? s : scope([...tp, 'scope'], t.scope),
      }, [qualified('tagGroup', identity(g.key))]);
    });
  });
  m.tagBindings?.forEach((b, i) => {
    const path: PathPart[] = ['tagBindings', i];
    const s = scope([...path, 'scope'], b.scope);
    const t = tag([...path, 'tag'], b.tag);
    const r = role([...path, 'role'], b.role, s);
    if (r) {
      add('tagBinding', identity(b.tag.group, b.tag.identifier, r[0], s), `binding of tag ${b.tag.group}/${b.tag.identifier} to role ${r[1]} at ${s}`, path, {},
        [qualified('tag', t), qualified('role', r[0])]);
    }
  });
  m.subjects?.forEach((s, i) => add('subject', identity(s.externalId), `subject ${s.externalId}`, ['subjects', i], {
    type: s.type ?? 'user', metadata: attributesJson(s.metadata),
  }));
  m.memberships?.forEach((ms, i) => {
    const path: PathPart[] = ['memberships', i];
    const s = scope([...path, 'scope'], ms.scope);
    const subj = subject([...path, 'subject'], ms.subject);
    const key = identity(ms.subject, s);
    add('membership', key, `membership of ${ms.subject} in ${s}`, path, {}, [qualified('subject', subj)]);
    ms.roles?.forEach((rk, j) => {
      const rp: PathPart[] = [...path, 'roles', j];
      const r = role(rp, rk, s);
      if (r) add('roleAssignment', identity(ms.subject, s, r[0]), `assignment of role ${r[1]} to ${ms.subject} in ${s}`, rp, { role: r[0] },
        [qualified('membership', key), qualified('role', r[0])]);
    });
  });
  m.resources?.forEach((r, i) => {
    const path: PathPart[] = ['resources', i];
    const type = resourceType([...path, 'type'], r.type);
    add('resource', identity(r.type, r.externalId), `resource ${r.type}/${r.externalId}`, path, {
      scope: scope([...path, 'scope'], r.scope), displayName: r.displayName ?? '', attributes: attributesJson(r.attributes),
    }, [qualified('resourceType', type)]);
  });
  m.resourceHierarchy?.forEach((e, i) => {
    const path: PathPart[] = ['resourceHierarchy', i];
    const parent = resource([...path, 'parent'], e.parent);
    const child = resource([...path, 'child'], e.child);
    add('resourceEdge', child, `parent of resource ${e.child}`, path, {
      parent, cascade: e.cascade ?? 'none', relationshipType: e.relationshipType ?? '',
    }, [qualified('resource', parent), qualified('resource', child)]);
  });
  m.scopeLinks?.forEach((l, i) => {
    const path: PathPart[] = ['scopeLinks', i];
    const r = resource([...path, 'resource'], l.resource);
    const s = scope([...path, 'scope'], l.scope);
    add('scopeLink', identity(l.resource, s, l.linkType), `${l.linkType} link of ${l.resource} to ${s}`, path, {
      metadata: attributesJson(l.metadata),
    }, [qualified('resource', r)]);
  });
  m.ownershipGrants?.forEach((g, i) => {
    const path: PathPart[] = ['ownershipGrants', i];
    const subj = subject([...path, 'subject'], g.subject);
    const res = resource([...path, 'resource'], g.resource);
    // The role must be usable where the resource lives: resolved at its owner scope.
    const owner = u.resources?.get(g.resource);
    const r = !u.resources ? [identity('?', g.role), g.role] as [string, string] : owner === undefined ? undefined : role([...path, 'role'], g.role, owner);
    if (r) {
      add('ownershipGrant', identity(g.subject, g.resource, r[0]), `ownership of ${g.resource} by ${g.subject} as ${r[1]}`, path, {},
        [qualified('subject', subj), qualified('resource', res), qualified('role', r[0])]);
    }
  });
  m.tagAssignments?.forEach((a, i) => {
    const path: PathPart[] = ['tagAssignments', i];
    const t = tag([...path, 'tag'], a.tag);
    const [targetType, target] = Object.entries(a.target)[0] as ['resource' | 'subject' | 'scope', string];
    const tp: PathPart[] = [...path, 'target', targetType];
    const refs = [qualified('tag', t)];
    if (targetType === 'resource') refs.push(qualified('resource', resource(tp, target)));
    else if (targetType === 'subject') refs.push(qualified('subject', subject(tp, target)));
    else scope(tp, target);
    add('tagAssignment', identity(a.tag.group, a.tag.identifier, targetType, target), `tag ${a.tag.group}/${a.tag.identifier} on ${targetType} ${target}`, path, {}, refs);
  });
  m.collections?.forEach((c, i) => {
    const path: PathPart[] = ['collections', i];
    const type = resourceType([...path, 'resourceType'], c.resourceType);
    add('collection', identity(c.name), `collection ${c.name}`, path, {
      scope: scope([...path, 'scope'], c.scope), resourceType: c.resourceType, description: c.description ?? '', match: canonicalJson(c.match) ?? {},
    }, [qualified('resourceType', type)]);
  });
  m.policies?.forEach((p, i) => {
    const path: PathPart[] = ['policies', i];
    const refs: string[] = [];
    if (p.target.resource !== undefined) refs.push(qualified('resource', resource([...path, 'target', 'resource'], p.target.resource)));
    if (p.target.collection !== undefined) {
      if (u.collections && !u.collections.has(p.target.collection)) report([...path, 'target', 'collection'], `collection "${p.target.collection}" does not exist`);
      refs.push(qualified('collection', identity(p.target.collection)));
    }
    add('policy', identity(p.name), `policy ${p.name}`, path, {
      scope: scope([...path, 'scope'], p.scope),
      target: canonicalJson(p.target),
      actions: [...new Set(p.actions)].sort(),
      effect: p.effect,
      priority: p.priority ?? 0,
      subjectCondition: canonicalJson(p.subjectCondition),
      contextCondition: canonicalJson(p.contextCondition),
      validFrom: isoTime(p.validFrom),
      validUntil: isoTime(p.validUntil),
    }, refs);
  });
  return out;
}

/** A time as the store writes it back: ISO 8601 in UTC with milliseconds. */
export function isoTime(t: string | undefined): string | undefined {
  if (t === undefined) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? t : new Date(ms).toISOString();
}

