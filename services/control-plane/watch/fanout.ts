/**
 * One tenant's Watch streams in this process, and the fan-out of its revisions to the streams
 * that are caught up. A sidecar per pod means hundreds of streams of one tenant on a replica;
 * with a producer per stream, every commit resolved hundreds of timers and promise chains, each
 * reading, wrapping and writing the same revision. Here a stream that has sent everything it
 * read and writes to its transport itself (a StreamSink: the lean path) parks: its producer waits
 * without a timer, and on a commit the feed reads the log once (SharedRevisionReads), and hands the
 * same message (encoded once, see frames.ts) to every parked stream, synchronously, in one pass.
 * Each stream still applies its own rules as it queues the message: its order (a revision not
 * next to what it holds sends it back to its producer for a fresh snapshot), its buffer bound
 * (resource_exhausted) and its transport's backpressure. Heartbeats of parked streams come from
 * one timer per tenant, the message made once per tick and revision; the timer fires on a grid
 * of a quarter heartbeat, so that streams that fell quiet at different moments get theirs in one
 * pass (each a heartbeat after its last message, at most a quarter heartbeat late). While
 * notifications are down the same timer polls the log every `pollMs`.
 *
 * Streams not parked (sending a snapshot or catching up, or connect-node's, which pull their
 * messages) are woken as before and read the log through the same shared reads.
 */
import { create } from '@bufbuild/protobuf';
import { timestampNow } from '@bufbuild/protobuf/wkt';
import { HeartbeatSchema, WatchResponseSchema, type RevisionChanges, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import type { KnownRevisions } from '../known-revisions.js';
import type { SharedRevisionReads } from './shared-reads.js';

/** What the feed needs of a stream (stream.ts WatchStream). */
export interface FeedStream {
  /** The last revision the stream queued. */
  readonly sent: number;
  /** When its transport last took a message (ms since the epoch). */
  readonly lastTakenAt: number;
  /** Nothing queued and nothing held by the transport. */
  readonly quiet: boolean;
  /** Its messages are compressed: a revision's frames are prepared before it is offered. */
  readonly compressed: boolean;
  /**
   * Queues the revisions after `sent` (ignoring older ones); false when the first it lacks is
   * not `sent + 1` (the log was compacted past it): the stream must leave the feed and snapshot.
   * Ending the stream (its buffer bound) removes it from the feed through `unpark`.
   */
  offer(revisions: readonly RevisionChanges[]): boolean;
  /** Queues a heartbeat made for every stream of the tenant at this tick. */
  heartbeat(msg: WatchResponse): void;
  /** Back to its producer (a gap to snapshot over), or ended. */
  resume(): void;
  /** Ends the stream with `err`. */
  close(err: Error): void;
}

export interface FeedEnv {
  known: KnownRevisions;
  reads: SharedRevisionReads;
  live(): boolean;
  gate: string;
  heartbeatMs: number;
  pollMs: number;
  logRows: number;
  /** Makes the revisions' compressed frames, once for every compressed stream (frames.ts prepareFrames). */
  prepareCompressed(revisions: readonly RevisionChanges[]): Promise<unknown>;
}

export class TenantFeed<S extends FeedStream = FeedStream> {
  /** Every stream of the tenant open here. */
  readonly streams = new Set<S>();
  private readonly parked = new Set<S>();
  private running = false;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private lastPoll = Date.now();
  private closed = false;

  constructor(
    readonly tenantId: string,
    private readonly env: FeedEnv,
  ) {}

  /** Parked streams now (for tests). */
  get parkedCount(): number {
    return this.parked.size;
  }

  isParked(s: S): boolean {
    return this.parked.has(s);
  }

  /** Whether streams may park here (not once the feed was closed). */
  get open(): boolean {
    return !this.closed;
  }

  /** A stream caught up with what it read: from now on the feed sends it revisions and heartbeats. */
  park(s: S): void {
    if (this.closed) return s.resume();
    this.parked.add(s);
    // A commit may have come while it was reading: it would not wake it again.
    const known = this.env.live() ? this.env.known.get(this.tenantId) : undefined;
    if (known === undefined || known > s.sent) this.wake();
    this.schedule(Math.min(s.lastTakenAt + this.env.heartbeatMs, this.env.live() ? Number.POSITIVE_INFINITY : this.lastPoll + this.env.pollMs));
  }

  /** Takes a stream out of the feed (it ended, or must snapshot); true when it was parked. */
  unpark(s: S): boolean {
    const was = this.parked.delete(s);
    if (this.parked.size === 0) this.clearTimer();
    return was;
  }

  /** A commit of the tenant (or a resync): the parked streams get what the log holds after them. */
  wake(): void {
    if (this.parked.size === 0) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.run();
  }

  /** Stops the timer; the streams are ended by their owner (WatchHub.close). */
  close(): void {
    this.closed = true;
    this.clearTimer();
    for (const s of [...this.parked]) {
      this.parked.delete(s);
      s.resume();
    }
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.deliver();
      } while (this.again && this.parked.size > 0);
    } finally {
      this.running = false;
    }
  }

  /** Reads once after the parked streams' lowest revision and offers it to each of them, until they hold what is known. */
  private async deliver(): Promise<void> {
    for (;;) {
      if (this.parked.size === 0) return;
      let from = Number.POSITIVE_INFINITY;
      for (const s of this.parked) from = Math.min(from, s.sent);
      const known = this.env.live() ? this.env.known.get(this.tenantId) : undefined;
      if (known !== undefined && known <= from) return;
      let revisions: RevisionChanges[];
      try {
        revisions = await this.env.reads.read(this.tenantId, from, this.env.logRows);
      } catch (err) {
        // As each stream's own read would have: the error ends them (their clients resume).
        for (const s of [...this.parked]) {
          this.unpark(s);
          s.close(err as Error);
        }
        return;
      }
      if (revisions.length === 0) return;
      // Counted as if each stream had read: one of them asked, the others shared it.
      this.env.reads.shareWith(this.parked.size - 1);
      let compressed = false;
      for (const s of this.parked) if ((compressed = s.compressed)) break;
      if (compressed) {
        try {
          await this.env.prepareCompressed(revisions);
        } catch {
          // Compressed on the event loop as each is written instead (frames.ts framesOf).
        }
      }
      // A copy: a stream that ends or leaves takes itself out of the set.
      for (const s of [...this.parked]) {
        if (!this.parked.has(s)) continue;
        if (!s.offer(revisions)) {
          this.unpark(s);
          s.resume();
        }
      }
      const last = Number(revisions[revisions.length - 1].revision);
      const now = this.env.live() ? this.env.known.get(this.tenantId) : undefined;
      if (now !== undefined && now <= last) return;
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Sets the tenant's one timer to fire at `at`, rounded up to the heartbeat grid, at the latest. */
  private schedule(at: number): void {
    const step = Math.max(1, Math.floor(this.env.heartbeatMs / 4));
    at = Math.ceil(at / step) * step;
    if (this.closed || this.parked.size === 0 || at >= this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(1, at - Date.now()));
    this.timer.unref();
  }

  /**
   * Heartbeats to the parked streams that have been quiet for `heartbeatMs` (one message per
   * revision at this tick, for all of them), and a poll of the log while notifications are down.
   */
  private tick(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    const live = this.env.live();
    if (!live && now >= this.lastPoll + this.env.pollMs) {
      this.lastPoll = now;
      this.wake();
    }
    const { heartbeatMs } = this.env;
    const known = this.env.known.get(this.tenantId) ?? 0;
    const beats = new Map<number, WatchResponse>();
    let next = live ? Number.POSITIVE_INFINITY : this.lastPoll + this.env.pollMs;
    for (const s of [...this.parked]) {
      let due = s.lastTakenAt + heartbeatMs;
      if (now >= due) {
        if (s.quiet) {
          const revision = Math.max(s.sent, known);
          let msg = beats.get(revision);
          if (msg === undefined) beats.set(revision, (msg = heartbeatMessage(this.tenantId, revision, this.env.gate)));
          s.heartbeat(msg);
        }
        // Not quiet: the transport holds a message; look again a heartbeat later.
        due = now + heartbeatMs;
      }
      next = Math.min(next, due);
    }
    this.schedule(next);
  }
}

/** A heartbeat at `revision` (the tenant's committed revision as this process knows it). */
export function heartbeatMessage(tenantId: string, revision: number, gate: string): WatchResponse {
  return create(WatchResponseSchema, {
    event: { case: 'heartbeat', value: create(HeartbeatSchema, { tenantId, revision: BigInt(revision), sentAt: timestampNow(), resourceScopeGate: gate }) },
  });
}
