/**
 * Plain rows the tenant index is built from. One interface per entity, shaped like the REST
 * JSON (camelCase, ids as strings, times as ISO-8601 strings). The store maps its entities to
 * these rows; the Watch stream carries them in snapshots and changes.
 */

/** Any JSON value (metadata, attributes, match definitions, JSON Logic rules). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

export interface Scope {
  id: string;
  tenantId: string;
  /** Absent or null for the tenant root. */
  parentId?: string | null;
  typeId: string;
  name: string;
}

export interface Subject {
  id: string;
  /** `user`, `service` or `agent`. */
  type: string;
  externalId: string;
  metadata?: JsonObject | null;
}

export interface Role {
  id: string;
  /** A role defined at a scope is usable at that scope and its descendants. */
  scopeId: string;
  key: string;
  name: string;
}

export interface Permission {
  id: string;
  scopeId: string;
  action: string;
  /** A resource type key, or `*`. */
  resourceType: string;
  /** `*`, an external resource id, or a resource id. */
  resourcePattern: string;
  /** `<resourceType>:<action>:<resourcePattern>`. */
  key: string;
}

export interface RolePermission {
  id: string;
  roleId: string;
  permissionId: string;
}

export interface Membership {
  id: string;
  subjectId: string;
  scopeId: string;
}

export interface RoleAssignment {
  id: string;
  membershipId: string;
  roleId: string;
}

export type OverrideMode = 'block' | 'add' | 'remove';

export interface ScopeOverride {
  id: string;
  scopeId: string;
  roleId: string;
  mode: OverrideMode;
  /** Used by `add` and `remove`; ignored by `block`. */
  permissionIds: string[];
}

export interface OwnershipGrant {
  id: string;
  subjectId: string;
  resourceId: string;
  roleId: string;
}

export interface ResourceType {
  id: string;
  key: string;
  scopeId: string;
  name: string;
}

export interface Resource {
  id: string;
  resourceTypeId: string;
  ownerScopeId: string;
  externalResourceId: string;
  displayName?: string | null;
  attributes?: JsonObject | null;
  createdAt: string;
  createdBy: string;
}

export interface ResourceScopeLink {
  id: string;
  resourceId: string;
  scopeId: string;
  linkType: 'share' | 'alias' | 'mirror' | string;
}

export interface ResourceEdge {
  id: string;
  parentResourceId: string;
  childResourceId: string;
  cascade: 'inherit' | 'none';
  relationshipType?: string | null;
}

export interface Collection {
  id: string;
  scopeId: string;
  resourceTypeId: string;
  name: string;
  matchDefinition: JsonValue;
}

export type PolicyTarget = { kind: 'resource'; resourceId: string } | { kind: 'collection'; collectionId: string };

export interface Policy {
  id: string;
  scopeId: string;
  target: PolicyTarget;
  actions: string[];
  effect: 'allow' | 'deny';
  /** Defaults to 0. */
  priority: number;
  subjectCondition?: JsonValue;
  contextCondition?: JsonValue;
  /** Inclusive. */
  validFrom?: string | null;
  /** Exclusive. */
  validUntil?: string | null;
}

export interface TagGroup {
  id: string;
  key: string;
  scopeId: string;
  name?: string;
  description?: string;
  origin?: string;
  maxAppliedPerTarget?: number;
  isLocked?: boolean;
}

export interface Tag {
  id: string;
  tagGroupId: string;
  identifier: string;
  scopeId?: string;
  label?: string;
}

export interface TagAssignment {
  id: string;
  tagId: string;
  targetType: 'resource' | 'subject' | 'scope';
  targetId: string;
}

export interface TagBinding {
  id: string;
  tagId: string;
  roleId: string;
  scopeId: string;
}

/** Row type of each entity kind, keyed by the kind string used in the change log. */
export interface RowsByKind {
  scope: Scope;
  subject: Subject;
  role: Role;
  permission: Permission;
  role_permission: RolePermission;
  membership: Membership;
  role_assignment: RoleAssignment;
  scope_override: ScopeOverride;
  ownership_grant: OwnershipGrant;
  resource_type: ResourceType;
  resource: Resource;
  resource_scope_link: ResourceScopeLink;
  resource_edge: ResourceEdge;
  collection: Collection;
  policy: Policy;
  tag_group: TagGroup;
  tag: Tag;
  tag_assignment: TagAssignment;
  tag_binding: TagBinding;
}

export type EntityKind = keyof RowsByKind;

export const ENTITY_KINDS: readonly EntityKind[] = [
  'scope',
  'subject',
  'role',
  'permission',
  'role_permission',
  'membership',
  'role_assignment',
  'scope_override',
  'ownership_grant',
  'resource_type',
  'resource',
  'resource_scope_link',
  'resource_edge',
  'collection',
  'policy',
  'tag_group',
  'tag',
  'tag_assignment',
  'tag_binding',
];

/** One entry of the control plane's change log. `row` is required for `upsert`. */
export type Change = {
  [K in EntityKind]: { op: 'upsert' | 'delete'; kind: K; id: string; row?: RowsByKind[K] };
}[EntityKind];

/** Every row of one tenant at one revision. */
export interface TenantSnapshot {
  revision: number;
  rows: { [K in EntityKind]?: RowsByKind[K][] };
}
