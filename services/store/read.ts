/**
 * The store modules' own reads over an entity manager: rows by id, keyset pages, raw SQL with
 * bind parameters. Nothing outside services/store uses them (rows.ts and the aggregate modules
 * are what handlers see).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid } from '../common/errors.js';
import { KINDS, type KindDef, type KindName, type Row } from './kinds.js';
import type { CursorCodec } from './cursors.js';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

export interface Page {
  limit?: number;
  cursor?: string;
}

export interface PageResult {
  rows: Row[];
  /** Opaque; empty on the last page. */
  nextCursor: string;
}

/** Loads rows of one kind by id, as a map; missing ids are simply absent. */
export async function loadByIds(em: EntityManager, kind: KindName, ids: Iterable<string>): Promise<Map<string, Row>> {
  const unique = [...new Set(ids)].filter((x) => x);
  const out = new Map<string, Row>();
  if (unique.length === 0) return out;
  const d = KINDS[kind] as KindDef;
  const rows = await em.find(d.entity, { id: { $in: unique } } as never, { disableIdentityMap: true });
  for (const r of rows as Row[]) out.set(r.id as string, r);
  return out;
}

/**
 * Which of the given ids exist. One primary-key probe per id (a lateral join over a JSON
 * parameter), so a 1,000-id check stays fast even when fresh table statistics would turn
 * a plain `in (…)` list into a sequential scan.
 */
export async function existingIds(em: EntityManager, kind: KindName, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const table = (KINDS[kind] as KindDef).entity.meta.tableName;
  const rows = (await em.execute(
    `select u.id from json_array_elements_text(?::json) as u(id)
     where exists (select 1 from ${table} t where t.id = u.id)`,
    [JSON.stringify(ids)],
  )) as { id: string }[];
  return new Set(rows.map((r) => r.id));
}

/** The page size a request asks for: DEFAULT_PAGE when absent, 1..MAX_PAGE. */
export function pageLimit(page: Page): number {
  const limit = page.limit === undefined || page.limit === 0 ? DEFAULT_PAGE : page.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw invalid('limit', `must be between 1 and ${MAX_PAGE}`);
  return limit;
}

/**
 * Keyset paging in id order: the cursor carries the last id of the previous page, signed for
 * this kind and filter (a cursor of another listing is refused).
 */
export async function listPage(em: EntityManager, cursors: CursorCodec, kind: KindName, where: Record<string, unknown>, page: Page): Promise<PageResult> {
  const limit = pageLimit(page);
  const listing = `${kind} ${JSON.stringify(where)}`;
  // The cursor's condition is added to `where`, never in place of an `id` condition it has.
  const filter: Record<string, unknown> = page.cursor ? { $and: [where, { id: { $gt: cursors.decode(listing, page.cursor) } }] } : where;
  const d = KINDS[kind] as KindDef;
  const rows = (await em.find(d.entity, filter as never, {
    orderBy: { id: 'asc' } as never, limit: limit + 1, disableIdentityMap: true,
  })) as Row[];
  const more = rows.length > limit;
  if (more) rows.length = limit;
  return { rows, nextCursor: more ? cursors.encode(listing, rows[rows.length - 1].id as string) : '' };
}

/**
 * Raw rows of a query, with real bind parameters (inside the entity manager's transaction, if
 * any). An array bound to `?` expands into a list, so `in (?)` takes an array; callers never pass
 * an empty one (that would be `in ()`).
 */
export async function query<T>(em: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const flat: unknown[] = [];
  let i = 0;
  const text = sql.replace(/\?/g, () => {
    const v = params[i++];
    if (!Array.isArray(v)) return flat.push(v), '?';
    flat.push(...v);
    return v.map(() => '?').join(', ');
  });
  return rawQuery<T>(em, text, flat);
}

/**
 * Runs SQL with its bind values as given (no list expansion), inside the entity manager's
 * transaction if any; driver errors become MikroORM's typed exceptions.
 */
export async function rawQuery<T>(em: EntityManager, sql: string, bindings: unknown[]): Promise<T[]> {
  const q = em.getKnex().raw(sql, bindings as never[]);
  const trx = em.getTransactionContext();
  if (trx) q.transacting(trx as never);
  try {
    return ((await q) as { rows: T[] }).rows;
  } catch (err) {
    throw em.getPlatform().getExceptionConverter().convertException(err as Error);
  }
}
