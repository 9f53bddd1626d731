/**
 * The scope hierarchy's rules as creates and moves check them: where a scope may go (the scope
 * type rules, the depth limit), a tenant's root scope, and whether a scope lies at or below
 * another (roles, permissions and types defined at a scope are usable in its subtree).
 */
import { constraint } from '../../common/errors.js';
import type { KindName, Row } from '../../store/kinds.js';
import { MAX_DEPTH, scopeReads } from '../../store/scopes.js';
import type { Batch } from './batch-create.js';

/** Ancestors of a scope, nearest first, from the batch and the store; cycles and depth are capped. */
export async function ancestorsOf(b: Batch, scopeId: string): Promise<Row[]> {
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
    hit = await scopeReads(b.tx).allowedChildTypes(parentTypeId);
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

/** Scope chains (the scope, then its ancestors nearest first) a request has read, by scope. */
export type ChainCache = Map<string, string[]>;

/** Reads the chains of `scopeIds` into `cache`, in one query. */
export async function preloadScopeChains(b: Batch, cache: ChainCache, scopeIds: Iterable<string | undefined>) {
  const ids = [...scopeIds].filter((x): x is string => !!x && !cache.has(x));
  for (const [k, v] of await scopeReads(b.tx).chains(ids)) cache.set(k, v.ids);
}

/**
 * Fills `cache` with the chains of the scopes of the rows `ids` of `kind` (e.g. the roles a
 * batch references): two bulk reads, so the per-item checks below need none.
 */
export async function preloadChainsOf(b: Batch, cache: ChainCache, kind: KindName, ids: (string | undefined)[]) {
  const want = [...new Set(ids.filter((x): x is string => !!x))];
  if (want.length === 0) return;
  const rows = await b.rows.where(kind, { id: want });
  await preloadScopeChains(b, cache, rows.map((r) => r.scopeId as string));
}

/** Whether `scopeId` is `ancestorId` or lies below it (a cache miss costs one query). */
export async function isAtOrBelow(b: Batch, scopeId: string, ancestorId: string, cache: ChainCache): Promise<boolean> {
  if (scopeId === ancestorId) return true;
  if (!cache.has(scopeId)) await preloadScopeChains(b, cache, [scopeId]);
  return (cache.get(scopeId) ?? []).includes(ancestorId);
}

/**
 * `failed_precondition` on `field` unless `role` is usable at `scopeId`: defined there or at an
 * ancestor (a role defined at a scope is usable in its descendants). `where` names the scope.
 */
export async function requireUsableRole(b: Batch, role: Row, scopeId: string, where: string, cache: ChainCache, field: string): Promise<void> {
  if (await isAtOrBelow(b, scopeId, role.scopeId as string, cache)) return;
  throw constraint(`role ${role.id as string} is defined at scope ${role.scopeId as string}, which is neither ${where} nor an ancestor of it`, field);
}
