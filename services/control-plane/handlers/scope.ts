import type { ServiceImpl } from '@connectrpc/connect';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import type { CreateScopeRequest, CreateScopeTypeRequest, CreateScopeTypeEdgeRequest } from '../../../gen/authz/v1/scope_service_pb.js';
import { constraint, invalid } from '../../common/errors.js';
import { rowToMessage } from '../../store/kinds.js';
import { MAX_DEPTH, scopeReads } from '../../store/scopes.js';
import { optionalString, requireString } from '../../common/validate.js';
import { Batch, Uniques, createMany, distinct, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { ancestorsOf, assertTypeAllowed, buildScope, rootScopeOf } from './hierarchy-rules.js';
import { listMany, requireTenant, tenantOfRef } from './reads.js';
import { loadForWrite, writeOne } from './writes.js';

export function scopeTypes(): CreateSpec<CreateScopeTypeRequest, 'scopeType'> {
  const unique = new Uniques(); // (name)
  return {
    kind: 'scopeType',
    async preload(b, items) {
      for (const [name, id] of await scopeReads(b.tx).scopeTypesNamed(distinct(items.map((i) => i.name)))) unique.held([name], id);
    },
    async build(b, item, p) {
      const id = b.id('scopeType', item.id, `${p}id`);
      const name = requireString(item.name, `${p}name`);
      unique.claim([name], `${p}name`, `a scope type named "${name}"`);
      return { ...b.base(id), name, description: optionalString(item.description, `${p}description`) ?? '' };
    },
  };
}

export const scopeTypeEdges: CreateSpec<CreateScopeTypeEdgeRequest, 'scopeTypeEdge'> = {
  kind: 'scopeTypeEdge',
  async build(b, item, p) {
    const id = b.id('scopeTypeEdge', item.id, `${p}id`);
    const parentTypeId = requireString(item.parentTypeId, `${p}parentTypeId`);
    const childTypeId = requireString(item.childTypeId, `${p}childTypeId`);
    await b.ref('scopeType', parentTypeId, `${p}parentTypeId`);
    await b.ref('scopeType', childTypeId, `${p}childTypeId`);
    return { ...b.base(id), parentTypeId, childTypeId };
  },
};

export const scopes: CreateSpec<CreateScopeRequest, 'scope'> = {
  kind: 'scope',
  tenantRef: (item, principal) => (item.parentId ? ['scope', item.parentId, 'parentId'] : ['tenant', item.tenantId || principal.tenantId, 'tenantId']),
  async preload(b, items) {
    await b.preload('scope', items.map((i) => i.parentId));
    await b.preload('scopeType', items.map((i) => i.typeId));
  },
  async build(b, item, p) {
    const id = b.id('scope', item.id, `${p}id`);
    const name = requireString(item.name, `${p}name`);
    const typeId = requireString(item.typeId, `${p}typeId`);
    let parentId = optionalString(item.parentId, `${p}parentId`);
    if (!parentId) {
      const tenantId = optionalString(item.tenantId, `${p}tenantId`) ?? b.principal.tenantId;
      if (!tenantId) throw invalid(`${p}parentId`, 'is required when neither tenantId nor the API key names a tenant');
      parentId = await rootScopeOf(b, tenantId, `${p}tenantId`);
    }
    const row = await buildScope(b, id, name, typeId, parentId, p);
    if (item.tenantId && item.tenantId !== row.tenantId) {
      throw invalid(`${p}tenantId`, `does not match the tenant of parent scope ${parentId}`);
    }
    return row;
  },
};

export function scopeService(deps: Deps): ServiceImpl<typeof ScopeService> {
  return {
    async listScopeTypes(req) {
      const { items, nextCursor } = await listMany(deps, 'scopeType', {}, req);
      return { scopeTypes: items, nextCursor };
    },
    async createScopeType(req, ctx) {
      return { scopeType: (await createMany(deps, ctx, scopeTypes(), [req], false))[0] };
    },
    async batchCreateScopeTypes(req, ctx) {
      return { scopeTypes: await createMany(deps, ctx, scopeTypes(), req.items, true) };
    },
    async createScopeTypeEdge(req, ctx) {
      return { scopeTypeEdge: (await createMany(deps, ctx, scopeTypeEdges, [req], false))[0] };
    },
    async batchCreateScopeTypeEdges(req, ctx) {
      return { scopeTypeEdges: await createMany(deps, ctx, scopeTypeEdges, req.items, true) };
    },
    async createScope(req, ctx) {
      return { scope: (await createMany(deps, ctx, scopes, [req], false))[0] };
    },
    async batchCreateScopes(req, ctx) {
      return { scopes: await createMany(deps, ctx, scopes, req.items, true) };
    },
    async getScope(req, ctx) {
      const row = await tenantOfRef(deps, ctx, 'scope', requireString(req.id, 'id'), 'id');
      return { scope: rowToMessage('scope', row) };
    },
    async listScopes(req, ctx) {
      const tenantId = requireString(req.tenantId, 'tenantId');
      await requireTenant(deps, ctx, tenantId, 'tenantId');
      const { items, nextCursor } = await listMany(deps, 'scope', { tenantId }, req);
      return { scopes: items, nextCursor };
    },
    async listScopeChildren(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'scope', id, 'id');
      const { items, nextCursor } = await listMany(deps, 'scope', { parentId: id }, req);
      return { scopes: items, nextCursor };
    },
    async listScopeAncestors(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'scope', id, 'id');
      const ancestors = await scopeReads(deps.db).ancestors(id);
      return { scopes: ancestors.map((r) => rowToMessage('scope', r)), nextCursor: '' };
    },
    async moveScope(req, ctx) {
      const childId = requireString(req.childScopeId, 'childScopeId');
      const parentId = requireString(req.parentScopeId, 'parentScopeId');
      const moved = await writeOne(deps, ctx, async (tx, principal) => {
        const child = await loadForWrite(tx, principal, 'scope', childId, 'childScopeId');
        if (!child.parentId) throw constraint('a tenant root scope cannot be moved', 'childScopeId');
        const b = new Batch(tx, principal);
        const parent = await b.ref('scope', parentId, 'parentScopeId');
        if (parent.tenantId !== child.tenantId) throw constraint('both scopes must belong to the same tenant', 'parentScopeId');
        const chain = await ancestorsOf(b, parentId);
        if (parentId === childId || chain.some((s) => s.id === childId)) {
          throw constraint(`moving scope ${childId} under ${parentId} would create a cycle`, 'parentScopeId');
        }
        await assertTypeAllowed(b, parent.typeId as string, child.typeId as string, 'childScopeId');
        const subtreeDepth = await scopeReads(tx).subtreeHeight(childId);
        if (chain.length + subtreeDepth > MAX_DEPTH) {
          throw constraint(`the move would make the hierarchy deeper than ${MAX_DEPTH} levels`, 'parentScopeId');
        }
        await tx.update('scope', child, { parentId });
        return { ...child, parentId };
      });
      return { scope: rowToMessage('scope', moved) };
    },
  };
}
