import type { EntitySchema } from '@mikro-orm/core';
import { fromJson, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import type { Namespace } from '../common/ids.js';
import * as S from './schema.js';
import { TenantSchema, ProjectSchema, EnvironmentSchema, WorkspaceSchema } from '../../gen/authz/v1/tenancy_pb.js';
import { ScopeSchema, ScopeTypeSchema, ScopeTypeEdgeSchema } from '../../gen/authz/v1/scope_pb.js';
import { SubjectSchema } from '../../gen/authz/v1/subject_pb.js';
import {
  RoleSchema, PermissionSchema, RolePermissionSchema, MembershipSchema, RoleAssignmentSchema,
  ScopeOverrideSchema, OwnershipGrantSchema,
} from '../../gen/authz/v1/access_pb.js';
import { TagGroupSchema, TagSchema, TagAssignmentSchema, TagBindingSchema } from '../../gen/authz/v1/tag_pb.js';
import {
  ResourceTypeSchema, ResourceTypeEdgeSchema, ResourceSchema, ResourceEdgeSchema, ResourceScopeLinkSchema,
} from '../../gen/authz/v1/resource_pb.js';
import { ResourceCollectionSchema, ResourcePolicySchema } from '../../gen/authz/v1/policy_pb.js';
import { ApiKeySchema } from '../../gen/authz/v1/api_key_pb.js';

/** A stored row: proto field names, Date for timestamps, plain JSON for json columns. */
export type Row = Record<string, unknown>;

export interface KindDef<M extends DescMessage = DescMessage> {
  /** The change-log `kind` and the engine's name for the entity. */
  kind: string;
  /** What error messages call it. */
  label: string;
  namespace: Namespace;
  entity: EntitySchema<Row>;
  message: M;
  /** Whether rows carry a (non-null) tenant and reach the tenant's change log. */
  tenantOwned: boolean;
}

function def<M extends DescMessage>(kind: string, label: string, namespace: Namespace, entity: EntitySchema<Row>, message: M, tenantOwned = true): KindDef<M> {
  return { kind, label, namespace, entity, message, tenantOwned };
}

export const KINDS = {
  tenant: def('tenant', 'tenant', 'tenant', S.TenantEntity, TenantSchema, false),
  project: def('project', 'project', 'project', S.ProjectEntity, ProjectSchema),
  environment: def('environment', 'environment', 'environment', S.EnvironmentEntity, EnvironmentSchema),
  workspace: def('workspace', 'workspace', 'workspace', S.WorkspaceEntity, WorkspaceSchema),
  scopeType: def('scope_type', 'scope type', 'scope_type', S.ScopeTypeEntity, ScopeTypeSchema, false),
  scopeTypeEdge: def('scope_type_edge', 'scope type edge', 'scope_type_edge', S.ScopeTypeEdgeEntity, ScopeTypeEdgeSchema, false),
  scope: def('scope', 'scope', 'scope', S.ScopeEntity, ScopeSchema),
  subject: def('subject', 'subject', 'subject', S.SubjectEntity, SubjectSchema),
  role: def('role', 'role', 'role', S.RoleEntity, RoleSchema),
  permission: def('permission', 'permission', 'permission', S.PermissionEntity, PermissionSchema),
  rolePermission: def('role_permission', 'role permission', 'role_permission', S.RolePermissionEntity, RolePermissionSchema),
  membership: def('membership', 'membership', 'membership', S.MembershipEntity, MembershipSchema),
  roleAssignment: def('role_assignment', 'role assignment', 'role_assignment', S.RoleAssignmentEntity, RoleAssignmentSchema),
  scopeOverride: def('scope_override', 'scope override', 'scope_override', S.ScopeOverrideEntity, ScopeOverrideSchema),
  ownershipGrant: def('ownership_grant', 'ownership grant', 'ownership_grant', S.OwnershipGrantEntity, OwnershipGrantSchema),
  tagGroup: def('tag_group', 'tag group', 'tag_group', S.TagGroupEntity, TagGroupSchema),
  tag: def('tag', 'tag', 'tag', S.TagEntity, TagSchema),
  tagAssignment: def('tag_assignment', 'tag assignment', 'tag_assignment', S.TagAssignmentEntity, TagAssignmentSchema),
  tagBinding: def('tag_binding', 'tag binding', 'tag_binding', S.TagBindingEntity, TagBindingSchema),
  resourceType: def('resource_type', 'resource type', 'resource_type', S.ResourceTypeEntity, ResourceTypeSchema),
  resourceTypeEdge: def('resource_type_edge', 'resource type edge', 'resource_type_edge', S.ResourceTypeEdgeEntity, ResourceTypeEdgeSchema),
  resource: def('resource', 'resource', 'resource', S.ResourceEntity, ResourceSchema),
  resourceEdge: def('resource_edge', 'resource edge', 'resource_edge', S.ResourceEdgeEntity, ResourceEdgeSchema),
  resourceScopeLink: def('resource_scope_link', 'resource scope link', 'rsl', S.ResourceScopeLinkEntity, ResourceScopeLinkSchema),
  collection: def('collection', 'collection', 'collection', S.ResourceCollectionEntity, ResourceCollectionSchema),
  policy: def('policy', 'policy', 'policy', S.ResourcePolicyEntity, ResourcePolicySchema),
  apiKey: def('api_key', 'API key', 'apk', S.ApiKeyEntity, ApiKeySchema, false),
} as const;

export type KindName = keyof typeof KINDS;
export type MessageOf<K extends KindName> = MessageShape<(typeof KINDS)[K]['message']>;

/** The row in proto JSON form (what the change log and the Watch stream carry). */
export function rowToJson(kind: KindDef, row: Row): JsonObject {
  const out: JsonObject = {};
  for (const f of kind.message.fields) {
    const v = row[f.localName];
    if (v === null || v === undefined) continue;
    out[f.jsonName] = v instanceof Date ? v.toISOString() : (v as JsonValue);
  }
  // Resources answer with the owner scope under both names (spec: get/list carry `scopeId`).
  if (kind.kind === 'resource') out.scopeId = out.ownerScopeId ?? '';
  return out;
}

/** The row as its generated message. */
export function rowToMessage<K extends KindName>(kind: K, row: Row): MessageOf<K> {
  const d = KINDS[kind] as KindDef;
  return fromJson(d.message, rowToJson(d, row), { ignoreUnknownFields: true }) as MessageOf<K>;
}

/** The message in the change log's JSON form, every field present. */
export function messageToChangeData(kind: KindDef, row: Row): JsonObject {
  return toJson(kind.message, fromJson(kind.message, rowToJson(kind, row), { ignoreUnknownFields: true }), {
    alwaysEmitImplicit: true,
  }) as JsonObject;
}
