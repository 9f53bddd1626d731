import { EntitySchema } from '@mikro-orm/core';

/**
 * MikroORM entity schemas, one per table. Property names are the proto field names
 * (lowerCamelCase) so a row maps to its generated message field by field; columns are
 * snake_case. Timestamps are Date, JSON columns are jsonb.
 */
type Props = Record<string, Record<string, unknown>>;

const str = { type: 'string', columnType: 'text' };
const optStr = { ...str, nullable: true };
const json = { type: 'json', nullable: true };
const date = { type: 'Date', columnType: 'timestamptz(3)' };

const owned = (): Props => ({
  id: { ...str, primary: true },
  tenantId: { ...str, index: true },
  createdAt: date,
  createdBy: str,
});

function table(name: string, tableName: string, props: Props, base: Props = owned()) {
  return new EntitySchema<Record<string, unknown>>({
    name,
    tableName,
    properties: { ...base, ...props } as never,
  });
}

const global = (): Props => ({ id: { ...str, primary: true }, createdAt: date, createdBy: str });

export const TenantEntity = table('Tenant', 'tenants', {
  name: str, scopeId: str, revision: { type: 'number', columnType: 'bigint' },
}, global());
export const ProjectEntity = table('Project', 'projects', { name: str, scopeId: str });
export const EnvironmentEntity = table('Environment', 'environments', { projectId: str, scopeId: str, name: str });
export const WorkspaceEntity = table('Workspace', 'workspaces', { scopeId: str, name: str });
export const ScopeTypeEntity = table('ScopeType', 'scope_types', { name: str, description: str }, global());
export const ScopeTypeEdgeEntity = table('ScopeTypeEdge', 'scope_type_edges', { parentTypeId: str, childTypeId: str }, global());
export const ScopeEntity = table('Scope', 'scopes', { name: str, typeId: str, parentId: optStr });
export const SubjectEntity = table('Subject', 'subjects', { tenantId: optStr, type: str, externalId: str, metadata: json });
export const RoleEntity = table('Role', 'roles', { scopeId: str, key: str, name: str, description: str });
export const PermissionEntity = table('Permission', 'permissions', {
  scopeId: str, action: str, resourceType: str, resourcePattern: str, key: str, name: str, description: str,
});
export const RolePermissionEntity = table('RolePermission', 'role_permissions', { roleId: str, permissionId: str });
export const MembershipEntity = table('Membership', 'memberships', { subjectId: str, scopeId: str });
export const RoleAssignmentEntity = table('RoleAssignment', 'role_assignments', { membershipId: str, roleId: str });
export const ScopeOverrideEntity = table('ScopeOverride', 'scope_overrides', { scopeId: str, roleId: str, mode: str, permissionIds: json });
export const OwnershipGrantEntity = table('OwnershipGrant', 'ownership_grants', { subjectId: str, resourceId: str, roleId: str });
export const TagGroupEntity = table('TagGroup', 'tag_groups', {
  scopeId: str, name: str, key: str, description: str, origin: str,
  maxAppliedPerTarget: { type: 'number', columnType: 'int' }, isLocked: { type: 'boolean' },
});
export const TagEntity = table('Tag', 'tags', { scopeId: str, tagGroupId: str, identifier: str, label: str });
export const TagAssignmentEntity = table('TagAssignment', 'tag_assignments', { tagId: str, targetType: str, targetId: str });
export const TagBindingEntity = table('TagBinding', 'tag_bindings', { tagId: str, roleId: str, scopeId: str });
export const ResourceTypeEntity = table('ResourceType', 'resource_types', { name: str, key: str, scopeId: str });
export const ResourceTypeEdgeEntity = table('ResourceTypeEdge', 'resource_type_edges', { parentTypeId: str, childTypeId: str });
export const ResourceEntity = table('Resource', 'resources', {
  resourceTypeId: str, ownerScopeId: str, externalResourceId: str, displayName: optStr, attributes: json,
});
export const ResourceEdgeEntity = table('ResourceEdge', 'resource_edges', {
  parentResourceId: str, childResourceId: str, relationshipType: optStr, cascade: str,
});
export const ResourceScopeLinkEntity = table('ResourceScopeLink', 'resource_scope_links', {
  resourceId: str, scopeId: str, linkType: str, metadata: json,
});
export const ResourceCollectionEntity = table('ResourceCollection', 'resource_collections', {
  scopeId: str, resourceTypeId: str, name: str, description: str, matchDefinition: json,
});
export const ResourcePolicyEntity = table('ResourcePolicy', 'resource_policies', {
  scopeId: str, target: json, targetId: str, actions: json, effect: str,
  priority: { type: 'number', columnType: 'int' }, subjectCondition: json, contextCondition: json,
  validFrom: { ...date, nullable: true }, validUntil: { ...date, nullable: true },
});
export const ApiKeyEntity = table('ApiKey', 'api_keys', {
  subjectId: str, tenantId: optStr, environmentId: optStr, name: str, description: str,
  prefix: str, lastFour: str, secretHash: str, hashAlgo: str, createdBySubjectId: str,
  expiresAt: { ...date, nullable: true }, status: str, intendedUse: str, kind: str, metadata: json,
}, { id: { ...str, primary: true }, createdAt: date });
export const ChangeLogEntity = new EntitySchema<Record<string, unknown>>({
  name: 'ChangeLog',
  tableName: 'change_log',
  properties: {
    tenantId: { ...str, primary: true },
    revision: { type: 'number', columnType: 'bigint', primary: true },
    seq: { type: 'number', columnType: 'int', primary: true },
    op: str, kind: str, entityId: str, data: json, before: json, createdAt: date,
  } as never,
});

export const ALL_ENTITIES = [
  TenantEntity, ProjectEntity, EnvironmentEntity, WorkspaceEntity, ScopeTypeEntity, ScopeTypeEdgeEntity,
  ScopeEntity, SubjectEntity, RoleEntity, PermissionEntity, RolePermissionEntity, MembershipEntity,
  RoleAssignmentEntity, ScopeOverrideEntity, OwnershipGrantEntity, TagGroupEntity, TagEntity,
  TagAssignmentEntity, TagBindingEntity, ResourceTypeEntity, ResourceTypeEdgeEntity, ResourceEntity,
  ResourceEdgeEntity, ResourceScopeLinkEntity, ResourceCollectionEntity, ResourcePolicyEntity,
  ApiKeyEntity, ChangeLogEntity,
];
