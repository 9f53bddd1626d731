/**
 * The candidates of a LookupResources listing: a set of resources that contains every resource
 * `evaluate` could allow for one (subject, action, scope, type key, any context), built from the
 * index without visiting the others; or `undefined` when no such bound exists (the listing then
 * walks every resource of the type). The listing still decides each candidate with `evaluate`,
 * so a candidate too many only costs a decision; a candidate missing would be a resource missing
 * from the listing. Each way the decision path can allow a resource (docs/decision-path.md) is
 * therefore a source here, and any source that cannot be bounded makes the whole set unbounded:
 *
 * - a policy allow: an allow policy targeting the resource directly whose actions name the
 *   action or `*` (its window and conditions are left to evaluate); an allow policy of the
 *   action on a collection defined at the scope or an ancestor, for a type of the key asked
 *   (any type without one): unbounded, its match definition can match any resource of the type;
 * - a role permission (roles held at the scope from memberships and tag bindings, as evaluate
 *   collects them; the role's permissions from its cover index, as evaluate reads them, plus
 *   every `add` override for it along the path, `remove` overrides ignored) whose action is the action or `*` and whose type is `*` or the
 *   key asked: pattern `*` is unbounded; another pattern names the resource with that id, the
 *   resources with that external id, and the descendants of the resource with that id;
 * - an ownership grant of the subject (any role): its resource and that resource's descendants.
 *
 * Descendants follow `inherit` edges only (a `none` edge stops evaluate's walk up) down to
 * MAX_HIERARCHY_DEPTH levels (evaluate walks up at most that many), over every parent link of
 * a child, not only the one evaluate picks, which is one of them.
 *
 * Cost: O(roles held × their permissions + the subject's grants + allow policies of the action
 * on resources + collections along the path + the descendants reached) to collect, then a sort
 * of the candidates by id. Nothing here grows with the tenant's other resources. The sorted
 * candidates are kept in a small cache per index (see {@link candidatesFor}), so the later pages
 * of a listing, at the same revision, do not build them again.
 */
import { bagRows, MAX_HIERARCHY_DEPTH, type CoverEntry, type ResourceNode, type RowBag, type ScopePath, type SubjectNode, type TenantIndex } from './tenant-index/mod.js';
import type { Permission } from './model.js';
import { collectRoles, type RoleList } from './roles.js';

/**
 * Every existing resource (of type key `typeKey` when given) that evaluate could allow to
 * `subject` for `action` at the scope of `path`, in id order, each once; undefined when that set
 * cannot be bounded from the index.
 */
export function lookupCandidates(
  index: TenantIndex, subject: SubjectNode, path: ScopePath, action: string, typeKey: string | undefined,
): ResourceNode[] | undefined {
  if (collectionMayAllow(index, path, action, typeKey)) return undefined;
  // Nodes as found, repeats and all: one sort by id below orders them and drops the repeats
  // (cheaper than a set of the nodes).
  const found: ResourceNode[] = [];
  /** Resources whose descendants are candidates too. */
  const roots: ResourceNode[] = [];

  for (const a of action === '*' ? ['*'] : [action, '*']) {
    for (const p of bagRows(index.directAllowPolicies(a))) {
      if (p.target.kind !== 'resource') continue;
      const n = index.resourceNode(p.target.resourceId);
      if (n !== undefined) found.push(n);
    }
  }

  const roles: RoleList = { items: [], n: 0 };
  collectRoles(index, subject, path, roles);
  const overrides = index.pathHasOverrides(path);
  for (let k = 0; k < roles.n; k++) {
    const info = roles.items[k];
    // The role's permissions as evaluate reads them: its cover index, pattern → action → entries.
    if (info.cover !== undefined) {
      for (const [pattern, byAction] of info.cover) {
        if (!anyCovers(byAction.get(action), typeKey) && (action === '*' || !anyCovers(byAction.get('*'), typeKey))) continue;
        if (pattern === '*') return undefined;
        addPattern(index, pattern, found, roots);
      }
    }
    if (!overrides) continue;
    for (const p of addedAlong(index, info.id, path)) {
      if (p.action !== action && p.action !== '*') continue;
      if (typeKey !== undefined && p.resourceType !== '*' && p.resourceType !== typeKey) continue;
      if (p.resourcePattern === '*') return undefined;
      addPattern(index, p.resourcePattern, found, roots);
    }
  }

  subject.grantsByResource?.forEachResource((n) => {
    found.push(n);
    roots.push(n);
  });

  addDescendants(index, roots, found);
  const out: ResourceNode[] = [];
  const nodes = index.resourceNodes;
  for (const n of found) if (nodes.exists(n) && (typeKey === undefined || nodes.type(n)?.key === typeKey)) out.push(n);
  out.sort((a, b) => index.resourceNodes.compareIds(a, b));
  // One node per id: a repeat sits next to its first.
  let kept = 0;
  for (let i = 0; i < out.length; i++) if (kept === 0 || out[i] !== out[kept - 1]) out[kept++] = out[i];
  out.length = kept;
  return out;
}

/** Listings whose candidates one index keeps (least recently used dropped first). */
export const CACHED_LISTINGS = 32;
/** Candidates one index keeps in all (8 bytes each: 8 MB), so a cache cannot hold many big sets. */
const CACHED_CANDIDATES = 1_000_000;

interface CandidateCache {
  revision: number;
  /** Query key → candidates (undefined: unbounded), in use order. */
  entries: Map<string, ResourceNode[] | undefined>;
  size: number;
}

const caches = new WeakMap<TenantIndex, CandidateCache>();

/**
 * {@link lookupCandidates}, kept per index and revision for the later pages of a listing: the
 * index is mutated in place by `apply`, which always moves its revision, so a cache of another
 * revision is dropped whole. `subjectId` is the subject's resolved id (the key must not depend on
 * how the actor named it).
 */
export function candidatesFor(
  index: TenantIndex, subject: SubjectNode, subjectId: string, path: ScopePath, action: string, typeKey: string | undefined,
): ResourceNode[] | undefined {
  let cache = caches.get(index);
  if (cache === undefined || cache.revision !== index.revision) {
    cache = { revision: index.revision, entries: new Map(), size: 0 };
    caches.set(index, cache);
  }
  const key = JSON.stringify([subjectId, path.ids[0], action, typeKey ?? null]);
  if (cache.entries.has(key)) {
    const hit = cache.entries.get(key);
    cache.entries.delete(key);
    cache.entries.set(key, hit);
    return hit;
  }
  const built = lookupCandidates(index, subject, path, action, typeKey);
  const size = built?.length ?? 0;
  if (size <= CACHED_CANDIDATES) {
    cache.entries.set(key, built);
    cache.size += size;
    for (const [k, v] of cache.entries) {
      if (cache.entries.size <= CACHED_LISTINGS && cache.size <= CACHED_CANDIDATES) break;
      cache.entries.delete(k);
      cache.size -= v?.length ?? 0;
    }
  }
  return built;
}

/** What an index's cache holds: listings and candidates (for tests). */
export function cachedCandidates(index: TenantIndex): { listings: number; candidates: number } {
  const cache = caches.get(index);
  return cache === undefined || cache.revision !== index.revision ? { listings: 0, candidates: 0 } : { listings: cache.entries.size, candidates: cache.size };
}

/** Drops the candidates an index keeps (benchmarks measure a listing's first page with it). */
export function forgetCandidates(index: TenantIndex): void {
  caches.delete(index);
}

/** Whether an allow policy of the action targets a collection at the path for a type of the key. */
function collectionMayAllow(index: TenantIndex, path: ScopePath, action: string, typeKey: string | undefined): boolean {
  for (const typeId of index.collectionTypeIds()) {
    // A resource of this type is listed only when the type's key is the key asked.
    if (typeKey !== undefined && index.resourceType(typeId)?.key !== typeKey) continue;
    for (const s of path.ids) {
      for (const c of bagRows(index.collectionsAt(typeId, s))) {
        for (const p of bagRows(index.collectionPolicies(c.id))) {
          if (p.effect === 'allow' && (p.actions.includes(action) || p.actions.includes('*'))) return true;
        }
      }
    }
  }
  return false;
}

/** Whether a permission of the entries (filed under one pattern and action) has type `*` or the key asked. */
function anyCovers(bag: RowBag<CoverEntry> | undefined, typeKey: string | undefined): boolean {
  for (const e of bagRows(bag)) {
    const type = e.permission.resourceType;
    if (typeKey === undefined || type === '*' || type === typeKey) return true;
  }
  return false;
}

/** A permission pattern other than `*`: the resource with that id (and below it), those with that external id. */
function addPattern(index: TenantIndex, pattern: string, found: ResourceNode[], roots: ResourceNode[]): void {
  const byId = index.resourceNode(pattern);
  if (byId !== undefined) {
    found.push(byId);
    roots.push(byId);
  }
  for (const n of index.resourceNodesByExternalId(pattern)) found.push(n);
}

/** Every permission an `add` override gives the role along the path (removes ignored: they only narrow). */
function addedAlong(index: TenantIndex, roleId: string, path: ScopePath): Permission[] {
  const out: Permission[] = [];
  for (const s of path.ids) {
    for (const o of bagRows(index.overridesAt(s)?.get(roleId))) {
      if (o.mode !== 'add') continue;
      for (const id of o.permissionIds) {
        const p = index.permission(id);
        if (p !== undefined) out.push(p);
      }
    }
  }
  return out;
}

/**
 * Adds the descendants of `roots` through `inherit` edges, MAX_HIERARCHY_DEPTH levels deep,
 * breadth first (so each is reached at its shortest distance). Roots without children, most of
 * them, cost one map lookup; only the descendants reached are kept in a set.
 */
function addDescendants(index: TenantIndex, roots: readonly ResourceNode[], found: ResourceNode[]): void {
  let seen: Set<ResourceNode> | undefined;
  let level: readonly ResourceNode[] = roots;
  for (let depth = 0; depth < MAX_HIERARCHY_DEPTH && level.length > 0; depth++) {
    const next: ResourceNode[] = [];
    for (const parent of level) {
      const links = index.childLinks(index.resourceNodes.idOf(parent));
      if (links === undefined) continue;
      for (const link of bagRows(links)) {
        if (!link.inherit) continue;
        seen ??= new Set(roots);
        if (seen.has(link.child)) continue;
        seen.add(link.child);
        found.push(link.child);
        next.push(link.child);
      }
    }
    level = next;
  }
}
