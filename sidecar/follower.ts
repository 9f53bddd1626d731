/**
 * Follows one tenant's Watch stream from the control plane into a TenantIndex: a snapshot
 * (built aside while the previous index keeps answering, then swapped in), then one revision at
 * a time, exactly in order. Anything it cannot trust (another tenant's message, a revision out
 * of order or after a gap, data the index refuses) is refused: the index stays as it was and
 * the stream is resynced. The stream is reconnected with jittered exponential backoff,
 * resuming from the revision held.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import type { Logger } from 'pino';
import { Change_Op } from '../gen/authz/v1/snapshot_service_pb.js';
import { ENTITY_KINDS, TenantIndex, type Change, type GateMode, type TenantIndexBuilder } from '../services/engine/mod.js';
import type { SidecarMetrics } from './metrics.js';
import { decodeWatchResponse, type RawSnapshotChunk, type RawWatchResponse } from './snapshot-wire.js';
import { releaseMessage, tlsFailure, watchSource, type WatchSource } from './watch-thread.js';

/** Why a message was refused (the `reason` label of the metric). */
export type RefusalReason = 'other_tenant' | 'out_of_order' | 'gap' | 'malformed';

export interface FollowerOptions {
  controlPlaneUrl: string;
  /** PEM certificates trusted for an `https://` control plane besides the default roots. */
  ca?: string;
  apiKey: string;
  tenantId: string;
  maxStalenessMs: number;
  /**
   * Whether the control plane may gzip the stream (it does for messages over 1 KiB when asked):
   * `none` (the default) trades bytes on the link for the CPU of both ends.
   */
  compression?: 'gzip' | 'none';
  logger: Logger;
  metrics: SidecarMetrics;
  /** Backoff of reconnects: first delay cap and largest cap, in ms. */
  backoff?: { baseMs: number; maxMs: number };
  /** A stream silent for this long is replaced (a half-open connection); default min(10 s, staleness / 2). */
  idleMs?: number;
  /** Receive the stream on a worker thread (sidecar/watch-thread.ts); default: on this one. */
  watchThread?: boolean;
}

const ENGINE_KINDS = new Set<string>(ENTITY_KINDS);
const GATES = new Set<string>(['off', 'links-fallback', 'strict']);
/**
 * The HTTP/2 flow-control window of the Watch stream, and of its connection (watch-thread.ts,
 * WideWindowSessions): HTTP/2 starts both at 64 KiB, so a 4 MiB snapshot chunk would cross in 64
 * round trips, each waiting for this process to send a WINDOW_UPDATE between index builds.
 * Measured with `bench/watch-sidecar.ts`: the wide window takes less CPU and a quarter less time.
 */
const STREAM_WINDOW_BYTES = 8 * 1024 * 1024;
/**
 * How far the Watch thread reads ahead of the index: two 4 MiB snapshot chunks, so the next is
 * whole while one is indexed. With the stream window this bounds what a follower buffers.
 */
const READ_AHEAD_BYTES = 8 * 1024 * 1024;

/**
 * The most resources a snapshot's `resource_count` hint sizes the index for (larger hints are
 * taken as this): the hint comes from the wire, and sizing for a hint of 2^64 would exhaust
 * memory. At this cap the resource table is 4M slots (256 MiB, pages touched only as slots
 * fill), what 2M resources grow it to anyway; a larger tenant grows the table past it as a
 * tenant without a hint does.
 */
export const MAX_RESOURCE_HINT = 2_000_000;

/** The number of resources to size a snapshot's index for, from its chunk 0's hint. */
export function resourceHint(count: bigint): number {
  return count > BigInt(MAX_RESOURCE_HINT) ? MAX_RESOURCE_HINT : Number(count);
}

/** A message that cannot be trusted; the stream is dropped and resynced. */
class Refusal extends Error {
  constructor(readonly reason: RefusalReason, message: string, readonly resync: 'resume' | 'snapshot') {
    super(message);
  }
}

/** A snapshot being received: its rows indexed as they arrive (no copy of the whole tenant is held). */
interface PendingSnapshot {
  revision: number;
  next: number;
  builder: TenantIndexBuilder;
  entities: number;
  gate: GateMode;
}

export class Follower {
  /** The index decisions are answered from; undefined until the first snapshot is whole. */
  index: TenantIndex | undefined;
  /** The control plane's gate mode, as the stream last said. */
  gate: GateMode = 'off';
  /** When the last message (of any kind) arrived, epoch ms; 0 before the first. */
  lastMessageAt = 0;
  /** The tenant's committed revision, as the control plane last said. */
  upstreamRevision = 0;
  /** Why the control plane refuses this sidecar, while it does (a key or tenant it rejects). */
  refusedBy: string | undefined;
  /** Why the control plane's TLS is not trusted, while it is not (a certificate that does not verify). */
  untrusted: string | undefined;

  private readonly source: WatchSource;
  private pending: PendingSnapshot | undefined;
  private waiters: { revision: number; resolve: () => void }[] = [];
  private stopping = false;
  private attempt = 0;
  private current: AbortController | undefined;
  private running: Promise<void> | undefined;
  /** The next stream starts with a fresh snapshot, whatever revision is held. */
  private wantSnapshot = false;
  private sleep: { timer: NodeJS.Timeout; wake: () => void } | undefined;

  constructor(private readonly opts: FollowerOptions) {
    // Messages arrive undecoded, for decodeWatchResponse (see snapshot-wire.ts).
    this.source = watchSource({
      baseUrl: opts.controlPlaneUrl,
      ca: opts.ca,
      gzip: opts.compression === 'gzip',
      streamWindowBytes: STREAM_WINDOW_BYTES,
      readAheadBytes: READ_AHEAD_BYTES,
    }, opts.watchThread ?? false);
  }

  /** The revision decisions are answered at (0 before the first snapshot). */
  get revision(): number {
    return this.index?.revision ?? 0;
  }

  /** Whether decisions may be answered: a snapshot is held and a message arrived recently. */
  fresh(now = Date.now()): boolean {
    return this.index !== undefined && now - this.lastMessageAt <= this.opts.maxStalenessMs;
  }

  /** Starts following; resolves at once (the stream runs in the background). */
  start(): void {
    this.running ??= this.loop();
  }

  /** Stops following and ends the stream; waiters are released (they find no fresh index). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.current?.abort();
    if (this.sleep) {
      clearTimeout(this.sleep.timer);
      this.sleep.wake();
    }
    await this.running;
    await this.source.close();
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  /**
   * Resolves true once the index is at `revision` or later, false when `until` (epoch ms) or an
   * abort of `signal` (the caller went away) comes first. Never answers from an older state: the
   * caller checks the revision again.
   */
  async waitFor(revision: number, until: number, signal?: AbortSignal): Promise<boolean> {
    if (this.revision >= revision) return true;
    const wait = until - Date.now();
    if (wait <= 0 || this.stopping || signal?.aborted) return false;
    await new Promise<void>((resolve) => {
      const entry = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', leave);
          resolve();
        },
      };
      const leave = () => {
        this.waiters = this.waiters.filter((w) => w !== entry);
        entry.resolve();
      };
      const timer = setTimeout(leave, wait);
      signal?.addEventListener('abort', leave, { once: true });
      this.waiters.push(entry);
    });
    return this.revision >= revision;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const ac = new AbortController();
      this.current = ac;
      let failure: unknown;
      try {
        await this.follow(ac);
      } catch (err) {
        failure = err;
      }
      if (this.stopping) break;
      this.opts.metrics.reconnects.inc();
      await this.backoff(failure);
    }
  }

  /** One stream, until it fails, ends or a message is refused. */
  private async follow(ac: AbortController): Promise<void> {
    // A worker's start-up (sidecar/watch-thread.ts) does not count against the idle limit below.
    await this.source.ready();
    const fromRevision = this.wantSnapshot || !this.index ? 0n : BigInt(this.index.revision);
    this.pending = undefined;
    const idleMs = this.opts.idleMs ?? Math.min(10_000, this.opts.maxStalenessMs / 2);
    let idle = setTimeout(() => ac.abort(new Error('the stream was silent too long')), idleMs);
    try {
      const stream = this.source.watch({ tenantId: this.opts.tenantId, fromRevision, acceptRowBlocks: true }, { signal: ac.signal, headers: { 'x-api-key': this.opts.apiKey } });
      for await (const received of stream) {
        let msg: RawWatchResponse;
        try {
          msg = decodeWatchResponse(received);
        } catch (err) {
          // A message that does not decode ends the stream as the transport's own decoding would
          // (aborted first: leaving the loop by a throw alone left the stream's iterator hanging
          // in connect-node and the event loop with it, in follower.test.ts).
          ac.abort(err);
          throw err;
        }
        clearTimeout(idle);
        idle = setTimeout(() => ac.abort(new Error('the stream was silent too long')), idleMs);
        if (this.refusedBy !== undefined) {
          this.opts.logger.info({ tenantId: this.opts.tenantId }, 'the control plane accepts this sidecar again');
          this.refusedBy = undefined;
        }
        if (this.untrusted !== undefined) {
          this.opts.logger.info({ url: this.opts.controlPlaneUrl }, 'the control plane\'s TLS certificate verifies again');
          this.untrusted = undefined;
        }
        try {
          this.receive(msg);
          // Only a message that was taken counts: a stream of refused ones goes stale.
          this.lastMessageAt = Date.now();
          releaseMessage(received);
        } catch (err) {
          if (!(err instanceof Refusal)) {
            ac.abort(err);
            throw err;
          }
          this.opts.metrics.refused.inc({ reason: err.reason });
          this.opts.logger.warn({ reason: err.reason, revision: this.revision }, `refused a message from the control plane: ${err.message}; resyncing`);
          this.wantSnapshot = err.resync === 'snapshot';
          this.pending = undefined;
          ac.abort();
          return;
        }
      }
    } finally {
      clearTimeout(idle);
      this.pending = undefined;
    }
  }

  /** Applies one message, or throws a Refusal and leaves the index as it was. */
  private receive(msg: RawWatchResponse): void {
    const event = msg.event;
    const tenantId = event.case === undefined ? '' : event.value.tenantId;
    if (tenantId !== this.opts.tenantId) {
      throw new Refusal('other_tenant', `a message for tenant ${JSON.stringify(tenantId)}, not ${this.opts.tenantId}`, 'snapshot');
    }
    switch (event.case) {
      case 'heartbeat': {
        this.upstreamRevision = Number(event.value.revision);
        this.setGate(event.value.resourceScopeGate);
        // A tenant behind what this sidecar holds: the database was restored; start over.
        if (this.index && this.upstreamRevision < this.index.revision && !this.pending) {
          throw new Refusal('out_of_order', `the control plane is at revision ${this.upstreamRevision}, behind the ${this.index.revision} held`, 'snapshot');
        }
        this.attempt = 0;
        this.report();
        return;
      }
      case 'snapshot':
        return this.snapshotChunk(event.value);
      case 'changes':
        return this.changes(event.value);
      default:
        throw new Refusal('malformed', 'a message with no event', 'snapshot');
    }
  }

  private snapshotChunk(chunk: RawSnapshotChunk): void {
    const revision = Number(chunk.revision);
    if (chunk.index === 0) {
      // Sized once from the hint: growing the resource table ~17 times over a 1M-resource load cost ~0.6 s.
      const builder = TenantIndex.builder(resourceHint(chunk.resourceCount));
      this.pending = { revision, next: 0, builder, entities: 0, gate: gateOf(chunk.resourceScopeGate) ?? this.gate };
    }
    const p = this.pending;
    if (!p || p.revision !== revision || p.next !== chunk.index) {
      throw new Refusal('out_of_order', `snapshot chunk ${chunk.index} of revision ${revision} out of order`, 'snapshot');
    }
    for (let i = 0; i < chunk.count; i++) {
      const kind = chunk.kind(i);
      if (kind === undefined) throw new Refusal('malformed', `snapshot entity of unknown kind ${JSON.stringify(chunk.kindText(i))}`, 'snapshot');
      const row = parseEntityRow(chunk, i, kind);
      try {
        p.builder.add(kind, row);
      } catch (err) {
        throw new Refusal('malformed', `snapshot entity ${kind} ${chunk.id(i)} of revision ${revision} is not valid: ${(err as Error).message}`, 'snapshot');
      }
      p.entities++;
    }
    for (const block of chunk.blocks) {
      const kind = block.kind;
      if (kind === undefined) throw new Refusal('malformed', `a row block of unknown kind ${JSON.stringify(block.kindText)}`, 'snapshot');
      let rows: number;
      try {
        rows = block.rows();
      } catch (err) {
        throw new Refusal('malformed', `a ${kind} row block of revision ${revision} is not valid: ${(err as Error).message}`, 'snapshot');
      }
      for (let r = 0; r < rows; r++) {
        let row: Record<string, unknown>;
        try {
          row = block.row(r);
        } catch (err) {
          throw new Refusal('malformed', `a ${kind} row block of revision ${revision} is not valid: ${(err as Error).message}`, 'snapshot');
        }
        if (typeof row.id !== 'string') throw new Refusal('malformed', `row ${r} of a ${kind} row block of revision ${revision} has no string id`, 'snapshot');
        try {
          p.builder.add(kind, row);
        } catch (err) {
          throw new Refusal('malformed', `snapshot entity ${kind} ${row.id} of revision ${revision} is not valid: ${(err as Error).message}`, 'snapshot');
        }
        p.entities++;
      }
    }
    p.next++;
    if (!chunk.last) return;
    let index: TenantIndex;
    try {
      index = p.builder.build(revision);
    } catch (err) {
      throw new Refusal('malformed', `the snapshot of revision ${revision} is not a valid tenant state: ${(err as Error).message}`, 'snapshot');
    }
    this.pending = undefined;
    this.index = index;
    this.gate = p.gate;
    this.wantSnapshot = false;
    this.upstreamRevision = Math.max(this.upstreamRevision, revision);
    this.opts.metrics.snapshots.inc();
    this.opts.logger.info({ revision, entities: p.entities }, 'snapshot loaded');
    this.advanced();
  }

  private changes(c: Extract<RawWatchResponse['event'], { case: 'changes' }>['value']): void {
    const revision = Number(c.revision);
    if (this.pending || !this.index) throw new Refusal('out_of_order', `changes of revision ${revision} before a whole snapshot`, 'snapshot');
    const held = this.index.revision;
    if (revision <= held) throw new Refusal('out_of_order', `changes of revision ${revision}, already at ${held}`, 'resume');
    if (revision > held + 1) throw new Refusal('gap', `changes of revision ${revision} after ${held}: revisions are missing`, 'resume');
    const changes: Change[] = [];
    for (const ch of c.changes) {
      if (!ENGINE_KINDS.has(ch.kind)) throw new Refusal('malformed', `a change of unknown kind ${JSON.stringify(ch.kind)}`, 'snapshot');
      if (ch.op === Change_Op.UPSERT) changes.push({ op: 'upsert', kind: ch.kind, id: ch.id, row: parseRow(ch.json, ch.kind, ch.id) } as Change);
      else if (ch.op === Change_Op.DELETE) changes.push({ op: 'delete', kind: ch.kind, id: ch.id } as Change);
      else throw new Refusal('malformed', `a change with op ${ch.op}`, 'snapshot');
    }
    try {
      this.index.apply(revision, changes);
    } catch (err) {
      throw new Refusal('malformed', `revision ${revision} does not apply: ${(err as Error).message}`, 'snapshot');
    }
    this.upstreamRevision = Math.max(this.upstreamRevision, revision);
    if (c.committedAt) this.opts.metrics.lagSeconds.set(Math.max(0, (Date.now() - timestampMs(c.committedAt)) / 1000));
    this.advanced();
  }

  private setGate(raw: string): void {
    const gate = gateOf(raw);
    if (gate) this.gate = gate;
  }

  /** The index moved forward: release the waiters it satisfies, report. */
  private advanced(): void {
    this.attempt = 0;
    const revision = this.revision;
    const keep: typeof this.waiters = [];
    for (const w of this.waiters) (w.revision <= revision ? w.resolve() : keep.push(w));
    this.waiters = keep;
    this.report();
  }

  private report(): void {
    this.opts.metrics.revision.set(this.revision);
    this.opts.metrics.upstreamRevision.set(this.upstreamRevision);
  }

  /** Waits before the next attempt: full jitter over an exponential cap; longer when refused or not trusted. */
  private async backoff(failure: unknown): Promise<void> {
    const { baseMs, maxMs } = this.opts.backoff ?? { baseMs: 100, maxMs: 5_000 };
    const ce = failure === undefined ? undefined : ConnectError.from(failure);
    const untrusted = failure === undefined ? undefined : tlsFailure(failure);
    const keyRefused = ce !== undefined && (ce.code === Code.Unauthenticated || ce.code === Code.PermissionDenied || ce.code === Code.NotFound);
    const refused = untrusted !== undefined || keyRefused;
    if (untrusted !== undefined) {
      // Nothing is sent (the key least of all) to a control plane that does not prove who it is.
      // Like a refused key, it lasts until someone fixes it: said once, retried less often.
      const why = `${untrusted.message} (${untrusted.code})`;
      if (this.untrusted !== why) {
        const what = untrusted.certificate
          ? `the control plane's TLS certificate does not verify: ${why}; not following it, retrying (check SIDECAR_CONTROL_PLANE_CA_FILE and the names in its certificate)`
          : `the TLS handshake with the control plane failed: ${why}; not following it, retrying (check that it serves TLS at SIDECAR_CONTROL_PLANE_URL)`;
        this.opts.logger.error({ code: untrusted.code, url: this.opts.controlPlaneUrl }, what);
      }
      this.untrusted = why;
    } else if (keyRefused) {
      if (this.refusedBy !== ce.rawMessage) {
        this.opts.logger.error({ code: Code[ce.code], tenantId: this.opts.tenantId }, `the control plane refuses this sidecar: ${ce.rawMessage}; retrying`);
      }
      this.refusedBy = ce.rawMessage;
      // The key that brought this tenant's state is no longer accepted (revoked, expired, the
      // tenant gone): what it brought is not answered from any more. Decisions fail closed at
      // once, not at the staleness limit, and the next accepted stream starts from a snapshot.
      if (this.index !== undefined) {
        this.index = undefined;
        this.wantSnapshot = true;
        this.report();
      }
    } else if (ce !== undefined && ce.code !== Code.Canceled) {
      this.opts.logger.warn({ code: Code[ce.code], revision: this.revision }, `the Watch stream failed: ${ce.rawMessage}; reconnecting`);
    }
    const cap = Math.min(refused ? maxMs * 6 : maxMs, baseMs * 2 ** Math.min(this.attempt++, 16));
    const delay = Math.random() * cap;
    await new Promise<void>((wake) => {
      this.sleep = { timer: setTimeout(wake, delay), wake };
    });
    this.sleep = undefined;
  }
}

function gateOf(raw: string): GateMode | undefined {
  return GATES.has(raw) ? (raw as GateMode) : undefined;
}

/** parseRow of a chunk's entity `i` (its id decoded only for a message). */
function parseEntityRow(chunk: RawSnapshotChunk, i: number, kind: string): unknown {
  let row: unknown;
  try {
    row = JSON.parse(chunk.json(i));
  } catch {
    throw new Refusal('malformed', `the ${kind} ${chunk.id(i)} is not JSON`, 'snapshot');
  }
  const id = row !== null && typeof row === 'object' ? (row as { id?: unknown }).id : undefined;
  if (typeof id !== 'string' || !chunk.idIs(i, id)) {
    throw new Refusal('malformed', `the ${kind} ${chunk.id(i)} is not an object with that id`, 'snapshot');
  }
  return row;
}

function parseRow(json: string, kind: string, id: string): unknown {
  let row: unknown;
  try {
    row = JSON.parse(json);
  } catch {
    throw new Refusal('malformed', `the ${kind} ${id} is not JSON`, 'snapshot');
  }
  if (row === null || typeof row !== 'object' || (row as { id?: unknown }).id !== id) {
    throw new Refusal('malformed', `the ${kind} ${id} is not an object with that id`, 'snapshot');
  }
  return row;
}
