import type { ServiceImpl } from '@connectrpc/connect';
import type { EntityManager } from '@mikro-orm/postgresql';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import type { CreateRolePermissionRequest, CreateRoleRequest } from '../../../gen/authz/v1/role_service_pb.js';
import { constraint } from '../../common/errors.js';
import { KINDS, type KindDef, type KindName, type Row } from '../../store/kinds.js';
import type { WriteTx } from '../../store/write.js';
import { optionalString, requireString } from '../../common/validate.js';
import {
  Batch, Uniques, createMany, deleteOne, getOne, listMany, refIn, tenantOfRef, type CreateSpec, type Deps,
} from './kit.js';
import { MAX_DEPTH } from './scope.js';

/** Rows of a kind matching a filter, read inside the request's transaction. */
export async function rowsWhere(em: EntityManager, kind: KindName, where: Record<string, unknown>): Promise<Row[]> {
  return (await em.find((KINDS[kind] as KindDef).entity, where as never, { disableIdentityMap: true })) as Row[];
}

/**
 * Each scope's chain: the scope itself, then its ancestors nearest first. One recursive
 * query for all scopes; capped at the depth limit.
 */
export async function scopeChains(em: EntityManager, scopeIds: Iterable<string>): Promise<Map<string, string[]>> {
  const ids = [...new Set(scopeIds)];
  const out = new Map<string, string[]>();
  if (ids.length === 0) return out;
  const rows = (await em.execute(
    `with recursive chain(start, id, parent_id, depth) as (
       select id, id, parent_id, 0 from scopes where id in (${ids.map(() => '?').join(', ')})
       union all
       select c.start, s.id, s.parent_id, c.depth + 1 from scopes s join chain c on s.id = c.parent_id where c.depth < ?
     ) select start, id, depth from chain order by start, depth`,
    [...ids, MAX_DEPTH],
  )) as { start: string; id: string }[];
  for (const r of rows) {
    const chain = out.get(r.start) ?? [];
    chain.push(r.id);
    out.set(r.start, chain);
  }
  return out;
}

/**
 * Fills `cache` with the chains of the scopes of the rows `ids` of `kind` (e.g. the roles a
 * batch references): two bulk queries, so the per-item checks below need none.
 */
export async function preloadChains(b: Batch, cache: Map<string, string[]>, kind: KindName, ids: (string | undefined)[]) {
  const want = [...new Set(ids.filter((x): x is string => !!x))];
  if (want.length === 0) return;
  const rows = await rowsWhere(b.em, kind, { id: { $in: want } });
  for (const [k, v] of await scopeChains(b.em, rows.map((r) => r.scopeId as string))) cache.set(k, v);
}

/** Whether `scopeId` is `ancestorId` or lies below it (a cache miss costs one query). */
export async function isAtOrBelow(b: Batch, scopeId: string, ancestorId: string, cache: Map<string, string[]>): Promise<boolean> {
  if (scopeId === ancestorId) return true;
  if (!cache.has(scopeId)) for (const [k, v] of await scopeChains(b.em, [scopeId])) cache.set(k, v);
  return (cache.get(scopeId) ?? []).includes(ancestorId);
}

/**
 * `failed_precondition` on `field` unless `role` is usable at `scopeId`: defined there or at an
 * ancestor (a role defined at a scope is usable in its descendants). `where` names the scope.
 */
export async function requireUsableRole(b: Batch, role: Row, scopeId: string, where: string, cache: Map<string, string[]>, field: string): Promise<void> {
  if (await isAtOrBelow(b, scopeId, role.scopeId as string, cache)) return;
  throw constraint(`role ${role.id as string} is defined at scope ${role.scopeId as string}, which is neither ${where} nor an ancestor of it`, field);
}

/** Deletes a role with everything that refers to it, each row through the change log. */
export async function deleteRoleCascade(tx: WriteTx, roleId: string): Promise<void> {
  const ids = async (kind: KindName) => (await rowsWhere(tx.em, kind, { roleId })).map((r) => r.id as string);
  await tx.delete('rolePermission', await ids('rolePermission'));
  await tx.delete('roleAssignment', await ids('roleAssignment'));
  await tx.delete('scopeOverride', await ids('scopeOverride'));
  await tx.delete('tagBinding', await ids('tagBinding'));
  await tx.delete('ownershipGrant', await ids('ownershipGrant'));
  await tx.delete('role', [roleId]);
}

function roles(): CreateSpec<CreateRoleRequest, 'role'> {
  const unique = new Uniques(); // (scopeId, key)
  return {
    kind: 'role',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      const scopeIds = items.map((i) => i.scopeId).filter((x) => x);
      const keys = items.map((i) => i.key).filter((x) => x);
      if (scopeIds.length === 0 || keys.length === 0) return;
      for (const r of await rowsWhere(b.em, 'role', { scopeId: { $in: scopeIds }, key: { $in: keys } })) {
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
function rolePermissions(): CreateSpec<CreateRolePermissionRequest, 'rolePermission'> {
  const chains = new Map<string, string[]>();
  const unique = new Uniques(); // (roleId, permissionId)
  return {
    kind: 'rolePermission',
    tenantRef: (item) => ['role', item.roleId, 'roleId'],
    async preload(b, items) {
      await b.preload('role', items.map((i) => i.roleId));
      await b.preload('permission', items.map((i) => i.permissionId));
      await preloadChains(b, chains, 'role', items.map((i) => i.roleId));
      const roleIds = items.map((i) => i.roleId).filter((x) => x);
      const permissionIds = items.map((i) => i.permissionId).filter((x) => x);
      if (roleIds.length === 0 || permissionIds.length === 0) return;
      const found = await rowsWhere(b.em, 'rolePermission', { roleId: { $in: roleIds }, permissionId: { $in: permissionIds } });
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
      return deleteOne(deps, ctx, 'role', req.id, deleteRoleCascade);
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
