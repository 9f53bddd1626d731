/**
 * Rows of any kind, read by id or by a simple filter: the part of the store every aggregate
 * shares. Rows come as the store holds them (kinds.ts `Row`); rowToMessage makes messages.
 */
import type { Database } from './db.js';
import { KINDS, type KindDef, type KindName, type Row } from './kinds.js';
import { existingIds, listPage, loadByIds, rawQuery, type Page, type PageResult } from './read.js';
import { entityManagerOf, type StoreSource } from './source.js';

/** Rows whose properties equal the filter's values; a list of values admits any of them. */
export type RowFilter = Readonly<Record<string, string | readonly string[]>>;

export interface RowReads {
  /** Rows of `kind` by id, as a map; an id without a row is absent from it. */
  byIds(kind: KindName, ids: Iterable<string>): Promise<Map<string, Row>>;
  /** The row `id` of `kind`, or null when there is none. */
  byId(kind: KindName, id: string): Promise<Row | null>;
  /** Which of `ids` are rows of `kind` (one index probe each, whatever the table's size). */
  existing(kind: KindName, ids: string[]): Promise<Set<string>>;
  /** Every row of `kind` matching `filter`, in no particular order. */
  where(kind: KindName, filter: RowFilter): Promise<Row[]>;
  /**
   * The tenant of the row `id` of `kind`: its tenant id; null for a row without one (a platform
   * key's) and for kinds that have no tenant column (tenants, scope types and their edges);
   * undefined when the row does not exist.
   */
  tenantOf(kind: KindName, id: string): Promise<string | null | undefined>;
}

/** Kinds whose table has no tenant column. */
const GLOBAL_KINDS = new Set<KindName>(['tenant', 'scopeType', 'scopeTypeEdge']);

/** Row reads of one source (every call of the result runs in that transaction, or in reads of its own). */
export function rowReads(source: StoreSource): RowReads {
  const em = entityManagerOf(source);
  return {
    byIds: (kind, ids) => loadByIds(em, kind, ids),
    async byId(kind, id) {
      return (await loadByIds(em, kind, [id])).get(id) ?? null;
    },
    existing: (kind, ids) => existingIds(em, kind, ids),
    async where(kind, filter) {
      return (await em.find((KINDS[kind] as KindDef).entity, ormFilter(filter) as never, { disableIdentityMap: true })) as Row[];
    },
    async tenantOf(kind, id) {
      const column = GLOBAL_KINDS.has(kind) ? 'null' : 'tenant_id';
      const table = (KINDS[kind] as KindDef).entity.meta.tableName;
      const rows = await rawQuery<{ tenant_id: string | null }>(em, `select ${column} as tenant_id from ${table} where id = ?`, [id]);
      return rows.length === 0 ? undefined : rows[0].tenant_id;
    },
  };
}

/**
 * A page of the rows of `kind` matching `filter`, in id order (keyset paging: the cursor carries
 * the last id, signed for this kind and filter). `invalid_argument` for a limit outside
 * 1..MAX_PAGE or a cursor this listing did not issue.
 */
export function listRows(db: Database, kind: KindName, filter: RowFilter, page: Page): Promise<PageResult> {
  return listPage(db.orm.em.fork(), db.cursors, kind, ormFilter(filter), page);
}

/** The filter as the ORM takes it (and as listing cursors are signed for). */
function ormFilter(filter: RowFilter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filter)) out[k] = typeof v === 'string' ? v : { $in: [...v] };
  return out;
}

export type { Page, PageResult };
