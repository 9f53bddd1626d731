/**
 * A tenant's rows as a model: what export writes and what plan compares the file with. Rows
 * name each other by server ids; the model by names and keys, so each id becomes the name of
 * what it points at, and the entity's id is kept beside its identity (`ids`) for apply. A state
 * the format cannot name (two scopes of one parent with one name, a role reference another role
 * of the same key hides) is reported, never guessed at.
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../engine/model.js';
import {
  API_VERSION, BUILT_IN_SCOPE_TYPES, MODEL_KIND, POLICY_NAME, type Section, type TenantModel,
} from './format.js';
import {
  ROOT, entitiesOf, identity, qualified, resolveByKey, universeOf, type Entities, type EntityKind, type Universe,
} from './entities.js';
import { normaliseModel } from './normalize.js';

type Time = string | Date | null | undefined;
type Json = JsonValue | null | undefined;

/** The rows of one tenant a model is made of, as the store holds them (proto field names). */
export interface StateRows {
  scope: { id: string; parentId?: string | null; typeId: string; name: string };
  resourceType: { id: string; key: string; name: string; scopeId: string };
  resourceTypeEdge: { id: string; parentTypeId: string; childTypeId: string };
  permission: { id: string; scopeId: string; key: string; action: string; resourceType: string; resourcePattern: string; name: string; description: string };
  role: { id: string; scopeId: string; key: string; name: string; description: string };
  rolePermission: { id: string; roleId: string; permissionId: string };
  scopeOverride: { id: string; scopeId: string; roleId: string; mode: string; permissionIds?: string[] | null };
  tagGroup: { id: string; scopeId: string; key: string; name: string; description: string; maxAppliedPerTarget: number; isLocked: boolean };
  tag: { id: string; tagGroupId: string; identifier: string; label: string; scopeId: string };
  tagBinding: { id: string; tagId: string; roleId: string; scopeId: string };
  subject: { id: string; type: string; externalId: string; metadata?: Json };
  membership: { id: string; subjectId: string; scopeId: string };
  roleAssignment: { id: string; membershipId: string; roleId: string };
  resource: { id: string; resourceTypeId: string; ownerScopeId: string; externalResourceId: string; displayName?: string | null; attributes?: Json };
  resourceEdge: { id: string; parentResourceId: string; childResourceId: string; cascade: string; relationshipType?: string | null };
  scopeLink: { id: string; resourceId: string; scopeId: string; linkType: string; metadata?: Json };
  ownershipGrant: { id: string; subjectId: string; resourceId: string; roleId: string };
  tagAssignment: { id: string; tagId: string; targetType: string; targetId: string };
  collection: { id: string; scopeId: string; resourceTypeId: string; name: string; description: string; matchDefinition?: Json };
  policy: {
    id: string; scopeId: string; target: { kind: string; resourceId?: string; collectionId?: string }; actions: string[]; effect: string;
    priority: number; subjectCondition?: Json; contextCondition?: Json; validFrom?: Time; validUntil?: Time;
  };
}

export type StateKind = Exclude<EntityKind, 'scopeType'>;

/** Everything a tenant's model is made of. */
export interface TenantState {
  tenantId: string;
  rootScopeId: string;
  /** Every scope type (they are global), for names and for what a file may use. */
  scopeTypes: { id: string; name: string; description: string }[];
  rows: { [K in StateKind]: StateRows[K][] };
  /** The subjects of the tenant's API keys: named by members and owners, never listed. */
  apiKeySubjectIds: string[];
}

/** The tenant as a model, with the server id of each entity. */
export interface StateModel {
  model: TenantModel;
  entities: Entities;
  /** `<kind> <identity>` -> server id (the root scope under the scope `/`). */
  ids: Map<string, string>;
  /** What exists, for the references of a file's entries. */
  universe: Universe;
  keySubjects: string[];
  /** Why the state cannot be written as a model (export and plan refuse it). */
  problems: string[];
}

/** The start of the ids apply gives the policies of a tenant: `policy_<10 hex of the tenant id's SHA-256>_`. */
export function policyIdPrefix(tenantId: string): string {
  return `policy_${createHash('sha256').update(tenantId).digest('hex').slice(0, 10)}_`;
}

/** A policy's name in the model: its id without the tenant's prefix (or without `policy_`). */
export function policyNameOf(tenantId: string, id: string): string {
  const prefix = policyIdPrefix(tenantId);
  return id.startsWith(prefix) ? id.slice(prefix.length) : id.slice('policy_'.length);
}

/** The id apply gives a policy the file names; undefined when the name is too long for an id. */
export function policyIdFor(tenantId: string, name: string): string | undefined {
  const id = policyIdPrefix(tenantId) + name;
  return POLICY_NAME.test(name) && id.length - 'policy_'.length <= 64 ? id : undefined;
}

const time = (t: Time) => (t === null || t === undefined ? undefined : t instanceof Date ? t.toISOString() : new Date(t).toISOString());
const json = (v: Json) => (v === null || v === undefined ? undefined : (v as JsonObject));
const orUndefined = (s: string | null | undefined) => (s === null || s === undefined || s === '' ? undefined : s);
const scoped = (path: string) => (path === ROOT ? undefined : path);

export function stateToModel(state: TenantState): StateModel {
  const problems: string[] = [];
  const ids = new Map<string, string>();
  const r = state.rows;
  const byId = <K extends StateKind>(kind: K) => new Map(r[kind].map((x) => [x.id, x] as [string, StateRows[K]]));
  const typeNames = new Map(state.scopeTypes.map((t) => [t.id, t]));

  // Scope paths: each scope's name after its parent's path.
  const scopes = byId('scope');
  const paths = new Map<string, string>([[state.rootScopeId, ROOT]]);
  const pathOf = (id: string, seen = new Set<string>()): string | undefined => {
    const hit = paths.get(id);
    if (hit !== undefined) return hit;
    const s = scopes.get(id);
    if (!s || !s.parentId || seen.has(id)) return undefined;
    seen.add(id);
    const parent = pathOf(s.parentId, seen);
    if (parent === undefined) return undefined;
    const p = `${parent === ROOT ? '' : parent}/${s.name}`;
    paths.set(id, p);
    return p;
  };
  const taken = new Map<string, string>();
  for (const s of r.scope) {
    if (s.id === state.rootScopeId) continue;
    if (s.name.includes('/') || s.name === '') problems.push(`scope ${s.id} is named "${s.name}": a model names scopes by path, so a name cannot be empty or hold "/"`);
    const p = pathOf(s.id);
    if (p === undefined) continue;
    const twin = taken.get(p);
    if (twin) problems.push(`scopes ${twin} and ${s.id} share the path ${p}: a model names scopes by path, so siblings need distinct names`);
    taken.set(p, s.id);
  }
  const scope = (id: string) => paths.get(id) ?? (problems.push(`scope ${id} is not in the tenant's tree`), ROOT);
  for (const [id, p] of paths) ids.set(qualified('scope', identity(p)), id);

  const resourceTypes = byId('resourceType');
  const typeKey = (id: string) => resourceTypes.get(id)?.key ?? (problems.push(`resource type ${id} is missing`), id);
  const subjects = byId('subject');
  const keySubjectIds = new Set(state.apiKeySubjectIds);
  const subjectExt = (id: string) => subjects.get(id)?.externalId ?? (problems.push(`subject ${id} is missing`), id);
  const resources = byId('resource');
  const resourceRef = (id: string) => {
    const res = resources.get(id);
    if (!res) return problems.push(`resource ${id} is missing`), id;
    return `${typeKey(res.resourceTypeId)}/${res.externalResourceId}`;
  };
  const roles = byId('role');
  const permissions = byId('permission');
  const tagGroups = byId('tagGroup');
  const tags = byId('tag');
  const collections = byId('collection');

  // Role and permission references are written as keys, found again from the referring scope:
  // the key must lead back to the same entity.
  const defs = (rows: { key: string; scopeId: string }[]) => {
    const out = new Map<string, Set<string>>();
    for (const x of rows) out.set(x.key, (out.get(x.key) ?? new Set()).add(scope(x.scopeId)));
    return out;
  };
  const roleDefs = defs(r.role);
  const permissionDefs = defs(r.permission);
  const refTo = (what: 'role' | 'permission', id: string, from: string, context: string, anywhere = false): [string, string] => {
    const row = what === 'role' ? roles.get(id) : permissions.get(id);
    if (!row) return problems.push(`${context}: ${what} ${id} is missing`), [id, identity('?', id)];
    const own = scope(row.scopeId);
    const found = resolveByKey(what === 'role' ? roleDefs : permissionDefs, row.key, from, what, anywhere);
    if (!found || 'error' in found || found.scope !== own) {
      problems.push(`${context}: ${what} "${row.key}" at ${own} cannot be named by its key from ${from}, where it resolves to ${found && !('error' in found) ? `the one at ${found.scope}` : 'nothing'}`);
    }
    return [row.key, identity(own, row.key)];
  };

  const m: TenantModel = { apiVersion: API_VERSION, kind: MODEL_KIND };
  const builtIn = new Set<string>(BUILT_IN_SCOPE_TYPES);
  const usedTypes = new Set(r.scope.filter((s) => s.id !== state.rootScopeId).map((s) => s.typeId));
  m.scopeTypes = [...usedTypes].flatMap((id) => {
    const t = typeNames.get(id);
    if (!t) return problems.push(`scope type ${id} is missing`), [];
    ids.set(qualified('scopeType', identity(t.name)), t.id);
    return builtIn.has(t.name) ? [] : [{ name: t.name, description: orUndefined(t.description) }];
  });
  m.scopes = r.scope.filter((s) => s.id !== state.rootScopeId).map((s) => ({ path: scope(s.id), type: typeNames.get(s.typeId)?.name ?? s.typeId }));
  m.resourceTypes = r.resourceType.map((t) => {
    ids.set(qualified('resourceType', identity(t.key)), t.id);
    return { key: t.key, name: t.name, scope: scoped(scope(t.scopeId)) };
  });
  m.resourceTypeHierarchy = r.resourceTypeEdge.map((e) => {
    const [parent, child] = [typeKey(e.parentTypeId), typeKey(e.childTypeId)];
    ids.set(qualified('resourceTypeEdge', identity(parent, child)), e.id);
    return { parent, child };
  });
  m.permissions = r.permission.map((p) => {
    if (p.action.includes(':') || p.resourceType.includes(':')) {
      problems.push(`permission ${p.id} has action "${p.action}" and resource type "${p.resourceType}": a model names permissions by "<resourceType>:<action>:<resourcePattern>", so neither may hold ":"`);
    }
    const s = scope(p.scopeId);
    ids.set(qualified('permission', identity(s, p.key)), p.id);
    return { key: p.key, scope: scoped(s), name: orUndefined(p.name), description: orUndefined(p.description) };
  });
  const grantsOf = new Map<string, string[]>();
  for (const g of r.rolePermission) {
    const role = roles.get(g.roleId);
    if (!role) continue;
    const s = scope(role.scopeId);
    const [key, permission] = refTo('permission', g.permissionId, s, `the grant ${g.id} of role "${role.key}" at ${s}`);
    ids.set(qualified('rolePermission', identity(s, role.key, permission)), g.id);
    grantsOf.set(role.id, [...(grantsOf.get(role.id) ?? []), key]);
  }
  m.roles = r.role.map((x) => {
    const s = scope(x.scopeId);
    ids.set(qualified('role', identity(s, x.key)), x.id);
    return { key: x.key, scope: scoped(s), name: x.name, description: orUndefined(x.description), permissions: grantsOf.get(x.id) };
  });
  m.scopeOverrides = r.scopeOverride.map((o) => {
    const s = scope(o.scopeId);
    const context = `scope override ${o.id}`;
    const [role, roleId] = refTo('role', o.roleId, s, context, true);
    const perms = (o.permissionIds ?? []).map((p) => refTo('permission', p, s, context, true));
    ids.set(qualified('scopeOverride', identity(s, roleId, o.mode)), o.id);
    return { scope: scoped(s), role, mode: o.mode as 'block', permissions: perms.map((p) => p[0]) };
  });
  const tagsOf = new Map<string, StateRows['tag'][]>();
  for (const t of r.tag) tagsOf.set(t.tagGroupId, [...(tagsOf.get(t.tagGroupId) ?? []), t]);
  m.tagGroups = r.tagGroup.map((g) => {
    ids.set(qualified('tagGroup', identity(g.key)), g.id);
    const s = scope(g.scopeId);
    return {
      key: g.key, scope: scoped(s), name: g.name, description: orUndefined(g.description), maxAppliedPerTarget: g.maxAppliedPerTarget, locked: g.isLocked,
      tags: (tagsOf.get(g.id) ?? []).map((t) => {
        ids.set(qualified('tag', identity(g.key, t.identifier)), t.id);
        return { identifier: t.identifier, label: orUndefined(t.label), scope: scope(t.scopeId) };
      }),
    };
  });
  const tagRef = (id: string) => {
    const t = tags.get(id);
    const g = t && tagGroups.get(t.tagGroupId);
    if (!t || !g) return problems.push(`tag ${id} is missing`), { group: id, identifier: id };
    return { group: g.key, identifier: t.identifier };
  };
  m.tagBindings = r.tagBinding.map((b) => {
    const s = scope(b.scopeId);
    const tag = tagRef(b.tagId);
    const [role, roleId] = refTo('role', b.roleId, s, `tag binding ${b.id}`);
    ids.set(qualified('tagBinding', identity(tag.group, tag.identifier, roleId, s)), b.id);
    return { tag, role, scope: scoped(s) };
  });
  m.subjects = r.subject.filter((s) => !keySubjectIds.has(s.id)).map((s) => {
    ids.set(qualified('subject', identity(s.externalId)), s.id);
    return { externalId: s.externalId, type: s.type as 'user', metadata: json(s.metadata) };
  });
  const assignmentsOf = new Map<string, string[]>();
  const memberships = byId('membership');
  for (const a of r.roleAssignment) {
    const ms = memberships.get(a.membershipId);
    if (!ms) continue;
    const s = scope(ms.scopeId);
    const subject = subjectExt(ms.subjectId);
    const [key, roleId] = refTo('role', a.roleId, s, `the assignment ${a.id} to ${subject} in ${s}`);
    ids.set(qualified('roleAssignment', identity(subject, s, roleId)), a.id);
    assignmentsOf.set(ms.id, [...(assignmentsOf.get(ms.id) ?? []), key]);
  }
  m.memberships = r.membership.map((ms) => {
    const s = scope(ms.scopeId);
    const subject = subjectExt(ms.subjectId);
    ids.set(qualified('membership', identity(subject, s)), ms.id);
    return { subject, scope: scoped(s), roles: assignmentsOf.get(ms.id) };
  });
  m.resources = r.resource.map((x) => {
    const type = typeKey(x.resourceTypeId);
    ids.set(qualified('resource', identity(type, x.externalResourceId)), x.id);
    return { type, externalId: x.externalResourceId, scope: scoped(scope(x.ownerScopeId)), displayName: orUndefined(x.displayName), attributes: json(x.attributes) };
  });
  m.resourceHierarchy = r.resourceEdge.map((e) => {
    const child = resources.get(e.childResourceId);
    if (child) ids.set(qualified('resourceEdge', identity(typeKey(child.resourceTypeId), child.externalResourceId)), e.id);
    return { parent: resourceRef(e.parentResourceId), child: resourceRef(e.childResourceId), cascade: e.cascade as 'none', relationshipType: orUndefined(e.relationshipType) };
  });
  m.scopeLinks = r.scopeLink.map((l) => {
    const resource = resourceRef(l.resourceId);
    const s = scope(l.scopeId);
    ids.set(qualified('scopeLink', identity(resource, s, l.linkType)), l.id);
    return { resource, scope: s, linkType: l.linkType as 'share', metadata: json(l.metadata) };
  });
  m.ownershipGrants = r.ownershipGrant.map((g) => {
    const resource = resourceRef(g.resourceId);
    const owner = resources.get(g.resourceId);
    const subject = subjectExt(g.subjectId);
    const [role, roleId] = refTo('role', g.roleId, owner ? scope(owner.ownerScopeId) : ROOT, `ownership grant ${g.id}`);
    ids.set(qualified('ownershipGrant', identity(subject, resource, roleId)), g.id);
    return { subject, resource, role };
  });
  m.tagAssignments = r.tagAssignment.map((a) => {
    const tag = tagRef(a.tagId);
    const target = a.targetType === 'resource' ? resourceRef(a.targetId) : a.targetType === 'subject' ? subjectExt(a.targetId) : scope(a.targetId);
    ids.set(qualified('tagAssignment', identity(tag.group, tag.identifier, a.targetType, target)), a.id);
    return { tag, target: { [a.targetType]: target } };
  });
  const names = new Map<string, string>();
  m.collections = r.collection.map((c) => {
    const twin = names.get(c.name);
    if (twin) problems.push(`collections ${twin} and ${c.id} share the name "${c.name}": a model names collections by name`);
    names.set(c.name, c.id);
    ids.set(qualified('collection', identity(c.name)), c.id);
    return {
      name: c.name, scope: scoped(scope(c.scopeId)), resourceType: typeKey(c.resourceTypeId), description: orUndefined(c.description),
      match: json(c.matchDefinition) ?? {},
    };
  });
  m.policies = r.policy.map((p) => {
    const name = policyNameOf(state.tenantId, p.id);
    ids.set(qualified('policy', identity(name)), p.id);
    const target = p.target.kind === 'resource'
      ? { resource: resourceRef(p.target.resourceId ?? '') }
      : { collection: collections.get(p.target.collectionId ?? '')?.name ?? (problems.push(`collection ${p.target.collectionId} is missing`), '') };
    return {
      name, scope: scoped(scope(p.scopeId)), target, actions: p.actions, effect: p.effect as 'allow', priority: p.priority,
      subjectCondition: json(p.subjectCondition), contextCondition: json(p.contextCondition), validFrom: time(p.validFrom), validUntil: time(p.validUntil),
    };
  });

  const model = normaliseModel(m);
  const keySubjects = [...keySubjectIds].flatMap((id) => {
    const s = subjects.get(id);
    if (s) ids.set(qualified('subject', identity(s.externalId)), s.id);
    return s ? [s.externalId] : [];
  });
  const universe = universeOf(model);
  universe.keySubjects = new Set(keySubjects);
  universe.scopeTypes = new Set([...BUILT_IN_SCOPE_TYPES, ...state.scopeTypes.map((t) => t.name)]);
  const entities = entitiesOf(model, universe, (path, message) => problems.push(`${path.join('.')}: ${message}`));
  // Every scope type exists for every tenant (they are global): a file's types are created only when missing.
  const types = entities.get('scopeType')!;
  for (const t of state.scopeTypes) {
    const key = identity(t.name);
    ids.set(qualified('scopeType', key), t.id);
    if (!types.has(key)) types.set(key, { kind: 'scopeType', key, label: `scope type ${t.name}`, path: [], fields: t.description ? { description: t.description } : {}, refs: [] });
  }
  return { model, entities, ids, universe, keySubjects, problems: [...new Set(problems)] };
}

/** The model with only the given sections (export of part of a tenant). */
export function onlySections(model: TenantModel, sections: readonly Section[]): TenantModel {
  const out: TenantModel = { apiVersion: model.apiVersion, kind: model.kind };
  for (const s of sections) (out as Record<string, unknown>)[s] = model[s] ?? [];
  return out;
}

