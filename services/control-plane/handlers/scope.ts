import type { ServiceImpl } from '@connectrpc/connect';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import type { CreateScopeRequest, CreateScopeTypeRequest, CreateScopeTypeEdgeRequest } from '../../../gen/authz/v1/scope_service_pb.js';
import { constraint, invalid, notFound } from '../../common/errors.js';
import { rowToMessage, type Row } from '../../store/kinds.js';
import { getById } from '../../store/read.js';
import { principalOf } from '../auth/principal.js';
import { optionalString, requireString } from '../../common/validate.js';
import { requireTenant } from './tenancy.js';
import { Batch, Uniques, createMany, distinct, listMany, loadForWrite, tenantOfRef, writeOne, type CreateSpec, type Deps } from './kit.js';
import { query } from '../../store/read.js';

/** Contract §6: scope and resource hierarchies are at most 64 levels deep. */
export const MAX_DEPTH = 64;

function scopeTypes(): CreateSpec<CreateScopeTypeRequest, 'scopeType'> {
  const unique = new Uniques(); // (name)
  return {
    kind: 'scopeType',
    async preload(b, items) {
      const names = distinct(items.map((i) => i.name));
      if (names.length === 0) return;
      for (const r of await query<{ id: string; name: string }>(b.em, 'select id, name from scope_types where name in (?)', [names])) {
        unique.held([r.name], r.id);
      }
    },
    async build(b, item, p) {
      const id = b.id('scopeType', item.id, `${p}id`);
      const name = requireString(item.name, `${p}name`);
      unique.claim([name], `${p}name`, `a scope type named "${name}"`);
      return { ...b.base(id), name, description: optionalString(item.description, `${p}description`) ?? '' };
    },
  };
}

const scopeTypeEdges: CreateSpec<CreateScopeTypeEdgeRequest, 'scopeTypeEdge'> = {
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

/** Ancestors of a scope, nearest first, from the batch and the store; cycles and depth are capped. */
async function ancestorsOf(b: Batch, scopeId: string): Promise<Row[]> {
  const out: Row[] = [];
  let cur: string | undefined = scopeId;
  const seen = new Set<string>();
  while (cur && !seen.has(cur) && out.length <= MAX_DEPTH) {
    seen.add(cur);
    const row = await b.ref('scope', cur, 'parentId');
    out.push(row);
    cur = (row.parentId as string | null) ?? undefined;
  }
  return out;
}

/** Once a scope type has edges as parent, only its listed child types go under its scopes. */
export async function assertTypeAllowed(b: Batch, parentTypeId: string, childTypeId: string, field: string) {
  const allowed = await allowedChildTypes(b, parentTypeId);
  if (allowed.size > 0 && !allowed.has(childTypeId)) {
    throw constraint(`scope type ${childTypeId} may not be placed under scope type ${parentTypeId}`, field);
  }
}

/** Child types allowed under a scope type (empty: any), read once per request. */
const childTypesCache = new WeakMap<Batch, Map<string, Set<string>>>();
async function allowedChildTypes(b: Batch, parentTypeId: string): Promise<Set<string>> {
  const cache = childTypesCache.get(b) ?? new Map<string, Set<string>>();
  childTypesCache.set(b, cache);
  let hit = cache.get(parentTypeId);
  if (!hit) {
    const rows = (await b.em.execute('select child_type_id from scope_type_edges where parent_type_id = ?', [parentTypeId])) as { child_type_id: string }[];
    hit = new Set(rows.map((r) => r.child_type_id));
    cache.set(parentTypeId, hit);
  }
  return hit;
}

/** Builds a scope row under `parentId` (validated: same tenant, type hierarchy, depth). */
export async function buildScope(b: Batch, id: string, name: string, typeId: string, parentId: string, p: string): Promise<Row> {
  const parent = await b.ref('scope', parentId, `${p}parentId`);
  await b.ref('scopeType', typeId, `${p}typeId`);
  await assertTypeAllowed(b, parent.typeId as string, typeId, `${p}typeId`);
  const depth = (await ancestorsOf(b, parentId)).length + 1;
  if (depth > MAX_DEPTH) throw constraint(`the scope would be ${depth} levels deep; at most ${MAX_DEPTH} are allowed`, `${p}parentId`);
  const tenantId = parent.tenantId as string;
  await b.tenant(tenantId, `${p}parentId`);
  return { ...b.base(id, tenantId), name, typeId, parentId };
}

/** The root scope of a tenant, for requests that name only a tenant. */
export async function rootScopeOf(b: Batch, tenantId: string, field: string): Promise<string> {
  const t = await b.ref('tenant', tenantId, field);
  return t.scopeId as string;
}

const scopes: CreateSpec<CreateScopeRequest, 'scope'> = {
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
      const start = await tenantOfRef(deps, ctx, 'scope', id, 'id');
      const em = deps.db.orm.em.fork();
      const out: Row[] = [];
      const seen = new Set([id]);
      let cur = start.parentId as string | null;
      while (cur && !seen.has(cur) && out.length < MAX_DEPTH) {
        seen.add(cur);
        const row = await getById(em, 'scope', cur);
        if (!row) break;
        out.push(row);
        cur = row.parentId as string | null;
      }
      return { scopes: out.map((r) => rowToMessage('scope', r)), nextCursor: '' };
    },
    async moveScope(req, ctx) {
      const childId = requireString(req.childScopeId, 'childScopeId');
      const parentId = requireString(req.parentScopeId, 'parentScopeId');
      const moved = await writeOne(deps, ctx, async (tx, principal) => {
        const child = await loadForWrite(tx, principal, 'scope', childId, 'childScopeId');
        if (!child.parentId) throw constraint('a tenant root scope cannot be moved', 'childScopeId');
        const b = new Batch(tx, principalOf(ctx));
        const parent = await b.ref('scope', parentId, 'parentScopeId');
        if (parent.tenantId !== child.tenantId) throw constraint('both scopes must belong to the same tenant', 'parentScopeId');
        const chain = await ancestorsOf(b, parentId);
        if (parentId === childId || chain.some((s) => s.id === childId)) {
          throw constraint(`moving scope ${childId} under ${parentId} would create a cycle`, 'parentScopeId');
        }
        await assertTypeAllowed(b, parent.typeId as string, child.typeId as string, 'childScopeId');
        const subtreeDepth = await subtreeHeight(tx.em, childId);
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

/** Levels in the subtree rooted at a scope (1 for a leaf), capped past the depth limit. */
async function subtreeHeight(em: Batch['em'], rootId: string): Promise<number> {
  const rows = (await em.execute(
    `with recursive sub(id, depth) as (
       select id, 1 from scopes where id = ?
       union all select s.id, sub.depth + 1 from scopes s join sub on s.parent_id = sub.id where sub.depth <= ?
     ) select max(depth) as h from sub`, [rootId, MAX_DEPTH + 1],
  )) as { h: number | string }[];
  const h = Number(rows[0]?.h ?? 1);
  if (!Number.isFinite(h)) throw notFound('scope', rootId);
  return h;
}
