/**
 * The scope hierarchy as the handlers check it: chains of ancestors, subtree heights, the scope
 * type rules. Single rows come from rows.ts.
 */
import { notFound } from '../common/errors.js';
import type { Row } from './kinds.js';
import { loadByIds, query } from './read.js';
import { entityManagerOf, type StoreSource } from './source.js';

/** Contract §6: scope and resource hierarchies are at most 64 levels deep. */
export const MAX_DEPTH = 64;

/** A scope's chain: the scope itself, then its ancestors nearest first. */
export interface ScopeChain {
  tenantId: string;
  ids: string[];
}

export interface ScopeReads {
  /**
   * The chain of each scope, at most MAX_DEPTH ancestors deep, in one query for all of them;
   * a scope that does not exist is absent from the map.
   */
  chains(scopeIds: Iterable<string>): Promise<Map<string, ScopeChain>>;
  /** The ancestors of a scope as rows, nearest first, at most MAX_DEPTH; none for a root or an unknown scope. */
  ancestors(scopeId: string): Promise<Row[]>;
  /**
   * Levels of the subtree rooted at the scope (1 for a leaf), counted up to MAX_DEPTH + 2 (past
   * the limit the exact height does not matter). Throws `not_found` when the scope does not exist.
   */
  subtreeHeight(scopeId: string): Promise<number>;
  /** The scope types allowed under scope type `parentTypeId` (empty: its scopes take any type). */
  allowedChildTypes(parentTypeId: string): Promise<Set<string>>;
  /** The ids of the scope types with the given names, by name. */
  scopeTypesNamed(names: string[]): Promise<Map<string, string>>;
}

export function scopeReads(source: StoreSource): ScopeReads {
  const em = entityManagerOf(source);
  const chains = async (scopeIds: Iterable<string>) => {
    const ids = [...new Set(scopeIds)];
    const out = new Map<string, ScopeChain>();
    if (ids.length === 0) return out;
    const rows = await query<{ start: string; id: string; tenant_id: string }>(em, `
      with recursive chain(start, id, parent_id, tenant_id, depth) as (
        select id, id, parent_id, tenant_id, 0 from scopes where id in (?)
        union all
        select c.start, s.id, s.parent_id, c.tenant_id, c.depth + 1 from scopes s join chain c on s.id = c.parent_id where c.depth < ?
      ) select start, id, tenant_id from chain order by start, depth`, [ids, MAX_DEPTH]);
    for (const r of rows) {
      const chain = out.get(r.start) ?? { tenantId: r.tenant_id, ids: [] };
      chain.ids.push(r.id);
      out.set(r.start, chain);
    }
    return out;
  };
  return {
    chains,
    async ancestors(scopeId) {
      const above = (await chains([scopeId])).get(scopeId)?.ids.slice(1) ?? [];
      const rows = await loadByIds(em, 'scope', above);
      return above.flatMap((id) => (rows.has(id) ? [rows.get(id)!] : []));
    },
    async subtreeHeight(scopeId) {
      const [row] = await query<{ h: number | string | null }>(em, `
        with recursive sub(id, depth) as (
          select id, 1 from scopes where id = ?
          union all select s.id, sub.depth + 1 from scopes s join sub on s.parent_id = sub.id where sub.depth <= ?
        ) select max(depth) as h from sub`, [scopeId, MAX_DEPTH + 1]);
      const h = Number(row?.h ?? Number.NaN);
      if (!Number.isFinite(h)) throw notFound('scope', scopeId);
      return h;
    },
    async allowedChildTypes(parentTypeId) {
      const rows = await query<{ child_type_id: string }>(em, 'select child_type_id from scope_type_edges where parent_type_id = ?', [parentTypeId]);
      return new Set(rows.map((r) => r.child_type_id));
    },
    async scopeTypesNamed(names) {
      if (names.length === 0) return new Map();
      const rows = await query<{ id: string; name: string }>(em, 'select id, name from scope_types where name in (?)', [names]);
      return new Map(rows.map((r) => [r.name, r.id]));
    },
  };
}
