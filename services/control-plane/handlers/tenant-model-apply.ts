/**
 * Writing a model's plan in the apply's transaction: deletes (dependents first), in-place
 * updates, then creates in dependency order through the same create specs as the entity APIs,
 * so every rule and limit of those APIs holds for a model too. A replaced entity is created
 * again with its id; tag groups are created or unlocked before their tags and locked after.
 */
import { create, type DescMessage } from '@bufbuild/protobuf';
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
import { ENTITY_KINDS, ROOT, qualified, type Entity, type EntityKind } from '../../model/entities.js';
import { apiFields, idsOf, type IdOf } from '../../model/rows.js';
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
  const id = idsOf(assignIds(p));
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

/** The create request message of each kind. */
const REQUESTS: Record<EntityKind, DescMessage> = {
  scopeType: CreateScopeTypeRequestSchema, scope: CreateScopeRequestSchema, resourceType: CreateResourceTypeRequestSchema,
  resourceTypeEdge: CreateResourceTypeEdgeRequestSchema, permission: CreatePermissionRequestSchema, role: CreateRoleRequestSchema,
  rolePermission: CreateRolePermissionRequestSchema, scopeOverride: CreateScopeOverrideRequestSchema, tagGroup: CreateTagGroupRequestSchema,
  tag: CreateTagRequestSchema, tagBinding: CreateTagBindingRequestSchema, subject: CreateSubjectRequestSchema,
  membership: CreateMembershipRequestSchema, roleAssignment: CreateRoleAssignmentRequestSchema, resource: CreateResourceRequestSchema,
  resourceEdge: CreateResourceEdgeRequestSchema, scopeLink: CreateResourceScopeLinkRequestSchema, ownershipGrant: CreateOwnershipGrantRequestSchema,
  tagAssignment: CreateTagAssignmentRequestSchema, collection: CreateResourceCollectionRequestSchema, policy: CreateResourcePolicyRequestSchema,
};

/** The create request of an entity, its references as server ids. */
function requestOf(kind: EntityKind, e: Entity, entityId: string, tenantId: string, id: IdOf): unknown {
  const fields = apiFields(kind, e, entityId, tenantId, id);
  for (const t of ['validFrom', 'validUntil']) {
    if (typeof fields[t] === 'string') fields[t] = timestampFromDate(new Date(fields[t] as string));
  }
  return create(REQUESTS[kind], fields as never);
}
