import type { ServiceImpl } from '@connectrpc/connect';
import { PermissionService } from '../../../gen/authz/v1/permission_service_pb.js';
import type { CreatePermissionRequest } from '../../../gen/authz/v1/permission_service_pb.js';
import { invalid, limitExceeded } from '../../common/errors.js';
import { deletePermissionWithDependents } from '../../store/access.js';
import { principalOf } from '../auth/principal.js';
import { MAX_BATCH, optionalString, requireString } from '../../common/validate.js';
import { createMany, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { getOne, listMany, requireTenant, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';

/** `<resourceType>:<action>:<resourcePattern>` (spec, Permission). */
export const permissionKey = (resourceType: string, action: string, resourcePattern: string) =>
  `${resourceType}:${action}:${resourcePattern}`;

/**
 * `resourceType` is a resource type key or `*`. It is not checked against the resource types
 * that exist: permissions match resources by type key at evaluation, and a type may be
 * created after the permissions that name it.
 */
export const permissions: CreateSpec<CreatePermissionRequest, 'permission'> = {
  kind: 'permission',
  tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
  async preload(b, items) {
    await b.preload('scope', items.map((i) => i.scopeId));
  },
  async build(b, item, p) {
    const id = b.id('permission', item.id, `${p}id`);
    const scopeId = requireString(item.scopeId, `${p}scopeId`);
    const action = requireString(item.action, `${p}action`);
    const resourceType = requireString(item.resourceType, `${p}resourceType`);
    const resourcePattern = requireString(item.resourcePattern, `${p}resourcePattern`);
    const key = permissionKey(resourceType, action, resourcePattern);
    if (item.key !== undefined && item.key !== key) {
      throw invalid(`${p}key`, `must be "${key}" (<resourceType>:<action>:<resourcePattern>) when sent; got "${item.key.slice(0, 64)}"`);
    }
    const scope = await b.ref('scope', scopeId, `${p}scopeId`);
    await b.tenant(scope.tenantId as string, `${p}scopeId`);
    return {
      ...b.base(id, scope.tenantId as string), scopeId, action, resourceType, resourcePattern, key,
      name: optionalString(item.name, `${p}name`) ?? '',
      description: optionalString(item.description, `${p}description`) ?? '',
    };
  },
};

/** `?ids=` as a list: comma-separated, blanks ignored, at most 1,000. */
function parseIds(raw: string): string[] {
  const ids = [...new Set(raw.split(',').map((s) => s.trim()).filter((s) => s))];
  if (ids.length > MAX_BATCH) throw limitExceeded('ids', `names ${ids.length} ids; at most ${MAX_BATCH} are allowed`);
  for (const id of ids) requireString(id, 'ids');
  return ids;
}

export function permissionService(deps: Deps): ServiceImpl<typeof PermissionService> {
  return {
    async createPermission(req, ctx) {
      return { permission: (await createMany(deps, ctx, permissions, [req], false))[0] };
    },
    async batchCreatePermissions(req, ctx) {
      return { permissions: await createMany(deps, ctx, permissions, req.items, true) };
    },
    async getPermission(req, ctx) {
      return { permission: await getOne(deps, ctx, 'permission', requireString(req.id, 'id')) };
    },
    /**
     * One of `ids`, `scopeId` or `tenantId` is required; given together they narrow each
     * other. Unknown ids in `ids` are left out of the answer.
     */
    async listPermissions(req, ctx) {
      const where: Record<string, string | string[]> = {};
      if (req.ids) where.id = parseIds(req.ids);
      if (req.scopeId) {
        await tenantOfRef(deps, ctx, 'scope', requireString(req.scopeId, 'scopeId'), 'scopeId');
        where.scopeId = req.scopeId;
      }
      if (req.tenantId) {
        await requireTenant(deps, ctx, requireString(req.tenantId, 'tenantId'), 'tenantId');
        where.tenantId = req.tenantId;
      }
      if (Object.keys(where).length === 0) throw invalid('ids', 'one of ids, scopeId or tenantId is required');
      // Ids alone name no tenant: a key bound to a tenant sees only its own.
      const principal = principalOf(ctx);
      if (principal.kind !== 'platform') where.tenantId ??= principal.tenantId ?? '';
      const { items, nextCursor } = await listMany(deps, 'permission', where, req);
      return { permissions: items, nextCursor };
    },
    async deletePermission(req, ctx) {
      return deleteOne(deps, ctx, 'permission', req.id, deletePermissionWithDependents);
    },
  };
}
