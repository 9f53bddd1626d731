/**
 * The table from entity kind to the family that keeps it: every operation on a row (check,
 * index, remove, count, read) goes through its kind's {@link KindStore}, so no code switches
 * over kinds.
 */
import { ENTITY_KINDS, type EntityKind } from '../model.js';
import type { PolicyFamily } from './policies.js';
import type { ResourceNodes } from './resource-nodes.js';
import type { ResourceFamily } from './resources.js';
import type { RoleFamily } from './roles.js';
import type { ScopeFamily } from './scopes.js';
import type { SubjectFamily } from './subjects.js';
import type { TagFamily } from './tags.js';
import type { KindStore } from './types.js';

/** Each entity kind's store, from the family that owns it. */
export type KindTable = { readonly [K in EntityKind]: KindStore<K> };

/** The families of one index. */
export interface Families {
  readonly scopes: ScopeFamily;
  readonly roles: RoleFamily;
  readonly subjects: SubjectFamily;
  readonly nodes: ResourceNodes;
  readonly resources: ResourceFamily;
  readonly policies: PolicyFamily;
  readonly tags: TagFamily;
}

export function kindTable(f: Families): KindTable {
  return {
    scope: f.scopes.scopes,
    subject: f.subjects.subjects,
    role: f.roles.roles,
    permission: f.roles.permissions,
    role_permission: f.roles.rolePermissions,
    membership: f.subjects.memberships,
    role_assignment: f.subjects.assignments,
    scope_override: f.roles.overrides,
    ownership_grant: f.subjects.grants,
    resource_type: f.nodes.types,
    resource: f.resources.resources,
    resource_scope_link: f.resources.links,
    resource_edge: f.resources.edges,
    collection: f.policies.collections,
    policy: f.policies.policies,
    tag_group: f.tags.groups,
    tag: f.tags.tags,
    tag_assignment: f.tags.assignments,
    tag_binding: f.tags.bindings,
  };
}

/**
 * The order a snapshot is indexed in: the entities other rows refer to come first, so a
 * referring row's copy of their id can be the referred row's own string (see `RowHooks.slim`).
 * The result does not depend on the order (the differential test builds in change order too).
 */
export const BUILD_ORDER: readonly EntityKind[] = [
  'scope',
  'resource_type',
  'role',
  'permission',
  'subject',
  'resource',
  'tag_group',
  'tag',
  ...ENTITY_KINDS.filter((k) => !['scope', 'resource_type', 'role', 'permission', 'subject', 'resource', 'tag_group', 'tag'].includes(k)),
];

const KIND_SET = new Set<string>(ENTITY_KINDS);

/** Whether `kind` names an entity kind. */
export function isKind(kind: unknown): kind is EntityKind {
  return KIND_SET.has(kind as string);
}

/** The store of a kind, typed for any row (the caller checked the row against it). */
export function storeOf(table: KindTable, kind: EntityKind): KindStore<EntityKind> {
  return table[kind] as KindStore<EntityKind>;
}

/** Why a row of a kind is malformed (naming the field), or null. */
export function rowError(table: KindTable, kind: EntityKind, row: unknown): string | null {
  if (row === null || typeof row !== 'object') return 'row is not an object';
  const r = row as Record<string, unknown>;
  const store = storeOf(table, kind);
  for (const f of store.required) {
    if (typeof r[f] !== 'string') return `${kind}.${f} must be a string`;
  }
  return store.invalid(r);
}
