/**
 * Whole snapshots kept after they were sent, so that the next sidecars of a tenant start from
 * them instead of from PostgreSQL: a rollout of many pods reads and encodes a tenant once. A
 * snapshot of the 1M-resource + 1M-grant tenant costs the control plane 8–12 s of CPU and holds
 * a repeatable-read transaction open as long (README, Snapshot scale); served from here, the
 * chunks cost what writing them costs.
 *
 * A snapshot at revision R stands for the tenant's state at R, which is exact forever; what can
 * go wrong is only the road from R to now. So an entry is served only while the change log
 * still holds every revision after R (the stream then sends them, as after any snapshot), when
 * R is not past the tenant's committed revision (a database restored to an earlier state), and
 * when the tenant is at most {@link MAX_REPLAY_REVISIONS} past R (beyond that a fresh snapshot is
 * cheaper for the client than the replay). Any other entry is dropped on sight. A stream that
 * finds a gap in the log after its snapshot (compacted meanwhile) reads a fresh one.
 *
 * Single flight: a stream that starts while another stream of the tenant is making a snapshot
 * in the same format follows that one (its leader) instead of reading its own: it is sent each
 * chunk as the leader makes it, the kept chunks shared. A rollout's simultaneous starts read
 * and encode the tenant once. A follower depends on its leader: when the leader fails, its
 * error ends the followers too (`not_found` for a deleted tenant); when the leader's client
 * goes away before the end, or the snapshot outgrows the budget (its chunks can then not be
 * held for followers), the followers end with `unavailable` and their clients resume as after
 * any broken stream, reading their own. A tenant whose last snapshot outgrew the budget is not
 * followed at all until one fits again. A stream told to read a fresh snapshot (a gap in the
 * log after the one it sent) neither follows nor leads.
 *
 * Memory: at most `budgetBytes` of kept chunks (their estimated encoded size, chunkBytes()),
 * least recently used evicted first; and each snapshot being made holds its chunks so far, up to
 * the same budget (then lets them go). A snapshot larger than the budget is not kept. Chunks are
 * shared by every stream that serves them and never changed once made (snapshot.ts gives each
 * chunk buffers of its own).
 */
import { Code, ConnectError } from '@connectrpc/connect';

/** What the cache needs to know of a kept piece of a snapshot (a chunk, or a message made of one). */
export interface SnapshotPiece {
  readonly revision: bigint;
  readonly last: boolean;
}

/** How a stream's snapshot chunks are encoded (see SnapshotOptions): entries never mix them. */
export type SnapshotFormat = 'blocks' | 'entities' | 'json';

/** Revisions a client may have to replay after a cached snapshot before a fresh one is made instead. */
export const MAX_REPLAY_REVISIONS = 10_000;

interface Entry<T> {
  revision: number;
  chunks: { chunk: T; bytes: number }[];
  bytes: number;
}

/** A snapshot being made by one stream and followed by others (see the module comment). */
interface Flight<T> {
  /** The chunks made so far (the leader's kept ones); emptied when the flight fails. */
  chunks: Entry<T>['chunks'];
  /** 'open' while the leader makes chunks (only then is it in `flights`), 'done' once it made the last, else why it stopped. */
  end: 'open' | 'done' | Error;
  /** Followers waiting for the next chunk or the end. */
  wake: (() => void)[];
}

/** Where a kept snapshot may be served from: the tenant's committed revision and the change log's horizon. */
export interface LogReach {
  committed: number;
  horizon: number;
}

export interface OpenOptions<T> {
  /** Only a new read will do (the stream found a gap in the log after the snapshot it sent). */
  fresh: boolean;
  /** Where a kept snapshot may be served from; throws `not_found` for a tenant that is gone. */
  reach: () => Promise<LogReach>;
  /** Reads the snapshot anew. */
  make: () => AsyncIterable<T>;
  /** A chunk's size, as counted against the budget. */
  bytesOf: (c: T) => number;
}

export interface SnapshotCacheStats {
  /** Snapshots served from the cache. */
  hits: number;
  /** Snapshots made from the database (none usable was kept or being made). */
  misses: number;
  /** Snapshots followed while another stream made them (single flight). */
  joined: number;
  /** Made snapshots not kept: larger than the whole budget. */
  tooLarge: number;
  /** Entries dropped unused: the log no longer reaches back to them, or they outlived their tenant's revision. */
  invalidated: number;
  entries: number;
  bytes: number;
}

/**
 * `T`: what is kept of each chunk (stream.ts keeps the message it sends, encoded once for
 * binary clients; tests keep chunks).
 */
export class SnapshotCache<T extends SnapshotPiece> {
  /** By `tenantId|format`, least recently used first (a Map keeps insertion order). */
  private readonly entries = new Map<string, Entry<T>>();
  private total = 0;
  private readonly flights = new Map<string, Flight<T>>();
  /** Keys whose last snapshot outgrew the budget: not followed (it would fail them) until one fits. */
  private readonly oversized = new Set<string>();
  private readonly counts = { hits: 0, misses: 0, joined: 0, tooLarge: 0, invalidated: 0 };

  constructor(readonly budgetBytes: number) {}

  stats(): SnapshotCacheStats {
    return { ...this.counts, entries: this.entries.size, bytes: this.total };
  }

  /**
   * The chunks of a snapshot of the tenant in `format` for one stream: a kept one that may be
   * served now, else the one another stream is making, else one `make` reads now (kept for the
   * next streams when it fits). `reach` reads where a kept snapshot may be served from (it
   * throws `not_found` for a tenant that is gone). `fresh`: only a new read will do.
   */
  open(
    tenantId: string,
    format: SnapshotFormat,
    opts: OpenOptions<T>,
  ): AsyncGenerator<T> {
    const key = `${tenantId}|${format}`;
    // Checked at the call, before any wait, so that streams starting together find the flight.
    const flight = opts.fresh ? undefined : this.joinable(key);
    if (flight !== undefined) return this.follow(flight);
    return this.serve(key, opts);
  }

  private joinable(key: string): Flight<T> | undefined {
    const f = this.flights.get(key);
    if (f === undefined || this.oversized.has(key)) return undefined;
    this.counts.joined++;
    return f;
  }

  private async *serve(key: string, opts: OpenOptions<T>): AsyncGenerator<T> {
    if (!opts.fresh) {
      const kept = await this.lookup(key, opts.reach);
      if (kept !== undefined) {
        yield* kept;
        return;
      }
      // Another stream may have started one during the lookup.
      const flight = this.joinable(key);
      if (flight !== undefined) {
        yield* this.follow(flight);
        return;
      }
    }
    this.counts.misses++;
    yield* this.lead(key, opts.fresh, opts.make(), opts.bytesOf);
  }

  /** A kept snapshot's chunks when it may be served now; drops one that may not. */
  private async lookup(key: string, reach: () => Promise<LogReach>): Promise<T[] | undefined> {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // From the database, not the process's known revision: a deleted tenant must fail as the
    // snapshot read would (`reach` throws not_found), and only the database knows how far the
    // log has been compacted.
    let r: LogReach;
    try {
      r = await reach();
    } catch (err) {
      this.drop(key);
      throw err;
    }
    if (this.entries.get(key) !== entry) return this.lookup(key, reach);
    if (entry.revision < r.horizon || entry.revision > r.committed || r.committed - entry.revision > MAX_REPLAY_REVISIONS) {
      this.drop(key);
      this.counts.invalidated++;
      return undefined;
    }
    // Most recently used: last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.counts.hits++;
    return entry.chunks.map((c) => c.chunk);
  }

  /**
   * Passes `chunks` through, holding them for followers and keeping the whole snapshot when it
   * fits the budget. A `fresh` read is not followed (it serves a stream that found a gap).
   */
  private async *lead(key: string, fresh: boolean, chunks: AsyncIterable<T>, bytesOf: (c: T) => number): AsyncGenerator<T> {
    let kept: Entry<T>['chunks'] | undefined = this.budgetBytes > 0 ? [] : undefined;
    // Followers read the kept chunks as they are added.
    const flight: Flight<T> | undefined = fresh || kept === undefined || this.flights.has(key) ? undefined : { chunks: kept, end: 'open', wake: [] };
    if (flight !== undefined) this.flights.set(key, flight);
    let bytes = 0;
    let finished = false;
    let failure: Error | undefined;
    try {
      for await (const chunk of chunks) {
        if (kept !== undefined) {
          const n = bytesOf(chunk);
          bytes += n;
          if (bytes > this.budgetBytes) {
            kept = undefined;
            this.counts.tooLarge++;
            this.oversized.add(key);
            if (flight !== undefined) this.end(key, flight, new ConnectError('the snapshot this stream followed outgrew SERVICE_WATCH_SNAPSHOT_CACHE_BYTES; resume to read one of its own', Code.Unavailable));
          } else {
            kept.push({ chunk, bytes: n });
            if (flight !== undefined) this.wakeAll(flight);
          }
        }
        if (chunk.last) {
          finished = true;
          if (kept !== undefined) this.store(key, { revision: Number(chunk.revision), chunks: kept, bytes });
          if (flight !== undefined) this.end(key, flight, 'done');
        }
        yield chunk;
      }
    } catch (err) {
      failure = err as Error;
      throw err;
    } finally {
      if (flight !== undefined && !finished) {
        // The leader failed (its error is the followers'), or its client went away first.
        this.end(key, flight, failure instanceof ConnectError ? failure : new ConnectError('the snapshot this stream followed was abandoned by the stream making it; resume to read one', Code.Unavailable));
      }
    }
  }

  private async *follow(flight: Flight<T>): AsyncGenerator<T> {
    for (let i = 0; ; i++) {
      while (i >= flight.chunks.length && flight.end === 'open') await new Promise<void>((wake) => flight.wake.push(wake));
      if (flight.end instanceof Error) throw flight.end;
      if (i >= flight.chunks.length) return;
      yield flight.chunks[i].chunk;
    }
  }

  /** Ends a flight: no stream joins it any more; followers see `end` once they have what it made (all of it when done). */
  private end(key: string, flight: Flight<T>, end: 'done' | Error): void {
    if (flight.end !== 'open') return;
    flight.end = end;
    if (end !== 'done') flight.chunks = [];
    if (this.flights.get(key) === flight) this.flights.delete(key);
    this.wakeAll(flight);
  }

  private wakeAll(flight: Flight<T>): void {
    const wake = flight.wake;
    flight.wake = [];
    for (const w of wake) w();
  }

  private store(key: string, entry: Entry<T>): void {
    this.oversized.delete(key);
    const old = this.entries.get(key);
    // A newer snapshot only: two streams may finish theirs out of order.
    if (old !== undefined && old.revision > entry.revision) return;
    this.drop(key);
    while (this.entries.size > 0 && this.total + entry.bytes > this.budgetBytes) this.drop(this.entries.keys().next().value as string);
    this.entries.set(key, entry);
    this.total += entry.bytes;
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }
}
