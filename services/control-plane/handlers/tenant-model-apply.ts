/**
 * Writing a model's plan in the apply's transaction: deletes (dependents first), in-place
 * updates, then creates in dependency order through the same create specs as the entity APIs,
 * so every rule and limit of those APIs holds for a model too. A replaced entity is created
 * again with its id; tag groups are created or unlocked before their tags and locked after.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DomainError } from '../../common/errors.js';
import { newId } from '../../common/ids.js';
import { KINDS, type KindDef, type Row } from '../../store/kinds.js';
import { MODEL_STORE_KINDS, type TenantModelRows } from '../../store/tenant-model.js';
import type { WriteTx } from '../../store/write.js';
import type { JsonObject } from '../../engine/model.js';
import { CreateScopeRequestSchema, CreateScopeTypeRequestSchema } from '../../../gen/authz/v1/scope_service_pb.js';
import { CreateResourceTypeEdgeRequestSchema, CreateResourceTypeRequestSchema } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { CreatePermissionRequestSchema } from '../../../gen/authz/v1/permission_service_pb.js';
import { CreateRolePermissionRequestSchema, CreateRoleRequestSchema } from '../../../gen/authz/v1/role_service_pb.js';
import { CreateScopeOverrideRequestSchema } from '../../../gen/authz/v1/scope_override_service_pb.js';
import {
  CreateTagAssignmentRequestSchema, CreateTagBindingRequestSchema, CreateTagGroupRequestSchema, CreateTagRequestSchema,
} from '../../../gen/authz/v1/tag_service_pb.js';
import { CreateSubjectRequestSchema } from '../../../gen/authz/v1/subject_service_pb.js';
import { CreateMembershipRequestSchema, CreateRoleAssignmentRequestSchema } from '../../../gen/authz/v1/membership_service_pb.js';
import {
  CreateResourceEdgeRequestSchema, CreateResourceRequestSchema, CreateResourceScopeLinkRequestSchema,
} from '../../../gen/authz/v1/resource_service_pb.js';
import { CreateOwnershipGrantRequestSchema } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { CreateResourceCollectionRequestSchema, CreateResourcePolicyRequestSchema } from '../../../gen/authz/v1/policy_service_pb.js';
import { ENTITY_KINDS, ROOT, parentPath, qualified, splitResource, type Entity, type EntityKind } from '../../model/entities.js';
import { policyIdFor, type StateModel } from '../../model/from-state.js';
import type { ModelChange, ModelPlan } from '../../model/plan.js';
import { formatPath } from '../../model/parse.js';
import type { Principal } from '../auth/principal.js';
import { createInTx, type CreateSpec } from './batch-create.js';
import { memberships, roleAssignments } from './membership.js';
import { ownershipGrants } from './ownership-grant.js';
import { permissions } from './permission.js';
import { collections, policies } from './policy.js';
import { resourceTypeEdges, resourceTypes } from './resource-type.js';
import { resourceEdges, resources, scopeLinks } from './resource.js';
import { rolePermissions, roles } from './role.js';
import { scopeOverrides } from './scope-override.js';
import { scopeTypes, scopes } from './scope.js';
import { subjects } from './subject.js';
import { tagAssignments, tagBindings, tagGroups, tags } from './tag.js';

/** The store kind of each model kind. */
const STORE_KIND = { scopeType: 'scopeType', ...MODEL_STORE_KINDS } as const;

/** The create spec of each kind (a fresh one per use: some hold per-request state). */
const SPECS: Record<EntityKind, () => CreateSpec<never, never>> = {
  scopeType: scopeTypes, scope: () => scopes, resourceType: resourceTypes, resourceTypeEdge: resourceTypeEdges,
  permission: () => permissions, role: roles, rolePermission: rolePermissions, scopeOverride: () => scopeOverrides,
  tagGroup: tagGroups, tag: tags, tagBinding: tagBindings, subject: () => subjects, membership: memberships,
  roleAssignment: roleAssignments, resource: resources, resourceEdge: resourceEdges, scopeLink: scopeLinks,
  ownershipGrant: ownershipGrants, tagAssignment: tagAssignments, collection: () => collections, policy: () => policies,
} as unknown as Record<EntityKind, () => CreateSpec<never, never>>;

/** What apply works from: the plan and the tenant it was made against. */
export interface PlannedApply {
  tenantId: string;
  plan: ModelPlan;
  state: StateModel;
  rows: TenantModelRows;
}

const parts = (e: Entity) => JSON.parse(e.key) as string[];
const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const object = (v: unknown) => (v === undefined || v === null ? undefined : (v as JsonObject));
const writesOf = (plan: ModelPlan, kind: EntityKind, actions: string[]) => plan.changes.filter((c) => c.kind === kind && actions.includes(c.action));

/** The id each entity the plan names has or gets: current ids, then new ids for creates. */
export function assignIds(p: PlannedApply): Map<string, string> {
  const ids = new Map(p.state.ids);
  ids.set(qualified('scope', JSON.stringify([ROOT])), p.rows.rootScopeId);
  for (const t of p.rows.scopeTypes) ids.set(qualified('scopeType', JSON.stringify([t.name])), t.id);
  for (const c of p.plan.changes) {
    if (c.action !== 'create') continue;
    const ns = (KINDS[STORE_KIND[c.kind]] as KindDef).namespace;
    ids.set(qualified(c.kind, c.key), c.kind === 'policy' ? policyIdFor(p.tenantId, parts(c.entity!)[0])! : newId(ns));
  }
  return ids;
}

/** Writes the plan in `tx` (which has entered the tenant). */
export async function writePlan(tx: WriteTx, principal: Principal, p: PlannedApply): Promise<void> {
  const ids = assignIds(p);
  const id = (kind: EntityKind, key: string) => {
    const found = ids.get(qualified(kind, key));
    if (found === undefined) throw new Error(`model apply: no id for ${kind} ${key}`);
    return found;
  };
  const rowsById = new Map<string, Row>();
  for (const list of Object.values(p.rows.rows)) for (const r of list) rowsById.set(r.id as string, r);

  for (const kind of [...ENTITY_KINDS].reverse()) {
    const gone = writesOf(p.plan, kind, ['delete', 'replace']).map((c) => id(kind, c.key));
    await tx.delete(STORE_KIND[kind], gone);
  }
  // Tag groups stay unlocked until the creates are done: those the file locks, and those locked
  // now whose tags or assignments come back with a replace.
  const locks = new Set<string>();
  const update = async (kind: EntityKind, rowId: string, patch: Row) => {
    const row = rowsById.get(rowId)!;
    await tx.update(STORE_KIND[kind], row, patch);
    rowsById.set(rowId, { ...row, ...patch });
  };
  for (const c of p.plan.changes.filter((x) => x.action === 'update')) {
    const rowId = id(c.kind, c.key);
    const patch = patchOf(c);
    if (c.kind === 'tagGroup' && patch.isLocked === true) {
      delete patch.isLocked;
      locks.add(rowId);
    }
    if (Object.keys(patch).length > 0) await update(c.kind, rowId, patch);
  }
  for (const c of p.plan.changes.filter((x) => x.action === 'replace' && (x.kind === 'tag' || x.kind === 'tagAssignment'))) {
    const groupId = id('tagGroup', JSON.stringify([parts(c.entity!)[0]]));
    if (rowsById.get(groupId)?.isLocked === true && !locks.has(groupId)) {
      await update('tagGroup', groupId, { isLocked: false });
      locks.add(groupId);
    }
  }
  const created = new Map<string, Row>();
  for (const kind of ENTITY_KINDS) {
    const changes = writesOf(p.plan, kind, ['create', 'replace']);
    if (changes.length === 0) continue;
    const requests = changes.map((c) => requestOf(kind, c.entity!, id(kind, c.key), p.tenantId, id));
    const at = (i: number) => `${formatPath(changes[i].entity!.path)}.`;
    try {
      for (const row of await createInTx(tx, principal, SPECS[kind](), requests as never[], at)) created.set(row.id as string, row);
    } catch (err) {
      throw located(err, changes, at);
    }
    if (kind === 'tagGroup') {
      for (const c of changes) if (c.entity!.fields.locked === true) locks.add(id(kind, c.key));
    }
  }
  for (const groupId of locks) {
    const row = created.get(groupId) ?? rowsById.get(groupId)!;
    await tx.update('tagGroup', row, { isLocked: true });
  }
}

/** A create's refusal, with the entity it is about named (the field path alone names its place in the file). */
function located(err: unknown, changes: ModelChange[], at: (i: number) => string): unknown {
  if (!(err instanceof DomainError) || !err.field) return err;
  const i = changes.findIndex((_, j) => err.field!.startsWith(at(j)));
  if (i < 0) return err;
  const c = changes[i];
  const why = c.action === 'replace' && c.reason ? ` (${c.reason})` : '';
  return new DomainError(err.kind, `${c.label}${why}: ${err.message}`, err.field);
}

/** The fields an update writes (what the entity APIs' updates take). */
function patchOf(c: ModelChange): Row {
  const f = c.entity!.fields;
  const patch: Row = {};
  for (const name of c.fields) {
    switch (`${c.kind}.${name}`) {
      case 'resourceType.name': patch.name = f.name; break;
      case 'tagGroup.name': patch.name = f.name; break;
      case 'tagGroup.description': patch.description = f.description ?? ''; break;
      case 'tagGroup.maxAppliedPerTarget': patch.maxAppliedPerTarget = f.maxAppliedPerTarget; break;
      case 'tagGroup.locked': patch.isLocked = f.locked; break;
      case 'subject.metadata': patch.metadata = object(f.metadata) ?? null; break;
      case 'resource.displayName': patch.displayName = text(f.displayName) ?? null; break;
      case 'resource.attributes': patch.attributes = object(f.attributes) ?? null; break;
      case 'scopeLink.metadata': patch.metadata = object(f.metadata) ?? null; break;
      default: throw new Error(`model apply: ${c.kind}.${name} is not updated in place`);
    }
  }
  return patch;
}

/** The create request of an entity, its references as server ids. */
function requestOf(kind: EntityKind, e: Entity, entityId: string, tenantId: string, id: (kind: EntityKind, key: string) => string): unknown {
  const k = parts(e);
  const f = e.fields;
  const scope = (path: unknown) => id('scope', JSON.stringify([path as string]));
  const type = (key: string) => id('resourceType', JSON.stringify([key]));
  const resource = (ref: string) => {
    const r = splitResource(ref);
    return id('resource', JSON.stringify([r.type, r.externalId]));
  };
  switch (kind) {
    case 'scopeType':
      return create(CreateScopeTypeRequestSchema, { id: entityId, name: k[0], description: text(f.description) ?? '' });
    case 'scope': {
      const path = k[0];
      return create(CreateScopeRequestSchema, { id: entityId, name: path.slice(path.lastIndexOf('/') + 1), typeId: id('scopeType', JSON.stringify([f.type])), parentId: scope(parentPath(path)) });
    }
    case 'resourceType':
      return create(CreateResourceTypeRequestSchema, { id: entityId, key: k[0], name: f.name as string, scopeId: scope(f.scope) });
    case 'resourceTypeEdge':
      return create(CreateResourceTypeEdgeRequestSchema, { id: entityId, parentTypeId: type(k[0]), childTypeId: type(k[1]) });
    case 'permission': {
      const [resourceType, action] = k[1].split(':');
      return create(CreatePermissionRequestSchema, {
        id: entityId, scopeId: scope(k[0]), resourceType, action, resourcePattern: k[1].slice(resourceType.length + action.length + 2),
        name: text(f.name) ?? '', description: text(f.description) ?? '',
      });
    }
    case 'role':
      return create(CreateRoleRequestSchema, { id: entityId, scopeId: scope(k[0]), key: k[1], name: f.name as string, description: text(f.description) ?? '' });
    case 'rolePermission':
      return create(CreateRolePermissionRequestSchema, { id: entityId, roleId: id('role', JSON.stringify([k[0], k[1]])), permissionId: id('permission', f.permission as string) });
    case 'scopeOverride':
      return create(CreateScopeOverrideRequestSchema, {
        id: entityId, scopeId: scope(k[0]), roleId: id('role', k[1]), mode: k[2], permissionIds: (f.permissions as string[]).map((p) => id('permission', p)),
      });
    case 'tagGroup':
      return create(CreateTagGroupRequestSchema, {
        id: entityId, key: k[0], scopeId: scope(f.scope), name: f.name as string, description: text(f.description) ?? '',
        maxAppliedPerTarget: f.maxAppliedPerTarget as number, isLocked: false,
      });
    case 'tag':
      return create(CreateTagRequestSchema, { id: entityId, tagGroupId: id('tagGroup', JSON.stringify([k[0]])), identifier: k[1], label: text(f.label) ?? '', scopeId: scope(f.scope) });
    case 'tagBinding':
      return create(CreateTagBindingRequestSchema, { id: entityId, tagId: id('tag', JSON.stringify([k[0], k[1]])), roleId: id('role', k[2]), scopeId: scope(k[3]) });
    case 'subject':
      return create(CreateSubjectRequestSchema, { id: entityId, tenantId, externalId: k[0], type: f.type as string, metadata: object(f.metadata) });
    case 'membership':
      return create(CreateMembershipRequestSchema, { id: entityId, subjectId: id('subject', JSON.stringify([k[0]])), scopeId: scope(k[1]) });
    case 'roleAssignment':
      return create(CreateRoleAssignmentRequestSchema, { id: entityId, membershipId: id('membership', JSON.stringify([k[0], k[1]])), roleId: id('role', k[2]) });
    case 'resource':
      return create(CreateResourceRequestSchema, {
        id: entityId, resourceTypeId: type(k[0]), externalResourceId: k[1], ownerScopeId: scope(f.scope), displayName: text(f.displayName), attributes: object(f.attributes),
      });
    case 'resourceEdge':
      return create(CreateResourceEdgeRequestSchema, {
        id: entityId, parentResourceId: id('resource', f.parent as string), childResourceId: id('resource', e.key),
        cascade: f.cascade as string, relationshipType: text(f.relationshipType),
      });
    case 'scopeLink':
      return create(CreateResourceScopeLinkRequestSchema, { id: entityId, resourceId: resource(k[0]), scopeId: scope(k[1]), linkType: k[2], metadata: object(f.metadata) });
    case 'ownershipGrant':
      return create(CreateOwnershipGrantRequestSchema, { id: entityId, subjectId: id('subject', JSON.stringify([k[0]])), resourceId: resource(k[1]), roleId: id('role', k[2]) });
    case 'tagAssignment': {
      const [group, identifier, targetType, target] = k;
      const targetId = targetType === 'resource' ? resource(target) : targetType === 'subject' ? id('subject', JSON.stringify([target])) : scope(target);
      return create(CreateTagAssignmentRequestSchema, { id: entityId, tagId: id('tag', JSON.stringify([group, identifier])), targetType, targetId });
    }
    case 'collection':
      return create(CreateResourceCollectionRequestSchema, {
        id: entityId, name: k[0], scopeId: scope(f.scope), resourceTypeId: type(f.resourceType as string), description: text(f.description) ?? '', match: object(f.match) ?? {},
      });
    case 'policy': {
      const target = f.target as { resource?: string; collection?: string };
      const time = (t: unknown) => (typeof t === 'string' ? timestampFromDate(new Date(t)) : undefined);
      return create(CreateResourcePolicyRequestSchema, {
        id: entityId, scopeId: scope(f.scope),
        target: target.resource !== undefined
          ? { kind: 'resource', resourceId: resource(target.resource) }
          : { kind: 'collection', collectionId: id('collection', JSON.stringify([target.collection])) },
        actions: f.actions as string[], effect: f.effect as string, priority: f.priority as number,
        subjectCondition: object(f.subjectCondition), contextCondition: object(f.contextCondition), validFrom: time(f.validFrom), validUntil: time(f.validUntil),
      });
    }
  }
}
