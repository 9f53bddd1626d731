/** A tenant's change log read back: what followers of the tenant apply after a revision. */
import type { Database } from './db.js';
import type { Row } from './kinds.js';
import { query } from './read.js';

/** One change-log entry as stored (`data`: the row as the store held it, null for a delete). */
export interface ChangeLogRow {
  revision: string;
  op: 'upsert' | 'delete';
  kind: string;
  entity_id: string;
  data: Row | null;
  created_at: Date | string;
}

const COLUMNS = 'revision, op, kind, entity_id, data, created_at';

/**
 * The entries after revision `after`, by revision then `seq`, whole revisions only. With
 * `rowLimit`, about that many rows (a revision cut by the limit is left for the next read,
 * unless it is the only one: then it is read whole); without it, every entry. Empty when the log
 * holds nothing after `after`; the caller checks that the first revision is `after + 1` (else
 * the log was compacted past it).
 */
export async function changesAfter(db: Database, tenantId: string, after: number, rowLimit?: number): Promise<ChangeLogRow[]> {
  const em = db.orm.em.fork();
  if (rowLimit === undefined) {
    return query<ChangeLogRow>(em, `select ${COLUMNS} from change_log where tenant_id = ? and revision > ? order by revision, seq`, [tenantId, after]);
  }
  const rows = await query<ChangeLogRow>(em, `select ${COLUMNS} from change_log where tenant_id = ? and revision > ? order by revision, seq limit ?`, [tenantId, after, rowLimit]);
  if (rows.length < rowLimit) return rows;
  const last = rows[rows.length - 1].revision;
  if (rows[0].revision === last) {
    return query<ChangeLogRow>(em, `select ${COLUMNS} from change_log where tenant_id = ? and revision = ? order by seq`, [tenantId, last]);
  }
  return rows.filter((r) => r.revision !== last);
}
