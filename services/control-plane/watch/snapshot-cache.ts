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
 * Memory: at most `budgetBytes` of chunks in all (their estimated encoded size, chunkBytes()),
 * least recently used evicted first. A snapshot larger than the budget is not kept (it is
 * recorded only up to the budget, then let go). Chunks are shared by every stream that serves
 * them and never changed once made (snapshot.ts gives each chunk buffers of its own).
 *
 * Not done: streams that start while a snapshot is being made each make their own (no single
 * flight); the first of a rollout's simultaneous starts fills the cache for the later ones.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { compactedThrough } from '../../store/compaction.js';
import { readCommittedRevision } from '../known-revisions.js';
import type { SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';

/** How a stream's snapshot chunks are encoded (see SnapshotOptions): entries never mix them. */
export type SnapshotFormat = 'blocks' | 'entities' | 'json';

/** Revisions a client may have to replay after a cached snapshot before a fresh one is made instead. */
export const MAX_REPLAY_REVISIONS = 10_000;

interface Entry {
  revision: number;
  chunks: { chunk: SnapshotChunk; bytes: number }[];
  bytes: number;
}

export interface SnapshotCacheStats {
  /** Snapshots served from the cache. */
  hits: number;
  /** Snapshots made from the database (none usable was kept). */
  misses: number;
  /** Made snapshots not kept: larger than the whole budget. */
  tooLarge: number;
  /** Entries dropped unused: the log no longer reaches back to them, or they outlived their tenant's revision. */
  invalidated: number;
  entries: number;
  bytes: number;
}

export class SnapshotCache {
  /** By `tenantId|format`, least recently used first (a Map keeps insertion order). */
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  private readonly counts = { hits: 0, misses: 0, tooLarge: 0, invalidated: 0 };

  constructor(readonly budgetBytes: number) {}

  stats(): SnapshotCacheStats {
    return { ...this.counts, entries: this.entries.size, bytes: this.total };
  }

  /**
   * The chunks of a kept snapshot of the tenant in `format` that a stream may send now, else
   * undefined (counted as a miss: the caller makes one). `not_found` for a tenant that is gone.
   */
  async lookup(em: EntityManager, tenantId: string, format: SnapshotFormat): Promise<SnapshotChunk[] | undefined> {
    const key = `${tenantId}|${format}`;
    const entry = this.entries.get(key);
    if (entry === undefined) {
      this.counts.misses++;
      return undefined;
    }
    // From the database, not the process's known revision: a deleted tenant must fail as the
    // snapshot read would (readCommittedRevision throws not_found), and only the database knows
    // how far the log has been compacted.
    let committed: number;
    try {
      committed = await readCommittedRevision(em, tenantId);
    } catch (err) {
      this.drop(key);
      throw err;
    }
    const horizon = await compactedThrough(em, tenantId);
    if (this.entries.get(key) !== entry) return this.lookup(em, tenantId, format);
    if (entry.revision < horizon || entry.revision > committed || committed - entry.revision > MAX_REPLAY_REVISIONS) {
      this.drop(key);
      this.counts.invalidated++;
      this.counts.misses++;
      return undefined;
    }
    // Most recently used: last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.counts.hits++;
    return entry.chunks.map((c) => c.chunk);
  }

  /**
   * Passes `chunks` through, keeping them: when the last one has gone through and they fit the
   * budget, they replace whatever was kept for the tenant in `format`.
   */
  async *record(tenantId: string, format: SnapshotFormat, chunks: AsyncIterable<SnapshotChunk>, bytesOf: (c: SnapshotChunk) => number): AsyncGenerator<SnapshotChunk> {
    let kept: Entry['chunks'] | undefined = this.budgetBytes > 0 ? [] : undefined;
    let bytes = 0;
    for await (const chunk of chunks) {
      if (kept !== undefined) {
        const n = bytesOf(chunk);
        bytes += n;
        if (bytes > this.budgetBytes) {
          kept = undefined;
          this.counts.tooLarge++;
        } else kept.push({ chunk, bytes: n });
      }
      if (kept !== undefined && chunk.last) this.store(`${tenantId}|${format}`, { revision: Number(chunk.revision), chunks: kept, bytes });
      yield chunk;
    }
  }

  private store(key: string, entry: Entry): void {
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
