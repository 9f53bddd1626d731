import type { ServiceImpl } from '@connectrpc/connect';
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import type { CreateOwnershipGrantRequest } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { invalid } from '../../common/errors.js';
import { accessReads } from '../../store/access.js';
import { optionalString, requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { preloadScopeChains, requireUsableRole, type ChainCache } from './hierarchy-rules.js';
import { listMany, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';

/**
 * owns(subject, resource, role): all three in the resource's tenant; each triple once; the role
 * usable where the resource lives (defined at its owner scope or an ancestor).
 */
export function ownershipGrants(): CreateSpec<CreateOwnershipGrantRequest, 'ownershipGrant'> {
  const unique = new Uniques(); // (subjectId, resourceId, roleId)
  const chains: ChainCache = new Map();
  return {
    kind: 'ownershipGrant',
    tenantRef: (item) => ['resource', item.resourceId, 'resourceId'],
    async preload(b, items) {
      const resourceIds = distinct(items.map((i) => i.resourceId));
      await b.preload('resource', resourceIds);
      await b.preload('subject', items.map((i) => i.subjectId));
      await b.preload('role', items.map((i) => i.roleId));
      if (resourceIds.length === 0) return;
      await preloadScopeChains(b, chains, resourceIds.map((id) => b.peek('resource', id)?.ownerScopeId as string | undefined));
      for (const g of await accessReads(b.tx).ownershipGrantsOn(resourceIds)) unique.held([g.subjectId, g.resourceId, g.roleId]);
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
      const where: Record<string, string> = {};
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
