/**
 * Tenant indexes at past revisions, for `consistency.atRevision`/`atTime` and for the later
 * pages of a listing whose revision the tenant has moved past.
 *
 * A past index is built the way a current one is (a snapshot of the tenant's rows at its
 * committed revision N, tenant-rows.ts), then every entity the change log shows changed in
 * (R, N] is put back as it was before its first change there (its `before` row, or removed when
 * it did not exist yet): one query picks those rows (store/history.ts), applied as one change.
 * Cost: one snapshot read and build of the tenant plus one row per entity changed since R,
 * whatever the number of changes; the decision on the index then costs what a present one does. A few recent past indexes are kept (a listing's pages, an audit's
 * questions at one time), least recently used dropped first.
 */
import { ENTITY_KINDS, TenantIndex, type Change, type EntityKind } from '../../engine/mod.js';
import { constraint, invalid, notFound } from '../../common/errors.js';
import type { PastState } from '../../decision/decide.js';
import type { Database } from '../../store/db.js';
import { entitiesBefore, historyBounds, revisionAtTime, type HistoryBounds } from '../../store/history.js';
import { changeLogData, messageToChangeData } from '../../store/kinds.js';
import { tenantRows } from '../../store/tenant-rows.js';
import { ENGINE_STORE_KINDS } from '../engine-kinds.js';
import { rowCount } from './indexes.js';

const ENGINE_KINDS = new Set<string>(ENTITY_KINDS);

/** Rows a batch of the snapshot read (as TenantIndexes loads). */
const LOAD_BATCH_ROWS = 1_000;

/** Past indexes a control plane keeps (a listing being paged, an audit asking at one time). */
export const PAST_INDEXES_KEPT = 4;

export interface PastIndexOptions {
  /** Past indexes kept at once (each as large as its tenant's index). */
  maxIndexes: number;
  /**
   * Rows the kept past indexes may hold together (`SERVICE_INDEX_MAX_ROWS`, a budget of their own
   * beside the present indexes'); the one just built is kept whatever its size.
   */
  maxRows: number;
}

/** Builds and keeps tenants' indexes at past revisions. */
export class PastIndexes {
  /** `tenant@revision` → the index being built or built, least recently used first. */
  private readonly kept = new Map<string, { index: Promise<TenantIndex>; rows: number }>();
  /** Rows of the kept indexes that are built. */
  private rows = 0;
  /** Past indexes built since start (metrics and tests). */
  builds = 0;

  constructor(private readonly db: Database, private readonly opts: PastIndexOptions) {}

  /**
   * The revision a request's past state names: `at.revision` itself, or the newest revision
   * committed at or before `at.time`. `invalid_argument` for a revision not committed yet,
   * `failed_precondition` (naming the oldest revision that can be read) for one the history no
   * longer holds.
   */
  async revisionOf(tenantId: string, at: PastState): Promise<number> {
    const bounds = await this.bounds(tenantId);
    if (at.revision !== undefined) {
      if (at.revision > bounds.committed) throw invalid(at.field, `revision ${at.revision} is past the tenant's committed revision ${bounds.committed}`);
      this.assertKept(at.revision, bounds, at.field);
      return at.revision;
    }
    const time = at.time!;
    const revision = await revisionAtTime(this.db, tenantId, time);
    // Before the first recorded revision: the tenant's beginning when its history is whole.
    if (revision === undefined && bounds.oldest === 0) return 0;
    if (revision === undefined) throw this.gone(`${time.toISOString()} is before the oldest state kept`, bounds, at.field);
    this.assertKept(revision, bounds, at.field);
    return revision;
  }

  /** The tenant's index at `revision` (a revision revisionOf returned, or a listing's). */
  at(tenantId: string, revision: number, field: string): Promise<TenantIndex> {
    const key = `${tenantId}@${revision}`;
    const hit = this.kept.get(key);
    if (hit !== undefined) {
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit.index;
    }
    const entry = { index: this.build(tenantId, revision, field), rows: 0 };
    this.kept.set(key, entry);
    entry.index.then(
      (index) => {
        if (this.kept.get(key) !== entry) return;
        entry.rows = rowCount(index);
        this.rows += entry.rows;
        this.trim(key);
      },
      () => {
        if (this.kept.get(key) === entry) this.kept.delete(key);
      },
    );
    this.trim(key);
    return entry.index;
  }

  /** Drops the least recently used past indexes beyond `maxIndexes` or `maxRows`, never `keep`. */
  private trim(keep: string): void {
    for (const [key, e] of this.kept) {
      if (this.kept.size <= this.opts.maxIndexes && this.rows <= this.opts.maxRows) return;
      if (key === keep) continue;
      this.kept.delete(key);
      this.rows -= e.rows;
    }
  }

  private async bounds(tenantId: string): Promise<HistoryBounds> {
    const bounds = await historyBounds(this.db, tenantId);
    if (bounds === undefined) throw notFound('tenant', tenantId);
    return bounds;
  }

  private assertKept(revision: number, bounds: HistoryBounds, field: string): void {
    if (revision < bounds.oldest) throw this.gone(`revision ${revision} is before the oldest state kept`, bounds, field);
  }

  private gone(what: string, bounds: HistoryBounds, field: string) {
    return constraint(
      `${what}: the oldest revision that can be read is ${bounds.oldest} ` +
        '(history is kept for SERVICE_CHANGE_LOG_RETENTION_HOURS, and from the version that records it)',
      field,
    );
  }

  private async build(tenantId: string, revision: number, field: string): Promise<TenantIndex> {
    if (revision === 0) return TenantIndex.fromSnapshot({ revision: 0, rows: {} });
    const builder = TenantIndex.builder();
    let snapshotRevision = -1;
    for await (const { kind, def, columns, texts } of tenantRows(this.db, tenantId, ENGINE_STORE_KINDS, { rows: LOAD_BATCH_ROWS }, (r) => (snapshotRevision = r))) {
      for (const text of texts) builder.add(kind, messageToChangeData(def, columns.row(text)));
    }
    if (snapshotRevision === revision) return builder.build(revision);
    // The snapshot is built unnumbered, then moved back to `revision` in one change: each entity
    // changed since is put back as it was (read after the snapshot's transaction: the embedded
    // database has a single connection).
    const index = builder.build(0);
    const changes: Change[] = [];
    for (const e of await entitiesBefore(this.db, tenantId, revision, snapshotRevision)) {
      if (!ENGINE_KINDS.has(e.kind)) continue;
      const kind = e.kind as EntityKind;
      changes.push(e.before === null ? { op: 'delete', kind, id: e.entityId } : ({ op: 'upsert', kind, id: e.entityId, row: changeLogData(kind, e.before) } as Change));
    }
    // Compaction may have deleted part of (revision, snapshotRevision] while it was read.
    this.assertKept(revision, await this.bounds(tenantId), field);
    index.apply(revision, changes);
    this.builds++;
    return index;
  }
}
