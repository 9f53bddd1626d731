import type { ServiceImpl } from '@connectrpc/connect';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import type { CreateRolePermissionRequest, CreateRoleRequest } from '../../../gen/authz/v1/role_service_pb.js';
import { constraint } from '../../common/errors.js';
import { deleteRoleWithDependents } from '../../store/access.js';
import { optionalString, requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { isAtOrBelow, preloadChainsOf, type ChainCache } from './hierarchy-rules.js';
import { getOne, listMany, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';

export function roles(): CreateSpec<CreateRoleRequest, 'role'> {
  const unique = new Uniques(); // (scopeId, key)
  return {
    kind: 'role',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      const scopeIds = distinct(items.map((i) => i.scopeId));
      const keys = distinct(items.map((i) => i.key));
      if (scopeIds.length === 0 || keys.length === 0) return;
      for (const r of await b.rows.where('role', { scopeId: scopeIds, key: keys })) {
        unique.held([r.scopeId, r.key], r.id as string);
      }
    },
    async build(b, item, p) {
      const id = b.id('role', item.id, `${p}id`);
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const key = requireString(item.key, `${p}key`);
      const scope = await b.ref('scope', scopeId, `${p}scopeId`);
      await b.tenant(scope.tenantId as string, `${p}scopeId`);
      unique.claim([scopeId, key], `${p}key`, `a role with key "${key}" at scope ${scopeId}`);
      return {
        ...b.base(id, scope.tenantId as string), scopeId, key,
        name: optionalString(item.name, `${p}name`) ?? key,
        description: optionalString(item.description, `${p}description`) ?? '',
      };
    },
  };
}

/**
 * A role may be granted a permission of its own tenant defined at the role's scope or at an
 * ancestor of it: a permission defined at a scope is visible in that scope's subtree (as
 * roles and resource types are), so a role never grants a permission its scope cannot see.
 */
export function rolePermissions(): CreateSpec<CreateRolePermissionRequest, 'rolePermission'> {
  const chains: ChainCache = new Map();
  const unique = new Uniques(); // (roleId, permissionId)
  return {
    kind: 'rolePermission',
    tenantRef: (item) => ['role', item.roleId, 'roleId'],
    async preload(b, items) {
      await b.preload('role', items.map((i) => i.roleId));
      await b.preload('permission', items.map((i) => i.permissionId));
      await preloadChainsOf(b, chains, 'role', items.map((i) => i.roleId));
      const roleIds = distinct(items.map((i) => i.roleId));
      const permissionIds = distinct(items.map((i) => i.permissionId));
      if (roleIds.length === 0 || permissionIds.length === 0) return;
      const found = await b.rows.where('rolePermission', { roleId: roleIds, permissionId: permissionIds });
      for (const r of found) unique.held([r.roleId, r.permissionId], r.id as string);
    },
    async build(b, item, p) {
      const id = b.id('rolePermission', item.id, `${p}id`);
      const roleId = requireString(item.roleId, `${p}roleId`);
      const permissionId = requireString(item.permissionId, `${p}permissionId`);
      const role = await b.ref('role', roleId, `${p}roleId`);
      await b.tenant(role.tenantId as string, `${p}roleId`);
      const permission = await refIn(b, 'permission', permissionId, `${p}permissionId`, role.tenantId as string);
      if (!(await isAtOrBelow(b, role.scopeId as string, permission.scopeId as string, chains))) {
        throw constraint(
          `permission ${permissionId} is defined at scope ${permission.scopeId as string}, which is neither role ${roleId}'s scope ${role.scopeId as string} nor an ancestor of it`,
          `${p}permissionId`,
        );
      }
      unique.claim([roleId, permissionId], `${p}permissionId`, `a grant of permission ${permissionId} to role ${roleId}`);
      return { ...b.base(id, role.tenantId as string), roleId, permissionId };
    },
  };
}

export function roleService(deps: Deps): ServiceImpl<typeof RoleService> {
  return {
    async createRole(req, ctx) {
      return { role: (await createMany(deps, ctx, roles(), [req], false))[0] };
    },
    async batchCreateRoles(req, ctx) {
      return { roles: await createMany(deps, ctx, roles(), req.items, true) };
    },
    async getRole(req, ctx) {
      return { role: await getOne(deps, ctx, 'role', requireString(req.id, 'id')) };
    },
    async listRoles(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'role', { scopeId }, req);
      return { roles: items, nextCursor };
    },
    async deleteRole(req, ctx) {
      return deleteOne(deps, ctx, 'role', req.id, deleteRoleWithDependents);
    },
    async createRolePermission(req, ctx) {
      return { rolePermission: (await createMany(deps, ctx, rolePermissions(), [req], false))[0] };
    },
    async batchCreateRolePermissions(req, ctx) {
      return { rolePermissions: await createMany(deps, ctx, rolePermissions(), req.items, true) };
    },
    async listRolePermissions(req, ctx) {
      const roleId = requireString(req.roleId, 'roleId');
      await tenantOfRef(deps, ctx, 'role', roleId, 'roleId');
      const { items, nextCursor } = await listMany(deps, 'rolePermission', { roleId }, req);
      return { rolePermissions: items, nextCursor };
    },
    async deleteRolePermission(req, ctx) {
      return deleteOne(deps, ctx, 'rolePermission', req.id);
    },
  };
}
