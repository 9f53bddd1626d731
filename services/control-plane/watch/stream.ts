/**
 * One Watch call: a producer (snapshot, then the change log after the last revision queued,
 * then heartbeats) feeding a bounded outbox, drained by the RPC's response generator
 * (connect-node pulls `next()`) or written by the stream itself to its sink (the lean path).
 * A stream with a sink that has sent what it read parks in its tenant's feed (fanout.ts), which
 * from then on queues its revisions and heartbeats, under the same rules, until it hands the
 * stream back to its producer.
 *
 * Memory is bounded per stream. The snapshot makes one chunk ahead of the one being sent and
 * waits for that one to be taken by the transport before it reads further (and gives up with `resource_exhausted` when a chunk is not taken
 * within `stallMs`, so a stuck client does not hold its transaction open). Changes are read
 * eagerly on each wake-up, so a client that stops reading fills the outbox: once the outbox and
 * the message in the transport would pass `maxBufferedBytes`, the outbox is dropped and the
 * stream ends with `resource_exhausted` (the client resumes from its last revision). One message
 * is always admitted into an empty outbox, so a revision larger than the bound still goes
 * through: per stream, at most max(maxBufferedBytes, one message) + one message in the
 * transport (connect-node writes a message and awaits `drain` before it asks for the next).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Database } from '../../store/db.js';
import { compactedThrough } from '../../store/compaction.js';
import { committedRevision } from '../../store/tenants.js';
import { WatchResponseSchema, type RevisionChanges, type SnapshotChunk, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import type { KnownRevisions } from '../known-revisions.js';
import { revisionBytes } from './changes.js';
import { heartbeatMessage, type FeedStream, type TenantFeed } from './fanout.js';
import type { SharedRevisionReads } from './shared-reads.js';
import { chunkBytes, snapshotChunks } from './snapshot.js';
import type { SnapshotCache, SnapshotFormat } from './snapshot-cache.js';

export interface WatchLimits {
  /** Heartbeat interval while nothing else is sent (SERVICE_WATCH_HEARTBEAT_MS). */
  heartbeatMs: number;
  /** Bytes one stream may hold queued (outbox plus the message in the transport). */
  maxBufferedBytes: number;
  /** Most bytes of a snapshot chunk (4 MiB; tests make it small to get many chunks). */
  chunkBytes: number;
  /** Rows per batch of a snapshot's cursor (tenant-rows.ts). */
  batchRows: number;
  /** Change-log rows per read. */
  logRows: number;
  /** How often the log is polled while notifications are not live, ms. */
  pollMs: number;
  /** How long a snapshot chunk may wait for the transport before the stream is ended, ms. */
  stallMs: number;
  /** Bytes of whole snapshots kept for the next streams (SERVICE_WATCH_SNAPSHOT_CACHE_BYTES; 0: none). */
  snapshotCacheBytes: number;
}

export const DEFAULT_LIMITS: Omit<WatchLimits, 'heartbeatMs' | 'maxBufferedBytes' | 'snapshotCacheBytes'> = {
  chunkBytes: 4 * 1024 * 1024,
  batchRows: 1_000,
  logRows: 2_000,
  pollMs: 250,
  stallMs: 60_000,
};

export interface StreamEnv {
  db: Database;
  known: KnownRevisions;
  /** Whether notifications reach this process now (else the log is polled). */
  live(): boolean;
  gate: string;
  limits: WatchLimits;
  /** Counts a stream ended for not reading. */
  onSlowConsumer(): void;
  /** The change log as the process's streams read it together (shared-reads.ts). */
  reads: SharedRevisionReads;
  /** Snapshots kept for the next streams of a tenant (snapshot-cache.ts). */
  snapshots: SnapshotCache<SnapshotPart>;
  /** The tenant's streams in this process: a stream with a sink parks there once caught up (fanout.ts). */
  feed?: TenantFeed<WatchStream>;
}

/**
 * Where a stream writes its messages itself, instead of being pulled by `next()` (the lean path's
 * HTTP/2 response). A message is written only once the previous one was written through, as
 * connect-node does, so the transport holds at most one message of the stream.
 */
export interface StreamSink {
  /** Writes one message (as `frames` when prepared); false when the transport holds it until `onDrain`. */
  write(msg: WatchResponse, frames?: Buffer[]): boolean;
  /**
   * For a stream whose messages are compressed: a message's frames, made off the event loop
   * before it is queued (frames.ts prepareFrames); a revision's are made once for every stream.
   */
  prepare?(msg: WatchResponse): Promise<Buffer[]> | undefined;
  /** Calls `fn` once, when what the transport holds is written through (after a write returned false). */
  onDrain(fn: () => void): void;
  /** The stream ended with `err`: after what was written, the call ends with it. */
  end(err: Error): void;
}

/**
 * A revision as a message and its estimated size, made once per revision for every stream of the
 * process (revisions are shared by the streams and never modified: shared-reads.ts), so that the
 * lean path encodes it once too (frames.ts keeps the encoding by the same object).
 */
const changeMessages = new WeakMap<RevisionChanges, { msg: WatchResponse; bytes: number }>();

export function changesMessage(r: RevisionChanges): { msg: WatchResponse; bytes: number } {
  let m = changeMessages.get(r);
  if (m === undefined) changeMessages.set(r, (m = { msg: create(WatchResponseSchema, { event: { case: 'changes', value: r } }), bytes: revisionBytes(r) }));
  return m;
}

interface Queued {
  msg: WatchResponse;
  bytes: number;
  /** The revision the client holds once it has this message (changes, a snapshot's last chunk). */
  revision?: number;
  /** Resolves when the transport takes it. */
  taken?: () => void;
  /** Its frames, when made beforehand (compressed). */
  frames?: Buffer[];
}

/**
 * A snapshot chunk as a stream sends it, and as the snapshot cache keeps it for the next
 * streams (see snapshot-cache.ts).
 */
export interface SnapshotPart {
  readonly msg: WatchResponse;
  readonly index: number;
  readonly revision: bigint;
  readonly last: boolean;
  /** The chunk's size (chunkBytes), for backpressure and the cache's budget. */
  readonly bytes: number;
}

/**
 * The chunks as messages to send. For a binary client each message is encoded here, once, and
 * carried as its own bytes (an unknown field 1, which protobuf-es writes back unchanged and
 * every client decodes as the snapshot): each stream that a kept or followed snapshot serves
 * then writes those bytes instead of encoding the chunk again, and allocates one 4 MiB buffer
 * per chunk fewer (buffers that start V8's full collections; see README, Not yet). A JSON
 * client's messages are kept as messages (their JSON is written per stream).
 */
export async function* snapshotParts(chunks: AsyncIterable<SnapshotChunk>, json: boolean): AsyncGenerator<SnapshotPart> {
  for await (const chunk of chunks) {
    const full = create(WatchResponseSchema, { event: { case: 'snapshot', value: chunk } });
    let msg = full;
    if (!json) {
      const encoded = toBinary(WatchResponseSchema, full);
      // Field 1 (the snapshot), length-delimited: tag byte 0x0a, then what an unknown field holds.
      if (encoded[0] !== 0x0a) throw new Error('snapshot-parts: a snapshot message does not start with field 1');
      msg = create(WatchResponseSchema);
      msg.$unknown = [{ no: 1, wireType: WireType.LengthDelimited, data: encoded.subarray(1) }];
    }
    yield { msg, index: chunk.index, revision: chunk.revision, last: chunk.last, bytes: chunkBytes(chunk) };
  }
}

/** Ends the stream: the producer stops where it is. */
class Ended extends Error {}

export class WatchStream implements FeedStream {
  /** The last revision queued (the snapshot's, then each revision's). */
  private queuedThrough = 0;
  /** The last revision handed to the transport whole (0: none yet, e.g. during the snapshot). */
  private delivered = 0;
  private readonly outbox: Queued[] = [];
  private outboxBytes = 0;
  /** Bytes of the message handed to the transport and not yet written through. */
  private inTransport = 0;
  /** Most bytes this stream ever held (outbox plus transport). */
  peakBufferedBytes = 0;
  private failure: Error | undefined;
  private closed = false;
  private takenAt = Date.now();
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;
  private woken = false;
  /** Where the stream writes itself (the lean path); undefined: pulled by `next()` (connect-node). */
  private sink: StreamSink | undefined;
  /** The sink's transport holds a message and has not said it drained. */
  private transportBusy = false;
  /** Releases the producer from its wait while parked in the feed. */
  private unparked: (() => void) | undefined;
  /** The producer, for close() to wait on. */
  readonly done: Promise<void>;

  constructor(
    private readonly env: StreamEnv,
    readonly tenantId: string,
    private readonly fromRevision: number,
    private readonly rowBlocks = false,
    private readonly json = false,
  ) {
    this.done = this.produce();
  }

  /** Bytes held for this stream now. */
  get bufferedBytes(): number {
    return this.outboxBytes + this.inTransport;
  }

  /**
   * Revisions this stream's client is behind the tenant's committed revision (as this process
   * knows it; the last revision queued when it does not): what it has not yet been handed, so
   * a stream still sending its snapshot is behind by the whole revision.
   */
  get lagRevisions(): number {
    const committed = Math.max(this.queuedThrough, this.env.known.get(this.tenantId) ?? 0);
    return Math.max(0, committed - this.delivered);
  }

  /** FeedStream.sent: the last revision queued. */
  get sent(): number {
    return this.queuedThrough;
  }

  /** When the transport last took a message (ms since the epoch). */
  get lastTakenAt(): number {
    return this.takenAt;
  }

  /** Nothing queued, nothing held by the transport. */
  get quiet(): boolean {
    return this.outbox.length === 0 && this.inTransport === 0;
  }

  /** Whether its messages are compressed (the feed then prepares a revision's frames first). */
  get compressed(): boolean {
    return this.sink?.prepare !== undefined;
  }

  /** Whether the tenant's feed sends this stream its revisions now (it is caught up, with a sink). */
  get parked(): boolean {
    return this.unparked !== undefined;
  }

  /**
   * From now on the stream writes its messages to `sink` itself, each once the previous one was
   * written through, and ends it when it ends. Called once, right after the stream is opened.
   */
  attach(sink: StreamSink): void {
    this.sink = sink;
    if (this.closed) return sink.end(this.failure!);
    this.flush();
  }

  /** A commit (or a resync) may have made the log longer. */
  wake(): void {
    this.woken = true;
    this.wakeProducer?.();
  }

  /** Stops the producer (the call ended, or the server is shutting down). */
  close(reason?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.failure ??= reason ?? new ConnectError('the Watch stream was closed; resume from the last revision held', Code.Unavailable);
    this.drop();
    this.resume();
    this.wakeProducer?.();
    this.wakeConsumer?.();
    this.sink?.end(this.failure);
  }

  /** Leaves the feed: the producer goes on (a gap to snapshot over), or stops (closed). */
  resume(): void {
    const release = this.unparked;
    if (release === undefined) return;
    this.unparked = undefined;
    this.env.feed?.unpark(this);
    release();
  }

  /** FeedStream.offer: the revisions the tenant's feed read, queued after `sent`. */
  offer(revisions: readonly RevisionChanges[]): boolean {
    for (const r of revisions) {
      if (this.closed) return true;
      const n = Number(r.revision);
      if (n <= this.queuedThrough) continue;
      if (n !== this.queuedThrough + 1) return false;
      const { msg, bytes } = changesMessage(r);
      try {
        this.put(msg, bytes, n);
      } catch (err) {
        if (err instanceof Ended) return true;
        throw err;
      }
      this.queuedThrough = n;
    }
    return true;
  }

  /** FeedStream.heartbeat: a heartbeat made once for the tenant's parked streams. */
  heartbeat(msg: WatchResponse): void {
    try {
      this.put(msg, 64);
    } catch (err) {
      if (!(err instanceof Ended)) throw err;
    }
  }

  /**
   * The next message for the transport; throws the stream's end (a ConnectError or the
   * producer's failure). Called by the RPC generator only after the previous message was
   * written through, which is when it stops counting.
   */
  async next(): Promise<WatchResponse> {
    this.inTransport = 0;
    for (;;) {
      const q = this.outbox.shift();
      if (q) {
        this.outboxBytes -= q.bytes;
        this.inTransport = q.bytes;
        this.takenAt = Date.now();
        if (q.revision !== undefined) this.delivered = q.revision;
        q.taken?.();
        return q.msg;
      }
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
      this.wakeConsumer = undefined;
    }
  }

  private async produce(): Promise<void> {
    try {
      await this.start();
      while (!this.closed) {
        await this.pump();
        const feed = this.env.feed;
        if (this.sink !== undefined && feed?.open) await this.park(feed);
        else await this.idle();
      }
    } catch (err) {
      if (!(err instanceof Ended)) this.close(err as Error);
    }
  }

  /** Resumes after `fromRevision` when the log still holds every revision after it, else sends a snapshot. */
  private async start(): Promise<void> {
    if (this.fromRevision > 0) {
      const current = await this.env.known.committed(this.tenantId);
      const horizon = await compactedThrough(this.env.db, this.tenantId);
      if (this.fromRevision <= current && this.fromRevision >= horizon) {
        this.queuedThrough = this.fromRevision;
        return;
      }
    }
    await this.snapshot();
  }

  /**
   * Sends a snapshot: one kept by the process's cache when it may serve this stream, else the
   * one another stream of the tenant is reading (single flight), else one read now (and kept for
   * the next streams). `fresh`: the log after the last one sent has a gap, so only a new read
   * will do. See snapshot-cache.ts.
   */
  private async snapshot(fresh = false): Promise<void> {
    const { limits, gate } = this.env;
    const format: SnapshotFormat = this.json ? 'json' : this.rowBlocks ? 'blocks' : 'entities';
    const db = this.env.db;
    const tenantId = this.tenantId;
    const json = this.json;
    const chunks = this.env.snapshots.open(tenantId, format, {
      fresh,
      reach: async () => ({ committed: await committedRevision(db, tenantId), horizon: await compactedThrough(db, tenantId) }),
      make: () => snapshotParts(snapshotChunks(this.env.db, tenantId, {
        batchRows: limits.batchRows, chunkBytes: limits.chunkBytes, gate, rowBlocks: this.rowBlocks, entityMessages: json,
      }), json),
      bytesOf: (p) => p.bytes,
    });
    // One chunk is made ahead: the next is read, converted and encoded while this one is being
    // sent (and read by the client), and no further (backpressure): at most the chunk in the
    // transport, the one made ahead, and the snapshot's two pages.
    let ahead = chunks.next();
    ahead.catch(() => undefined);
    try {
      for (;;) {
        const r = await ahead;
        if (r.done) break;
        const part = r.value;
        if (part.index === 0) this.queuedThrough = Number(part.revision);
        ahead = part.last ? Promise.resolve({ done: true, value: undefined }) : chunks.next();
        ahead.catch(() => undefined);
        const preparing = this.sink?.prepare?.(part.msg);
        const frames = preparing && (await preparing);
        await this.putAndWait(part.msg, part.bytes, part.last ? Number(part.revision) : undefined, frames);
      }
    } finally {
      // Ends the snapshot's transaction (after the chunk being made, if any).
      await ahead.catch(() => undefined);
      await chunks.return(undefined);
    }
  }

  /** Queues every whole revision the log holds after `sent`. */
  private async pump(): Promise<void> {
    const known = this.env.live() ? this.env.known.get(this.tenantId) : undefined;
    if (known !== undefined && known <= this.queuedThrough) return;
    for (;;) {
      const revisions = await this.env.reads.read(this.tenantId, this.queuedThrough, this.env.limits.logRows);
      if (this.closed) throw new Ended();
      if (revisions.length === 0) return;
      for (const r of revisions) {
        if (this.closed) throw new Ended();
        if (Number(r.revision) !== this.queuedThrough + 1) {
          // The log no longer reaches back to what this client holds (compacted meanwhile).
          await this.snapshot(true);
          break;
        }
        const { msg, bytes } = changesMessage(r);
        const preparing = this.sink?.prepare?.(msg);
        const frames = preparing && (await preparing);
        if (this.closed) throw new Ended();
        this.put(msg, bytes, Number(r.revision), undefined, frames);
        this.queuedThrough++;
      }
      const k = this.env.known.get(this.tenantId);
      if (k !== undefined && k <= this.queuedThrough) return;
    }
  }

  /**
   * Waits in the tenant's feed, which sends the stream its revisions and heartbeats from now on,
   * until it hands the stream back (a gap in the log: the next pump snapshots) or the stream ends.
   */
  private park(feed: TenantFeed<WatchStream>): Promise<void> {
    if (this.closed) throw new Ended();
    this.woken = false;
    return new Promise<void>((resolve) => {
      this.unparked = resolve;
      feed.park(this);
    });
  }

  /** Waits for a wake-up, a poll tick (notifications down) or the heartbeat; sends the heartbeat. */
  private async idle(): Promise<void> {
    const { heartbeatMs, pollMs } = this.env.limits;
    for (;;) {
      if (this.closed) throw new Ended();
      if (this.woken) {
        this.woken = false;
        return;
      }
      const now = Date.now();
      const quiet = this.outbox.length === 0 && this.inTransport === 0;
      const due = this.takenAt + heartbeatMs;
      if (quiet && now >= due) {
        this.put(this.ownHeartbeat(), 64);
        continue;
      }
      const live = this.env.live();
      const wait = Math.max(1, Math.min(quiet ? due - now : heartbeatMs, live ? Number.POSITIVE_INFINITY : pollMs));
      const timedOut = await this.sleep(wait);
      if (timedOut && !live) return; // poll the log
    }
  }

  private ownHeartbeat(): WatchResponse {
    return heartbeatMessage(this.tenantId, Math.max(this.queuedThrough, this.env.known.get(this.tenantId) ?? 0), this.env.gate);
  }

  /** Resolves true after `ms`, false when woken first. */
  private sleep(ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.wakeProducer = undefined;
        resolve(true);
      }, ms);
      this.wakeProducer = () => {
        clearTimeout(timer);
        this.wakeProducer = undefined;
        resolve(false);
      };
    });
  }

  /** Queues a message, or ends the stream when it would pass the bound (the client does not read). */
  private put(msg: WatchResponse, bytes: number, revision?: number, taken?: () => void, frames?: Buffer[]): void {
    if (this.closed) throw new Ended();
    const after = this.bufferedBytes + bytes;
    if (this.outbox.length > 0 && after > this.env.limits.maxBufferedBytes) {
      this.env.onSlowConsumer();
      this.close(new ConnectError(
        `the client did not keep up: more than ${this.env.limits.maxBufferedBytes} bytes were waiting to be sent; resume from the last revision held`,
        Code.ResourceExhausted,
      ));
      throw new Ended();
    }
    this.outbox.push({ msg, bytes, revision, taken, frames });
    this.outboxBytes += bytes;
    this.peakBufferedBytes = Math.max(this.peakBufferedBytes, this.bufferedBytes);
    if (this.sink !== undefined) this.flush();
    else this.wakeConsumer?.();
  }

  /**
   * Writes queued messages to the sink while its transport takes them; a message it holds
   * (write returned false) counts as in the transport until it drains.
   */
  private flush(): void {
    const sink = this.sink!;
    while (!this.transportBusy && !this.closed) {
      const q = this.outbox.shift();
      if (q === undefined) return;
      this.outboxBytes -= q.bytes;
      this.takenAt = Date.now();
      if (q.revision !== undefined) this.delivered = q.revision;
      q.taken?.();
      if (sink.write(q.msg, q.frames)) continue;
      this.inTransport = q.bytes;
      this.transportBusy = true;
      sink.onDrain(() => {
        this.transportBusy = false;
        this.inTransport = 0;
        this.flush();
      });
    }
  }

  /** Queues a message and waits until the transport takes it (at most `stallMs`). */
  private async putAndWait(msg: WatchResponse, bytes: number, revision?: number, frames?: Buffer[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const taken = new Promise<void>((resolve) => this.put(msg, bytes, revision, resolve, frames));
    const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), this.env.limits.stallMs)));
    const closed = new Promise<'closed'>((resolve) => {
      const prev = this.wakeProducer;
      this.wakeProducer = () => {
        prev?.();
        if (this.closed) resolve('closed');
      };
    });
    const r = await Promise.race([taken, stalled, closed]);
    clearTimeout(timer);
    this.wakeProducer = undefined;
    if (this.closed || r === 'closed') throw new Ended();
    if (r === 'stalled') {
      this.env.onSlowConsumer();
      this.close(new ConnectError(`the client did not take a snapshot chunk within ${this.env.limits.stallMs} ms; resume to start over`, Code.ResourceExhausted));
      throw new Ended();
    }
  }

  /** Drops what is queued (the stream is ending; waiting senders are released). */
  private drop(): void {
    for (const q of this.outbox.splice(0)) q.taken?.();
    this.outboxBytes = 0;
  }
}
