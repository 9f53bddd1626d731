/**
 * The process's Watch streams and their wake-ups. The process has one LISTEN connection
 * (db.notifications); a CHANGE_CHANNEL notice `<tenantId>:<revision>` (or this process's own
 * commit, delivered at once by runWrite) wakes that tenant's streams, which then read the change
 * log after the last revision they sent (together: shared-reads.ts): the log is the truth, the notice only a wake-up. After
 * a reconnect (`onResync`) every stream re-reads; while notifications are not live each stream
 * polls the log (WatchLimits.pollMs), so no commit is missed. The streams of a tenant that are
 * caught up are fed together by its TenantFeed (fanout.ts): one read and one pass per commit.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import type { Database } from '../../store/db.js';
import type { KnownRevisions } from '../known-revisions.js';
import { readRevisions } from './changes.js';
import { SharedRevisionReads } from './shared-reads.js';
import { SnapshotCache } from './snapshot-cache.js';
import { TenantFeed } from './fanout.js';
import { prepareFrames } from './frames.js';
import { changesMessage, WatchStream, type SnapshotPart, type WatchLimits } from './stream.js';

export interface WatchStats {
  streams: number;
  /** Bytes held by every stream together (outboxes and messages in the transport). */
  bufferedBytes: number;
  /** The most one stream holds now. */
  maxStreamBufferedBytes: number;
  /** Streams ended for not reading since start. */
  slowConsumers: number;
  /** Revisions the furthest-behind stream lacks of its tenant's committed revision. */
  maxLagRevisions: number;
  /** Streams lacking at least one committed revision. */
  streamsBehind: number;
}

export class WatchHub {
  private readonly byTenant = new Map<string, TenantFeed<WatchStream>>();
  private slowConsumers = 0;
  private closing = false;
  private readonly unsubscribe: (() => void)[] = [];
  /** The change log read once per tenant and revision for every stream here. */
  readonly reads: SharedRevisionReads;
  /** Whole snapshots kept for the next streams of their tenant. */
  readonly snapshots: SnapshotCache<SnapshotPart>;

  constructor(
    private readonly db: Database,
    private readonly known: KnownRevisions,
    private readonly gate: string,
    readonly limits: WatchLimits,
  ) {
    this.reads = new SharedRevisionReads((tenantId, after, rowLimit) => readRevisions(db, tenantId, after, rowLimit));
    this.snapshots = new SnapshotCache<SnapshotPart>(limits.snapshotCacheBytes);
    this.unsubscribe.push(known.onCommit((tenantId) => this.wakeTenant(tenantId)));
    this.unsubscribe.push(db.notifications.onResync(() => this.wakeAll()));
  }

  /**
   * Opens a stream of the tenant's state (the caller checked the key's reach); `rowBlocks`: its
   * snapshots' rows as RowBlocks (the client accepts them); `json`: the call's codec is JSON (see
   * SnapshotOptions.entityMessages).
   */
  open(tenantId: string, fromRevision: number, rowBlocks = false, json = false): WatchStream {
    if (this.closing) throw new ConnectError('the server is shutting down', Code.Unavailable);
    let feed = this.byTenant.get(tenantId);
    if (!feed) {
      const { heartbeatMs, pollMs, logRows } = this.limits;
      this.byTenant.set(tenantId, (feed = new TenantFeed<WatchStream>(tenantId, {
        known: this.known, reads: this.reads, live: () => this.db.notifications.live, gate: this.gate, heartbeatMs, pollMs, logRows,
        prepareCompressed: (revisions) => Promise.all(revisions.map((r) => prepareFrames(changesMessage(r).msg, 'gzip'))),
      })));
    }
    const stream = new WatchStream(
      {
        db: this.db,
        known: this.known,
        live: () => this.db.notifications.live,
        gate: this.gate,
        limits: this.limits,
        onSlowConsumer: () => this.slowConsumers++,
        reads: this.reads,
        snapshots: this.snapshots,
        feed,
      },
      tenantId,
      fromRevision,
      rowBlocks,
      json,
    );
    feed.streams.add(stream);
    this.reads.watch(tenantId);
    return stream;
  }

  /** Forgets a stream that ended (and stops its producer). */
  release(stream: WatchStream): void {
    stream.close();
    const feed = this.byTenant.get(stream.tenantId);
    if (feed?.streams.delete(stream) && feed.streams.size === 0) {
      feed.close();
      this.byTenant.delete(stream.tenantId);
      this.reads.forget(stream.tenantId);
    }
  }

  /** Every stream, for tests and metrics. */
  streams(): WatchStream[] {
    return [...this.byTenant.values()].flatMap((f) => [...f.streams]);
  }

  /** A tenant's feed (for tests). */
  feed(tenantId: string): TenantFeed<WatchStream> | undefined {
    return this.byTenant.get(tenantId);
  }

  stats(): WatchStats {
    let bufferedBytes = 0;
    let max = 0;
    let maxLag = 0;
    let behind = 0;
    const all = this.streams();
    for (const s of all) {
      bufferedBytes += s.bufferedBytes;
      max = Math.max(max, s.bufferedBytes);
      const lag = s.lagRevisions;
      maxLag = Math.max(maxLag, lag);
      if (lag > 0) behind++;
    }
    return { streams: all.length, bufferedBytes, maxStreamBufferedBytes: max, slowConsumers: this.slowConsumers, maxLagRevisions: maxLag, streamsBehind: behind };
  }

  /**
   * Ends every stream with `unavailable` (the client resumes elsewhere) and waits for their
   * producers to stop; call before the server closes, so it need not wait for them.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const u of this.unsubscribe) u();
    const all = this.streams();
    for (const s of all) s.close(new ConnectError('the server is shutting down; resume from the last revision held', Code.Unavailable));
    for (const f of this.byTenant.values()) f.close();
    await Promise.all(all.map((s) => s.done));
  }

  private wakeTenant(tenantId: string): void {
    const feed = this.byTenant.get(tenantId);
    if (feed) this.wakeFeed(feed);
  }

  private wakeAll(): void {
    for (const feed of this.byTenant.values()) this.wakeFeed(feed);
  }

  /** The parked streams through their feed (one read, one pass), every other stream itself. */
  private wakeFeed(feed: TenantFeed<WatchStream>): void {
    feed.wake();
    for (const s of feed.streams) if (!s.parked) s.wake();
  }
}
