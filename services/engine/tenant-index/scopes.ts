/**
 * Scopes: their rows, each scope's children, and the lazily built paths (a scope and its
 * ancestors) a check walks.
 */
import type { Scope } from '../model.js';
import { bagAdd, bagDelete, bagIds, type Multi } from './bags.js';
import { RowTable } from './row-table.js';
import { MAX_HIERARCHY_DEPTH, type CachedPath, type ScopePath } from './types.js';

const EMPTY_PATH: CachedPath = { ids: [], set: new Set(), overridesVersion: -1, hasOverrides: false };

export class ScopeFamily {
  readonly children: Multi = new Map();
  readonly pathCache = new Map<string, CachedPath>();

  readonly scopes = new RowTable<'scope'>({
    required: ['id'],
    invalid: (r) => (r.parentId !== undefined && r.parentId !== null && typeof r.parentId !== 'string' ? 'scope.parentId must be a string' : null),
    index: (r, old) => {
      if (r.parentId) bagAdd(this.children, r.parentId, r.id);
      // A new scope may complete the paths of children that arrived first; a re-parent moves a subtree.
      if (!old || old.parentId !== r.parentId) this.invalidatePaths(r.id);
    },
    unindex: (r) => {
      if (r.parentId) bagDelete(this.children, r.parentId, r.id);
    },
    removed: (id) => this.invalidatePaths(id),
  });

  readonly rows = this.scopes.rows;

  /** The scope row's own id string when the scope exists, else `id` (see `RowHooks.slim`). */
  str(id: string): string {
    return this.rows.get(id)?.id ?? id;
  }

  /**
   * The scope and its ancestors, nearest first; empty when the scope does not exist. The walk
   * stops at a missing parent, at a revisit and after MAX_HIERARCHY_DEPTH ancestors. Cached
   * until a scope in the path is re-parented, created or deleted.
   */
  path(scopeId: string): ScopePath {
    const cached = this.pathCache.get(scopeId);
    if (cached) return cached;
    if (!this.rows.has(scopeId)) return EMPTY_PATH;
    const ids: string[] = [];
    const set = new Set<string>();
    let cur: string | null | undefined = scopeId;
    while (cur && !set.has(cur) && ids.length <= MAX_HIERARCHY_DEPTH) {
      const s: Scope | undefined = this.rows.get(cur);
      if (!s) break;
      // The scope rows' own strings: the ones assignments and node owners hold, so most
      // comparisons with them are by reference.
      ids.push(s.id);
      set.add(s.id);
      cur = s.parentId;
    }
    const path: CachedPath = { ids, set, overridesVersion: -1, hasOverrides: false };
    this.pathCache.set(scopeId, path);
    return path;
  }

  /** Drops the cached paths of a scope and of everything below it (cycle-safe). */
  private invalidatePaths(scopeId: string): void {
    const seen = new Set<string>();
    const stack = [scopeId];
    while (stack.length > 0) {
      const id = stack.pop() as string;
      if (seen.has(id)) continue;
      seen.add(id);
      this.pathCache.delete(id);
      for (const child of bagIds(this.children.get(id))) stack.push(child);
    }
  }
}
