/**
 * What a tenant's past states are read from: the change log's `before` rows and the revisions'
 * writers and times (migration 0006). A state at revision R is the state at a later revision N
 * with every entity changed in (R, N] put back as it was before its first change there.
 */
import type { Database } from './db.js';
import type { Row } from './kinds.js';
import { query } from './read.js';

export interface HistoryBounds {
  /** The tenant's committed revision. */
  committed: number;
  /**
   * The oldest revision whose state can be rebuilt: every revision after it is in the change log
   * with its row before (compaction deletes from the oldest end; revisions written before
   * writers were recorded have no `before` rows). Equal to `committed` when none can.
   */
  oldest: number;
}

/** Where a tenant's readable history starts and ends; undefined for an unknown tenant. */
export async function historyBounds(db: Database, tenantId: string): Promise<HistoryBounds | undefined> {
  const rows = await query<{ committed: string; first: string | null; through: string | null }>(
    db.orm.em.fork(),
    `select t.revision as committed,
       (select min(revision) from revisions r where r.tenant_id = t.id) as first,
       (select compacted_through from change_log_horizons h where h.tenant_id = t.id) as through
     from tenants t where t.id = ?`,
    [tenantId],
  );
  if (rows.length === 0) return undefined;
  const committed = Number(rows[0].committed);
  // Revisions are recorded from `first` on without a gap (every write since 0006 records one).
  const first = rows[0].first === null ? committed + 1 : Number(rows[0].first);
  const oldest = Math.min(committed, Math.max(first - 1, Number(rows[0].through ?? 0)));
  return { committed, oldest };
}

/**
 * The newest revision committed at or before `time`; undefined when the revisions kept start
 * after it.
 */
export async function revisionAtTime(db: Database, tenantId: string, time: Date): Promise<number | undefined> {
  const rows = await query<{ revision: string | null }>(
    db.orm.em.fork(),
    'select max(revision) as revision from revisions where tenant_id = ? and created_at <= ?',
    [tenantId, time],
  );
  return rows[0].revision === null ? undefined : Number(rows[0].revision);
}

/** The commit time of a revision, when it is recorded. */
export async function revisionTime(db: Database, tenantId: string, revision: number): Promise<Date | undefined> {
  const rows = await query<{ created_at: Date }>(db.orm.em.fork(), 'select created_at from revisions where tenant_id = ? and revision = ?', [tenantId, revision]);
  return rows.length === 0 ? undefined : new Date(rows[0].created_at);
}

/** An entity as it was before the first of its changes in a range of revisions. */
export interface EntityBefore {
  kind: string;
  entityId: string;
  /** The row as stored; null when the entity did not exist. */
  before: Row | null;
}

/**
 * For every entity changed in (after, upto], the row it had at `after`: the `before` of its
 * first change in the range (one row per entity, picked by PostgreSQL).
 */
export async function entitiesBefore(db: Database, tenantId: string, after: number, upto: number): Promise<EntityBefore[]> {
  const rows = await query<{ kind: string; entity_id: string; before: Row | null }>(
    db.orm.em.fork(),
    `select distinct on (kind, entity_id) kind, entity_id, before from change_log
     where tenant_id = ? and revision > ? and revision <= ? order by kind, entity_id, revision, seq`,
    [tenantId, after, upto],
  );
  return rows.map((r) => ({ kind: r.kind, entityId: r.entity_id, before: r.before }));
}
