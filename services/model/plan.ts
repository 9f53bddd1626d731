/**
 * Plan: the desired entities against the current ones, as the creates, updates, replaces,
 * deletes and keeps that would make the tenant match the file. A pure function: the server
 * plans against the tenant it reads, the command line against an exported file.
 */
import type { JsonValue } from '../engine/model.js';
import type { Section } from './format.js';
import { ENTITY_KINDS, SECTION_OF, qualified, type Entities, type Entity, type EntityKind } from './entities.js';
import { compareText } from './normalize.js';
import type { PathPart } from './parse.js';

export type ChangeAction = 'create' | 'update' | 'replace' | 'delete' | 'keep';

export interface ModelChange {
  kind: EntityKind;
  /** The entity's identity (entities.ts `Entity.key`). */
  key: string;
  label: string;
  action: ChangeAction;
  /** The fields that differ (update, replace). */
  fields: string[];
  /** Why, when the action is not the plain reading of the file (a replace, a keep, a cascade). */
  reason: string;
  /** What is written (create, update, replace): the file's entity, or the current one recreated. */
  entity?: Entity;
  /** What the tenant holds now (update, replace, delete, keep). */
  current?: Entity;
}

/** A change the plan cannot make: where in the file (when it is about an entry of it) and why. */
export interface PlanProblem {
  path?: PathPart[];
  message: string;
}

export interface ModelPlan {
  changes: ModelChange[];
  problems: PlanProblem[];
}

export interface PlanOptions {
  /** Delete what the file's sections leave out (off: such entities are listed as kept). */
  prune: boolean;
  /** The sections the file holds: the kinds it manages. */
  managed: ReadonlySet<Section>;
}

interface KindRule {
  /** The API can delete it (so a replace or a prune can). */
  deletable: boolean;
  /** Fields the API updates in place; any other field's change is a replace. */
  mutable: readonly string[];
}

const RULES: Record<EntityKind, KindRule> = {
  scopeType: { deletable: false, mutable: [] },
  scope: { deletable: false, mutable: [] },
  resourceType: { deletable: true, mutable: ['name'] },
  resourceTypeEdge: { deletable: false, mutable: [] },
  permission: { deletable: true, mutable: [] },
  role: { deletable: true, mutable: [] },
  rolePermission: { deletable: true, mutable: [] },
  scopeOverride: { deletable: true, mutable: [] },
  tagGroup: { deletable: false, mutable: ['name', 'description', 'maxAppliedPerTarget', 'locked'] },
  tag: { deletable: false, mutable: [] },
  tagBinding: { deletable: true, mutable: [] },
  subject: { deletable: true, mutable: ['metadata'] },
  membership: { deletable: true, mutable: [] },
  roleAssignment: { deletable: true, mutable: [] },
  resource: { deletable: true, mutable: ['displayName', 'attributes'] },
  resourceEdge: { deletable: true, mutable: [] },
  scopeLink: { deletable: true, mutable: ['metadata'] },
  ownershipGrant: { deletable: true, mutable: [] },
  tagAssignment: { deletable: true, mutable: [] },
  collection: { deletable: true, mutable: [] },
  policy: { deletable: true, mutable: [] },
};

/**
 * Dependents the API refuses to delete along with what they refer to (a resource type in use
 * cannot be deleted; a permission is taken out of the overrides that list it, which a model
 * states explicitly instead): `<dependent kind> <referenced kind>`.
 */
const REFUSED_CASCADES = new Set(['resource resourceType', 'collection resourceType', 'scopeOverride permission']);

const KIND_ORDER = new Map(ENTITY_KINDS.map((k, i) => [k, i]));
const same = (a: JsonValue | undefined, b: JsonValue | undefined) => JSON.stringify(a) === JSON.stringify(b);
const list = (xs: string[]) => xs.join(', ');

export function planModel(desired: Entities, current: Entities, options: PlanOptions): ModelPlan {
  const changes = new Map<string, ModelChange>();
  const problems: PlanProblem[] = [];
  const add = (c: ModelChange) => changes.set(qualified(c.kind, c.key), c);

  for (const kind of ENTITY_KINDS) {
    if (!options.managed.has(SECTION_OF[kind])) continue;
    const rule = RULES[kind];
    const want = desired.get(kind)!;
    const have = current.get(kind)!;
    for (const d of want.values()) {
      const c = have.get(d.key);
      if (!c) {
        add({ kind, key: d.key, label: d.label, action: 'create', fields: [], reason: '', entity: d });
        continue;
      }
      // Scope types are global: a tenant's model uses them, never changes them.
      if (kind === 'scopeType') continue;
      const fields = [...new Set([...Object.keys(d.fields), ...Object.keys(c.fields)])].filter((f) => !same(d.fields[f], c.fields[f])).sort(compareText);
      if (fields.length === 0) continue;
      const fixed = fields.filter((f) => !rule.mutable.includes(f));
      if (fixed.length === 0) {
        add({ kind, key: d.key, label: d.label, action: 'update', fields, reason: '', entity: d, current: c });
      } else if (rule.deletable) {
        add({
          kind, key: d.key, label: d.label, action: 'replace', fields, entity: d, current: c,
          reason: `${list(fixed)} cannot change in place (the API has no update for ${fixed.length > 1 ? 'them' : 'it'}): deleted and created again, with the same id, in the same transaction`,
        });
      } else {
        problems.push({ path: [...d.path, fixed[0]], message: `${d.label}: ${list(fixed)} cannot change (the API neither updates nor deletes ${kind === 'scope' ? 'scopes' : `this kind of entity`})` });
      }
    }
    if (kind === 'scopeType') continue;
    for (const c of have.values()) {
      if (want.has(c.key)) continue;
      if (!options.prune) add({ kind, key: c.key, label: c.label, action: 'keep', fields: [], reason: 'not in the file; kept (prune is off)', current: c });
      else if (!rule.deletable) add({ kind, key: c.key, label: c.label, action: 'keep', fields: [], reason: 'not in the file; kept (the API cannot delete it)', current: c });
      else add({ kind, key: c.key, label: c.label, action: 'delete', fields: [], reason: 'not in the file (prune)', current: c });
    }
  }

  // What cannot outlive a deleted or replaced entity goes with it: deleted along with a delete
  // (as the API's deletes do), created again with a replace. Kinds refer only to earlier kinds,
  // so one pass in kind order reaches every dependent.
  const currentByName = new Map<string, Entity>();
  for (const m of current.values()) for (const e of m.values()) currentByName.set(qualified(e.kind, e.key), e);
  const gone = (q: string) => {
    const a = changes.get(q)?.action;
    return a === 'delete' || a === 'replace';
  };
  for (const kind of ENTITY_KINDS) {
    for (const c of current.get(kind)!.values()) {
      const q = qualified(kind, c.key);
      if (gone(q)) continue;
      const lost = c.refs.filter(gone);
      if (lost.length === 0) continue;
      const labels = list(lost.map((r) => currentByName.get(r)?.label ?? r));
      const deleted = lost.find((r) => changes.get(r)!.action === 'delete');
      const d = options.managed.has(SECTION_OF[kind]) ? desired.get(kind)!.get(c.key) : undefined;
      if (deleted !== undefined) {
        const refKind = deleted.slice(0, deleted.indexOf(' '));
        if (d || REFUSED_CASCADES.has(`${kind} ${refKind}`)) {
          problems.push({ path: d?.path, message: `${c.label} refers to ${currentByName.get(deleted)?.label ?? deleted}, which the plan deletes: remove or change it in the file too` });
          continue;
        }
        add({ kind, key: c.key, label: c.label, action: 'delete', fields: [], reason: `deleted with ${labels}`, current: c });
      } else {
        const prior = changes.get(q);
        add({
          kind, key: c.key, label: c.label, action: 'replace', fields: prior?.fields ?? [], entity: d ?? c, current: c,
          reason: `created again with ${labels}, which ${lost.length > 1 ? 'are' : 'is'} replaced`,
        });
      }
    }
  }

  checkLocks(changes, desired, current, options, problems);
  const ordered = [...changes.values()].sort((a, b) => KIND_ORDER.get(a.kind)! - KIND_ORDER.get(b.kind)! || compareText(a.label, b.label));
  return { changes: ordered, problems };
}

/**
 * A locked tag group takes no new tags or assignments (the API refuses them): a file that adds
 * some to a group locked now must unlock it (the apply unlocks before it creates, and locks
 * after, so a group the file creates or unlocks may be locked in the same file). A replaced tag
 * or assignment is not new: it comes back with its id, the group locked again after it.
 */
function checkLocks(changes: Map<string, ModelChange>, desired: Entities, current: Entities, options: PlanOptions, problems: PlanProblem[]): void {
  const lockedAfter = (groupKey: string) => {
    const d = options.managed.has('tagGroups') ? desired.get('tagGroup')!.get(groupKey) : current.get('tagGroup')!.get(groupKey);
    return d?.fields.locked === true;
  };
  for (const c of changes.values()) {
    if ((c.kind !== 'tag' && c.kind !== 'tagAssignment') || c.action !== 'create') continue;
    const [group] = JSON.parse(c.key) as string[];
    const groupKey = JSON.stringify([group]);
    if (current.get('tagGroup')!.get(groupKey)?.fields.locked === true && lockedAfter(groupKey)) {
      const inFile = c.entity !== undefined && desired.get(c.kind)!.get(c.key) === c.entity;
      problems.push({ path: inFile ? c.entity!.path : undefined, message: `tag group ${group} is locked: it takes no new ${c.kind === 'tag' ? 'tags' : 'assignments'} (unlock it first: locked: false)` });
    }
  }
}

/** The changes that write something (everything but keeps). */
export function writes(plan: ModelPlan): ModelChange[] {
  return plan.changes.filter((c) => c.action !== 'keep');
}
