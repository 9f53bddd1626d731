/**
 * A tenant's change log as an audit trail (ChangeService.ListChanges): each change with who
 * wrote its revision, when and why, and the row before and after, filtered and paged.
 */
import { constraint } from '../common/errors.js';
import type { Database } from './db.js';
import { KINDS, changeLogData, type KindDef, type Row } from './kinds.js';
import { query } from './read.js';
import { inReadSnapshot } from './tenant-model.js';

/** The change-log kinds: those of tenant-owned rows. */
export const CHANGE_KINDS: readonly string[] = Object.values(KINDS).filter((d) => (d as KindDef).tenantOwned).map((d) => d.kind);

export interface ChangeFilter {
  tenantId: string;
  kind?: string;
  entityId?: string;
  writerKeyId?: string;
  writerSubjectId?: string;
  fromTime?: Date;
  toTime?: Date;
  fromRevision?: number;
  toRevision?: number;
}

/** A position in the log: after the change (revision, seq). */
export interface ChangePosition {
  revision: number;
  seq: number;
}

export interface AuditChange {
  revision: number;
  seq: number;
  op: 'upsert' | 'delete';
  kind: string;
  entityId: string;
  /** Absent for a revision written before writers were recorded. */
  writer?: { keyId: string; subjectId: string };
  time: Date;
  reason: string | null;
  /** The entity in its API JSON form, before and after; undefined when null. */
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

export interface ChangePage {
  changes: AuditChange[];
  /** Whether changes follow the last one returned. */
  more: boolean;
  /** The oldest revision the log still holds. */
  oldestRevision: number;
}

interface PageRow {
  revision: string;
  seq: number;
  op: 'upsert' | 'delete';
  kind: string;
  entity_id: string;
  data: Row | null;
  before: Row | null;
  logged_at: Date | string;
  key_id: string | null;
  subject_id: string | null;
  reason: string | null;
  written_at: Date | string | null;
}

/**
 * Up to `limit` changes matching `filter` after `after` (from the start when absent), in one
 * repeatable-read snapshot, so the horizon and the page agree. `failed_precondition` when the
 * page would begin before the oldest revision the log holds (`from_revision` or the cursor's
 * position), naming that revision: the changes in between are gone.
 */
export async function listChanges(db: Database, filter: ChangeFilter, after: ChangePosition | undefined, limit: number): Promise<ChangePage> {
  return inReadSnapshot(db, async (tx) => {
    const [horizon] = await query<{ compacted_through: string }>(tx.em, 'select compacted_through from change_log_horizons where tenant_id = ?', [filter.tenantId]);
    const oldestRevision = (horizon ? Number(horizon.compacted_through) : 0) + 1;
    if (after !== undefined && after.revision < oldestRevision) {
      throw constraint(`the change log no longer holds the revisions after this page (the oldest it holds is ${oldestRevision}): list again from revision ${oldestRevision}`, 'cursor');
    }
    if (after === undefined && filter.fromRevision !== undefined && filter.fromRevision < oldestRevision) {
      throw constraint(`the change log no longer holds revision ${filter.fromRevision} (the oldest it holds is ${oldestRevision})`, 'fromRevision');
    }
    const where = ['c.tenant_id = ?'];
    const params: unknown[] = [filter.tenantId];
    const start = after ?? { revision: Math.max(filter.fromRevision ?? 0, await firstRevisionAt(tx.em, filter)) - 1, seq: Number.MAX_SAFE_INTEGER };
    // Row comparison: the primary key (and each filter's index) is read from this position on.
    where.push('(c.revision, c.seq) > (?, ?)');
    params.push(start.revision, Math.min(start.seq, 2_147_483_647));
    const last = Math.min(filter.toRevision ?? Number.MAX_SAFE_INTEGER, await lastRevisionAt(tx.em, filter));
    if (last < Number.MAX_SAFE_INTEGER) {
      where.push('c.revision <= ?');
      params.push(last);
    }
    if (filter.entityId !== undefined) {
      // Equality on both leading columns of change_log_entity, for any kind when none is named.
      where.push('c.kind in (?)', 'c.entity_id = ?');
      params.push(filter.kind !== undefined ? [filter.kind] : [...CHANGE_KINDS], filter.entityId);
    } else if (filter.kind !== undefined) {
      where.push('c.kind = ?');
      params.push(filter.kind);
    }
    if (filter.writerKeyId !== undefined) {
      where.push('r.key_id = ?');
      params.push(filter.writerKeyId);
    }
    if (filter.writerSubjectId !== undefined) {
      where.push('r.subject_id = ?');
      params.push(filter.writerSubjectId);
    }
    if (filter.fromTime !== undefined) {
      where.push('coalesce(r.created_at, c.created_at) >= ?');
      params.push(filter.fromTime);
    }
    if (filter.toTime !== undefined) {
      where.push('coalesce(r.created_at, c.created_at) <= ?');
      params.push(filter.toTime);
    }
    params.push(limit + 1);
    const rows = await query<PageRow>(tx.em,
      `select c.revision, c.seq, c.op, c.kind, c.entity_id, c.data, c.before, c.created_at as logged_at,
              r.key_id, r.subject_id, r.reason, r.created_at as written_at
       from change_log c left join revisions r on r.tenant_id = c.tenant_id and r.revision = c.revision
       where ${where.join(' and ')}
       order by c.revision, c.seq limit ?`, params);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    return { changes: rows.map(toChange), more, oldestRevision };
  });
}

/**
 * The first revision written at or after `fromTime` (through revisions_time), so a time range
 * starts reading the log there; 0 without a time. Revisions take their time from the writer's
 * clock under the tenant's lock, so time and revision order agree unless replicas' clocks
 * differ; the exact time condition is applied to the rows as well.
 */
async function firstRevisionAt(em: Parameters<typeof query>[0], filter: ChangeFilter): Promise<number> {
  if (filter.fromTime === undefined) return 0;
  const [row] = await query<{ x: string | null }>(em, 'select min(revision) as x from revisions where tenant_id = ? and created_at >= ?', [filter.tenantId, filter.fromTime]);
  // No revision that late: nothing matches past the newest.
  return row.x === null ? Number.MAX_SAFE_INTEGER - 1 : Number(row.x);
}

/** The last revision written at or before `toTime` (see firstRevisionAt); unbounded without a time. */
async function lastRevisionAt(em: Parameters<typeof query>[0], filter: ChangeFilter): Promise<number> {
  if (filter.toTime === undefined) return Number.MAX_SAFE_INTEGER;
  const [row] = await query<{ x: string | null }>(em, 'select max(revision) as x from revisions where tenant_id = ? and created_at <= ?', [filter.tenantId, filter.toTime]);
  return row.x === null ? 0 : Number(row.x);
}

function toChange(r: PageRow): AuditChange {
  const time = new Date(r.written_at ?? r.logged_at);
  const out: AuditChange = {
    revision: Number(r.revision), seq: r.seq, op: r.op, kind: r.kind, entityId: r.entity_id, time, reason: r.reason,
  };
  if (r.key_id !== null && r.subject_id !== null) out.writer = { keyId: r.key_id, subjectId: r.subject_id };
  if (r.before !== null) out.before = changeLogData(r.kind, r.before);
  if (r.data !== null) out.after = changeLogData(r.kind, r.data);
  return out;
}
