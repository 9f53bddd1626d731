import type { ServiceImpl } from '@connectrpc/connect';
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import type { CreateOwnershipGrantRequest } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { invalid } from '../../common/errors.js';
import type { Row } from '../../store/kinds.js';
import { optionalString, requireString } from '../../common/validate.js';
import { Uniques, createMany, deleteOne, listMany, tenantOfRef, type CreateSpec, type Deps, distinct, refIn } from './kit.js';
import { query } from '../../store/read.js';
import { requireUsableRole, scopeChains } from './role.js';

/**
 * owns(subject, resource, role): all three in the resource's tenant; each triple once; the role
 * usable where the resource lives (defined at its owner scope or an ancestor).
 */
function ownershipGrants(): CreateSpec<CreateOwnershipGrantRequest, 'ownershipGrant'> {
  const unique = new Uniques(); // (subjectId, resourceId, roleId)
  const chains = new Map<string, string[]>();
  return {
    kind: 'ownershipGrant',
    tenantRef: (item) => ['resource', item.resourceId, 'resourceId'],
    async preload(b, items) {
      const resourceIds = distinct(items.map((i) => i.resourceId));
      await b.preload('resource', resourceIds);
      await b.preload('subject', items.map((i) => i.subjectId));
      await b.preload('role', items.map((i) => i.roleId));
      if (resourceIds.length === 0) return;
      const owners = distinct(resourceIds.map((id) => b.peek('resource', id)?.ownerScopeId as string | undefined));
      for (const [k, v] of await scopeChains(b.em, owners)) chains.set(k, v);
      const rows = await query<{ s: string; r: string; o: string }>(
        b.em, 'select subject_id as s, resource_id as r, role_id as o from ownership_grants where resource_id in (?)', [resourceIds],
      );
      for (const r of rows) unique.held([r.s, r.r, r.o]);
    },
    async build(b, item, p) {
      const id = b.id('ownershipGrant', item.id, `${p}id`);
      const subjectId = requireString(item.subjectId, `${p}subjectId`);
      const resourceId = requireString(item.resourceId, `${p}resourceId`);
      const roleId = requireString(item.roleId, `${p}roleId`);
      const resource = await b.ref('resource', resourceId, `${p}resourceId`);
      const tenantId = resource.tenantId as string;
      await b.tenant(tenantId, `${p}resourceId`);
      await refIn(b, 'subject', subjectId, `${p}subjectId`, tenantId);
      const role = await refIn(b, 'role', roleId, `${p}roleId`, tenantId);
      const owner = resource.ownerScopeId as string;
      await requireUsableRole(b, role, owner, `the resource's owner scope ${owner}`, chains, `${p}roleId`);
      unique.claim([subjectId, resourceId, roleId], `${p}roleId`, `an ownership grant of resource ${resourceId} to subject ${subjectId} with role ${roleId}`);
      return { ...b.base(id, tenantId), subjectId, resourceId, roleId };
    },
  };
}

export function ownershipGrantService(deps: Deps): ServiceImpl<typeof OwnershipGrantService> {
  return {
    async createOwnershipGrant(req, ctx) {
      return { ownershipGrant: (await createMany(deps, ctx, ownershipGrants(), [req], false))[0] };
    },
    async batchCreateOwnershipGrants(req, ctx) {
      return { ownershipGrants: await createMany(deps, ctx, ownershipGrants(), req.items, true) };
    },
    async listOwnershipGrants(req, ctx) {
      const resourceId = optionalString(req.resourceId, 'resourceId');
      const subjectId = optionalString(req.subjectId, 'subjectId');
      if (!resourceId && !subjectId) throw invalid('resourceId', 'is required (or subjectId)');
      const where: Row = {};
      if (resourceId) {
        await tenantOfRef(deps, ctx, 'resource', resourceId, 'resourceId');
        where.resourceId = resourceId;
      }
      if (subjectId) {
        await tenantOfRef(deps, ctx, 'subject', subjectId, 'subjectId');
        where.subjectId = subjectId;
      }
      const { items, nextCursor } = await listMany(deps, 'ownershipGrant', where, req);
      return { ownershipGrants: items, nextCursor };
    },
    async deleteOwnershipGrant(req, ctx) {
      return deleteOne(deps, ctx, 'ownershipGrant', req.id);
    },
  };
}
