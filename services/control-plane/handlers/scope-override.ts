import type { ServiceImpl } from '@connectrpc/connect';
import { ScopeOverrideService } from '../../../gen/authz/v1/scope_override_service_pb.js';
import type { CreateScopeOverrideRequest } from '../../../gen/authz/v1/scope_override_service_pb.js';
import { invalid } from '../../common/errors.js';
import { OVERRIDE_MODES as MODES } from '../../common/vocabulary.js';
import { oneOf, requireString } from '../../common/validate.js';
import { createMany, enterScope, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { listMany, tenantOfRef } from './reads.js';
import { deleteOne } from './writes.js';


/** `block` stops a role flowing down past the scope; `add`/`remove` change its permissions there and below. */
export const scopeOverrides: CreateSpec<CreateScopeOverrideRequest, 'scopeOverride'> = {
  kind: 'scopeOverride',
  tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
  async preload(b, items) {
    await b.preload('scope', items.map((i) => i.scopeId));
    await b.preload('role', items.map((i) => i.roleId));
    await b.preload('permission', items.flatMap((i) => i.permissionIds));
  },
  async build(b, item, p) {
    const id = b.id('scopeOverride', item.id, `${p}id`);
    const scopeId = requireString(item.scopeId, `${p}scopeId`);
    const roleId = requireString(item.roleId, `${p}roleId`);
    const mode = oneOf(item.mode, MODES, `${p}mode`);
    if (mode === 'block' && item.permissionIds.length > 0) throw invalid(`${p}permissionIds`, 'must be empty for mode block');
    if (mode !== 'block' && item.permissionIds.length === 0) throw invalid(`${p}permissionIds`, `is required for mode ${mode}`);
    const permissionIds = item.permissionIds.map((x, i) => requireString(x, `${p}permissionIds[${i}]`));
    const listed = new Set<string>();
    permissionIds.forEach((x, i) => {
      if (listed.has(x)) throw invalid(`${p}permissionIds[${i}]`, `permission ${x} is listed twice`);
      listed.add(x);
    });
    const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
    await refIn(b, 'role', roleId, `${p}roleId`, tenantId);
    for (let i = 0; i < permissionIds.length; i++) await refIn(b, 'permission', permissionIds[i], `${p}permissionIds[${i}]`, tenantId);
    return { ...b.base(id, tenantId), scopeId, roleId, mode, permissionIds };
  },
};

export function scopeOverrideService(deps: Deps): ServiceImpl<typeof ScopeOverrideService> {
  return {
    async createScopeOverride(req, ctx) {
      return { scopeOverride: (await createMany(deps, ctx, scopeOverrides, [req], false))[0] };
    },
    async batchCreateScopeOverrides(req, ctx) {
      return { scopeOverrides: await createMany(deps, ctx, scopeOverrides, req.items, true) };
    },
    async listScopeOverrides(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'scopeOverride', { scopeId }, req);
      return { scopeOverrides: items, nextCursor };
    },
    async deleteScopeOverride(req, ctx) {
      return deleteOne(deps, ctx, 'scopeOverride', req.id);
    },
  };
}
