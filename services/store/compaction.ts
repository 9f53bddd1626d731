/**
 * Change-log retention. A tenant's log is compacted from its oldest end only, so it always
 * holds a contiguous (compacted_through, revision] and `change_log_horizons` says where it
 * starts. A revision is deleted when it is both outside the newest `keepRevisions` of its
 * tenant and older than `keepMs` (its rows' `created_at`, the writer's clock): a sidecar that
 * was away for less than that can resume, one away longer gets a fresh snapshot.
 *
 * Safe with several replicas: each tenant is compacted in its own transaction under a
 * transaction-scoped advisory try-lock (a replica finding it taken skips that tenant), and the
 * statements are idempotent (`delete … where revision <= X`, `greatest` on the horizon).
 */
import type { Logger } from 'pino';
import type { Database } from './db.js';

export interface RetentionRule {
  /** The newest revisions of each tenant always kept (at least 1). */
  keepRevisions: number;
  /** Revisions younger than this are always kept, ms. */
  keepMs: number;
}

/** An arbitrary constant (the first key of the per-tenant advisory lock; see MIGRATION_LOCK). */
const COMPACTION_LOCK = 727_431_002;

/** Revisions after which the log still holds every revision of the tenant (0: all of them). */
export async function compactedThrough(db: Database, tenantId: string): Promise<number> {
  const rows = (await db.orm.em.fork().execute('select compacted_through from change_log_horizons where tenant_id = ?', [tenantId])) as { compacted_through: string }[];
  return rows.length === 0 ? 0 : Number(rows[0].compacted_through);
}

/**
 * Compacts every tenant's log by `rule` once; returns the change-log rows deleted. `now` is the
 * clock (tests move it).
 */
export async function compactChangeLog(db: Database, rule: RetentionRule, now = Date.now()): Promise<number> {
  const keep = Math.max(1, rule.keepRevisions);
  const em = db.orm.em.fork();
  // Tenants with revisions outside the newest `keep` that the log may still hold.
  const candidates = (await em.execute(
    `select t.id, t.revision - ? as upto from tenants t left join change_log_horizons h on h.tenant_id = t.id
     where t.revision - ? > coalesce(h.compacted_through, 0)`,
    [keep, keep],
  )) as { id: string; upto: string }[];
  const cutoff = new Date(now - rule.keepMs);
  let deleted = 0;
  for (const c of candidates) {
    deleted += await em.fork().transactional(async (tem) => {
      const [lock] = (await tem.execute('select pg_try_advisory_xact_lock(?, hashtext(?)) as ok', [COMPACTION_LOCK, c.id])) as { ok: boolean }[];
      if (!lock.ok) return 0;
      // The newest revision old enough, within the prefix that may go.
      const [row] = (await tem.execute(
        'select max(revision) as x from change_log where tenant_id = ? and revision <= ? and created_at < ?',
        [c.id, c.upto, cutoff],
      )) as { x: string | null }[];
      if (row.x === null) return 0;
      const through = Number(row.x);
      // The horizon first: a reader that sees the rows gone also sees why.
      await tem.execute(
        `insert into change_log_horizons (tenant_id, compacted_through) values (?, ?)
         on conflict (tenant_id) do update set compacted_through = greatest(change_log_horizons.compacted_through, excluded.compacted_through)`,
        [c.id, through],
      );
      // Who wrote a revision goes with its changes.
      await tem.execute('delete from revisions where tenant_id = ? and revision <= ?', [c.id, through], 'run');
      const res = (await tem.execute('delete from change_log where tenant_id = ? and revision <= ?', [c.id, through], 'run')) as { affectedRows?: number };
      return res.affectedRows ?? 0;
    });
  }
  return deleted;
}

/**
 * Runs compactChangeLog every `intervalMs` (first run after one interval), then `sweep` (other
 * rows that time ends, such as console sessions); returns a stop function.
 */
export function startCompaction(db: Database, rule: RetentionRule, intervalMs: number, logger: Logger, sweep?: () => Promise<number>): () => Promise<void> {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = compactChangeLog(db, rule)
      .then((n) => {
        if (n > 0) logger.info({ deleted: n }, 'change log compacted');
      })
      .catch((err: unknown) => logger.warn({ err }, 'change log compaction failed; retrying at the next interval'))
      .then(() => sweep?.())
      .then((n) => {
        if (n) logger.debug({ deleted: n }, 'timed-out console sessions deleted');
      })
      .catch((err: unknown) => logger.warn({ err }, 'deleting timed-out console sessions failed; retrying at the next interval'))
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
