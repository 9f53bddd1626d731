/**
 * A tenant's decision rows at one revision, read the fast way for both readers of a whole
 * tenant: the Watch snapshot and the control plane's own decision index. One repeatable-read,
 * read-only transaction (every page sees the same revision), keyset pages by (tenant_id, id),
 * plain SQL (hydrating an ORM entity per row cost more than everything else), and the next page
 * read while the caller handles the current one: at most two pages of rows are held.
 */
import { IsolationLevel, type EntityManager } from '@mikro-orm/postgresql';
import { ENTITY_KINDS, type EntityKind } from '../engine/mod.js';
import type { Database } from '../store/db.js';
import { KINDS, type KindDef, type Row } from '../store/kinds.js';
import { rawQuery } from '../store/read.js';
import { readCommittedRevision } from './known-revisions.js';

/** Store kind name (KINDS key) of each engine kind. */
export const STORE_KIND: Record<EntityKind, keyof typeof KINDS> = {
  scope: 'scope', subject: 'subject', role: 'role', permission: 'permission', role_permission: 'rolePermission',
  membership: 'membership', role_assignment: 'roleAssignment', scope_override: 'scopeOverride',
  ownership_grant: 'ownershipGrant', resource_type: 'resourceType', resource: 'resource',
  resource_scope_link: 'resourceScopeLink', resource_edge: 'resourceEdge', collection: 'collection',
  policy: 'policy', tag_group: 'tagGroup', tag: 'tag', tag_assignment: 'tagAssignment', tag_binding: 'tagBinding',
};

/** How one kind's page is read and turned into rows as the ORM would hydrate them. */
interface PageQuery {
  def: KindDef;
  sql: string;
  /** Properties selected as epoch milliseconds, turned back into Date. */
  dates: string[];
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
const queries = new WeakMap<object, Map<EntityKind, PageQuery>>();

/**
 * The page query of a kind, from the ORM's metadata: every column under its property name (the
 * proto field name), timestamps as epoch milliseconds (node-postgres would hand them over as
 * text; a number is exact for timestamptz(3) and cheap to turn into a Date).
 */
function pageQuery(em: EntityManager, kind: EntityKind): PageQuery {
  const meta = em.getMetadata();
  let byKind = queries.get(meta);
  if (!byKind) queries.set(meta, (byKind = new Map()));
  let q = byKind.get(kind);
  if (q) return q;
  const def = KINDS[STORE_KIND[kind]] as KindDef;
  const m = meta.get(def.entity.meta.className);
  const dates: string[] = [];
  const columns = m.props.filter((p) => p.fieldNames?.length === 1).map((p) => {
    const col = quote(p.fieldNames[0]);
    if (p.type === 'Date') {
      dates.push(p.name);
      return `round(extract(epoch from ${col}) * 1000)::float8 as ${quote(p.name)}`;
    }
    return `${col} as ${quote(p.name)}`;
  });
  // The page is cut by rows (the innermost limit, so the index bounds the scan) and by bytes: the
  // rows kept are those whose running size before them is under the byte budget, so a page holds
  // at most that budget plus one row, however large the rows (16 KiB attributes × 10,000 rows
  // would otherwise make one page of 160 MiB of text).
  const names = m.props.filter((p) => p.fieldNames?.length === 1).map((p) => quote(p.name));
  const sql = `select ${names.join(', ')} from (
      select sized.*, sum("__size") over (order by sized.id) - "__size" as "__before" from (
        select page.*, pg_column_size(page.*) as "__size"
        from (select ${columns.join(', ')} from ${quote(m.tableName)} where tenant_id = ? and id > ? order by tenant_id, id limit ?) page
      ) sized
    ) summed where "__before" < ? order by id`;
  q = { def, sql, dates };
  byKind.set(kind, q);
  return q;
}

/** One keyset page of a kind's rows after `after`, as rows the ORM would hydrate (Date timestamps). */
export async function readPage(em: EntityManager, kind: EntityKind, tenantId: string, after: string, page: PageLimits): Promise<Row[]> {
  const q = pageQuery(em, kind);
  const rows = await rawQuery<Row>(em, q.sql, [tenantId, after, page.rows, page.bytes ?? PAGE_BYTES]);
  if (q.dates.length > 0) {
    for (const row of rows) {
      for (const p of q.dates) {
        const v = row[p];
        if (v !== null && v !== undefined) row[p] = new Date(v as number);
      }
    }
  }
  return rows;
}

/** How much one page may hold: `rows` rows, and rows past `bytes` (default PAGE_BYTES) of them are left to the next. */
export interface PageLimits {
  rows: number;
  bytes?: number;
}

/** Bytes of rows (as PostgreSQL stores them) one page holds at most, plus one row. */
export const PAGE_BYTES = 8 * 1024 * 1024;

/** One page of a tenant's rows of one kind (rows as the ORM would hydrate them). */
export interface RowPage {
  kind: EntityKind;
  def: KindDef;
  rows: Row[];
}

/** The number of the tenant's rows of a kind, in `em`'s transaction. */
async function countRows(em: EntityManager, kind: EntityKind, tenantId: string): Promise<number> {
  const m = em.getMetadata().get((KINDS[STORE_KIND[kind]] as KindDef).entity.meta.className);
  const rows = await rawQuery<{ n: string }>(em, `select count(*) as n from ${quote(m.tableName)} where tenant_id = ?`, [tenantId]);
  return Number(rows[0].n);
}

/**
 * Reads every engine row of the tenant at its committed revision: `onRevision` is told the
 * revision first, then `onResources` (when given) the number of resources the pages will
 * hold, then the pages come in kind order. The transaction ends (rolled back: it only read)
 * when the generator ends or is returned. `not_found` for an unknown tenant.
 */
export async function* tenantRows(
  db: Database,
  tenantId: string,
  page: PageLimits,
  onRevision: (revision: number) => void,
  onResources?: (count: number) => void,
): AsyncGenerator<RowPage> {
  const em = db.orm.em.fork() as EntityManager;
  await em.begin({ isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true });
  let pending: Promise<Row[]> | undefined;
  try {
    // The first statement fixes the transaction's snapshot: every page below sees this revision.
    onRevision(await readCommittedRevision(em, tenantId));
    // In the same snapshot, so it is the number of resource rows the pages hold.
    if (onResources) onResources(await countRows(em, 'resource', tenantId));
    let k = 0;
    const read = (after: string) => {
      const p = readPage(em, ENTITY_KINDS[k], tenantId, after, page);
      p.catch(() => undefined); // awaited below; not unhandled if the generator is returned first
      return p;
    };
    pending = read('');
    while (pending) {
      const kind = ENTITY_KINDS[k];
      const rows = await pending;
      pending = undefined;
      // A page cut by bytes holds fewer rows than asked, so only an empty page ends a kind.
      if (rows.length > 0) pending = read(rows[rows.length - 1].id as string);
      else if (++k < ENTITY_KINDS.length) pending = read('');
      yield { kind, def: KINDS[STORE_KIND[kind]] as KindDef, rows };
    }
  } finally {
    await pending?.catch(() => undefined);
    await em.rollback().catch(() => undefined);
  }
}
