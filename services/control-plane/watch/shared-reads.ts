/**
 * The change log read once for all of this process's Watch streams of a tenant. One commit wakes
 * every stream of its tenant at once (a sidecar per pod: tens or hundreds of them), and each
 * would read the same rows after the same revision. Here the first asks the database and the
 * others share its answer (one read in flight per tenant and starting revision), and the latest
 * revisions read stay in a small window per tenant, so that a stream that wakes a little later
 * (its outbox was full, or it was sending) is served from memory too.
 *
 * Safe because a tenant's log is append-only and gapless while it is read: writes to a tenant
 * are serialized (they lock its row), so revision R + 1 is committed before R + 2 exists, and
 * rows never change once committed (compaction only deletes the oldest). What the window holds
 * is therefore what the database would answer for the same revisions; a stream still checks
 * that each revision is the next it needs, and reads past the window from the database. The
 * messages are shared between streams and never modified.
 *
 * Memory: at most `windowBytes` (estimated encoded bytes) per tenant with streams open here,
 * dropped when its last stream ends, plus the reads in flight.
 */
import type { RevisionChanges } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { revisionBytes } from './changes.js';

/** The window's default size per tenant: recent revisions of ordinary writes, a few big batches. */
export const DEFAULT_WINDOW_BYTES = 1024 * 1024;

/** How the database's log is read: whole revisions after `after`, as changes.ts readRevisions answers. */
export type RevisionLogReader = (tenantId: string, after: number, rowLimit: number) => Promise<RevisionChanges[]>;

interface Window {
  /** Contiguous revisions, oldest first. */
  revisions: RevisionChanges[];
  bytes: number;
}

export class SharedRevisionReads {
  private readonly windows = new Map<string, Window>();
  /** Tenants with streams open here: only their reads are kept. */
  private readonly watched = new Set<string>();
  private readonly inFlight = new Map<string, Promise<RevisionChanges[]>>();
  /** Reads of the change log made (for metrics and tests). */
  databaseReads = 0;
  /** Reads answered without asking the database: from the window or by joining a read in flight. */
  sharedReads = 0;

  constructor(
    /** How the database is read (tests give a model of the log). */
    private readonly readLog: RevisionLogReader,
    private readonly windowBytes = DEFAULT_WINDOW_BYTES,
  ) {}

  /**
   * Whole revisions after `after`, oldest first, as readRevisions answers them (empty when the
   * log holds nothing after it; the caller checks that the first is `after + 1`).
   */
  read(tenantId: string, after: number, rowLimit: number): Promise<RevisionChanges[]> {
    const w = this.windows.get(tenantId);
    if (w !== undefined && w.revisions.length > 0) {
      const first = Number(w.revisions[0].revision);
      const last = Number(w.revisions[w.revisions.length - 1].revision);
      if (after >= first - 1 && after < last) {
        this.sharedReads++;
        return Promise.resolve(w.revisions.slice(after - first + 1));
      }
    }
    const key = `${tenantId}\n${after}`;
    const pending = this.inFlight.get(key);
    if (pending !== undefined) {
      this.sharedReads++;
      return pending;
    }
    this.databaseReads++;
    const read = this.readLog(tenantId, after, rowLimit).then(
      (revisions) => {
        this.inFlight.delete(key);
        this.remember(tenantId, after, revisions);
        return revisions;
      },
      (err: unknown) => {
        this.inFlight.delete(key);
        throw err;
      },
    );
    this.inFlight.set(key, read);
    return read;
  }

  /** `streams` more streams took a read made for them together (a tenant's feed, fanout.ts). */
  shareWith(streams: number): void {
    this.sharedReads += streams;
  }

    /** A stream of the tenant opened here: its reads are worth keeping. */
  watch(tenantId: string): void {
    this.watched.add(tenantId);
  }

  /**
   * Forgets a tenant's window (its last stream here ended); a read of it still in flight is then
   * not kept either, so no window outlives its tenant's streams.
   */
  forget(tenantId: string): void {
    this.watched.delete(tenantId);
    this.windows.delete(tenantId);
  }

  /** Windows held now (for tests). */
  get tenants(): number {
    return this.windows.size;
  }

  /** Adds what was read after `after` to the tenant's window when it continues it, else starts it anew. */
  private remember(tenantId: string, after: number, revisions: RevisionChanges[]): void {
    // Only a gapless run from `after + 1` is kept (not the next revision: the log was compacted
    // past `after`, and the caller takes a snapshot).
    for (let i = 0; i < revisions.length; i++) if (Number(revisions[i].revision) !== after + 1 + i) return;
    if (revisions.length === 0 || !this.watched.has(tenantId)) return;
    let w = this.windows.get(tenantId);
    if (w !== undefined && w.revisions.length > 0) {
      const last = Number(w.revisions[w.revisions.length - 1].revision);
      // A read older than the window leaves it; one past its end replaces it.
      if (after < last) return;
      if (after > last) w = undefined;
    }
    if (w === undefined || w.revisions.length === 0) {
      w = { revisions: [], bytes: 0 };
      this.windows.set(tenantId, w);
    }
    for (const r of revisions) {
      w.revisions.push(r);
      w.bytes += revisionBytes(r);
    }
    let drop = 0;
    while (w.bytes > this.windowBytes && drop < w.revisions.length) w.bytes -= revisionBytes(w.revisions[drop++]);
    if (drop > 0) w.revisions.splice(0, drop);
  }
}
