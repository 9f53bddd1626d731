import type { ServiceImpl } from '@connectrpc/connect';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import type { CreateMembershipRequest, CreateRoleAssignmentRequest } from '../../../gen/authz/v1/membership_service_pb.js';
import { invalid } from '../../common/errors.js';
import { deleteMembershipsWithAssignments } from '../../store/access.js';
import { requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { preloadChainsOf, requireUsableRole, type ChainCache } from './hierarchy-rules.js';
import { listMany, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';

export function memberships(): CreateSpec<CreateMembershipRequest, 'membership'> {
  const unique = new Uniques(); // (subjectId, scopeId)
  return {
    kind: 'membership',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('subject', items.map((i) => i.subjectId));
      await b.preload('scope', items.map((i) => i.scopeId));
      const subjectIds = distinct(items.map((i) => i.subjectId));
      const scopeIds = distinct(items.map((i) => i.scopeId));
      if (subjectIds.length === 0 || scopeIds.length === 0) return;
      const found = await b.rows.where('membership', { subjectId: subjectIds, scopeId: scopeIds });
      for (const r of found) unique.held([r.subjectId, r.scopeId], r.id as string);
    },
    async build(b, item, p) {
      const id = b.id('membership', item.id, `${p}id`);
      const subjectId = requireString(item.subjectId, `${p}subjectId`);
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const scope = await b.ref('scope', scopeId, `${p}scopeId`);
      const tenantId = scope.tenantId as string;
      await b.tenant(tenantId, `${p}scopeId`);
      await refIn(b, 'subject', subjectId, `${p}subjectId`, tenantId);
      unique.claim([subjectId, scopeId], `${p}scopeId`, `a membership of subject ${subjectId} in scope ${scopeId}`);
      return { ...b.base(id, tenantId), subjectId, scopeId };
    },
  };
}

/**
 * A role is assignable on a membership when it is defined at the membership's scope or at an
 * ancestor of it (a role defined at a scope is usable in its descendants).
 */
export function roleAssignments(): CreateSpec<CreateRoleAssignmentRequest, 'roleAssignment'> {
  const chains: ChainCache = new Map();
  const unique = new Uniques(); // (membershipId, roleId)
  return {
    kind: 'roleAssignment',
    tenantRef: (item) => ['membership', item.membershipId, 'membershipId'],
    async preload(b, items) {
      await b.preload('membership', items.map((i) => i.membershipId));
      await b.preload('role', items.map((i) => i.roleId));
      await preloadChainsOf(b, chains, 'membership', items.map((i) => i.membershipId));
      const membershipIds = distinct(items.map((i) => i.membershipId));
      const roleIds = distinct(items.map((i) => i.roleId));
      if (membershipIds.length === 0 || roleIds.length === 0) return;
      const found = await b.rows.where('roleAssignment', { membershipId: membershipIds, roleId: roleIds });
      for (const r of found) unique.held([r.membershipId, r.roleId], r.id as string);
    },
    async build(b, item, p) {
      const id = b.id('roleAssignment', item.id, `${p}id`);
      const membershipId = requireString(item.membershipId, `${p}membershipId`);
      const roleId = requireString(item.roleId, `${p}roleId`);
      const membership = await b.ref('membership', membershipId, `${p}membershipId`);
      const tenantId = membership.tenantId as string;
      await b.tenant(tenantId, `${p}membershipId`);
      const role = await refIn(b, 'role', roleId, `${p}roleId`, tenantId);
      await requireUsableRole(b, role, membership.scopeId as string, `the membership's scope ${membership.scopeId as string}`, chains, `${p}roleId`);
      unique.claim([membershipId, roleId], `${p}roleId`, `an assignment of role ${roleId} to membership ${membershipId}`);
      return { ...b.base(id, tenantId), membershipId, roleId };
    },
  };
}

export function membershipService(deps: Deps): ServiceImpl<typeof MembershipService> {
  return {
    async createMembership(req, ctx) {
      return { membership: (await createMany(deps, ctx, memberships(), [req], false))[0] };
    },
    async batchCreateMemberships(req, ctx) {
      return { memberships: await createMany(deps, ctx, memberships(), req.items, true) };
    },
    /** `?scopeId=` or `?subjectId=` (one is required; both narrow each other). */
    async listMemberships(req, ctx) {
      const where: Record<string, string> = {};
      if (req.scopeId) {
        await tenantOfRef(deps, ctx, 'scope', requireString(req.scopeId, 'scopeId'), 'scopeId');
        where.scopeId = req.scopeId;
      }
      if (req.subjectId) {
        await tenantOfRef(deps, ctx, 'subject', requireString(req.subjectId, 'subjectId'), 'subjectId');
        where.subjectId = req.subjectId;
      }
      if (Object.keys(where).length === 0) throw invalid('scopeId', 'scopeId or subjectId is required');
      const { items, nextCursor } = await listMany(deps, 'membership', where, req);
      return { memberships: items, nextCursor };
    },
    async deleteMembership(req, ctx) {
      return deleteOne(deps, ctx, 'membership', req.id, (tx, id) => deleteMembershipsWithAssignments(tx, [id]));
    },
    async createRoleAssignment(req, ctx) {
      return { roleAssignment: (await createMany(deps, ctx, roleAssignments(), [req], false))[0] };
    },
    async batchCreateRoleAssignments(req, ctx) {
      return { roleAssignments: await createMany(deps, ctx, roleAssignments(), req.items, true) };
    },
    async listRoleAssignments(req, ctx) {
      const membershipId = requireString(req.membershipId, 'membershipId');
      await tenantOfRef(deps, ctx, 'membership', membershipId, 'membershipId');
      const { items, nextCursor } = await listMany(deps, 'roleAssignment', { membershipId }, req);
      return { roleAssignments: items, nextCursor };
    },
    async deleteRoleAssignment(req, ctx) {
      return deleteOne(deps, ctx, 'roleAssignment', req.id);
    },
  };
}
