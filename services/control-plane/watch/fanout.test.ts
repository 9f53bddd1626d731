/**
 * A tenant's feed (fanout.ts) with model streams and a model change log: one read per commit for
 * every parked stream, each stream given only the revisions it lacks, in order; a stream the log
 * no longer reaches handed back to its producer; a read error ending them all; heartbeats from one
 * timer, one message per tick and revision, on a grid, only to quiet streams; polling while
 * notifications are down.
 */
import { create } from '@bufbuild/protobuf';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChangeSchema, RevisionChangesSchema, type RevisionChanges, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import type { KnownRevisions } from '../known-revisions.js';
import { TenantFeed, type FeedStream } from './fanout.js';
import { SharedRevisionReads } from './shared-reads.js';

/** A stream as WatchStream behaves towards its feed. */
class ModelStream implements FeedStream {
  got: number[] = [];
  beats: WatchResponse[] = [];
  resumed = 0;
  ended: Error | undefined;
  quiet = true;
  compressed = false;
  lastTakenAt = Date.now();
  constructor(public sent: number) {}
  offer(revisions: readonly RevisionChanges[]): boolean {
    for (const r of revisions) {
      const n = Number(r.revision);
      if (n <= this.sent) continue;
      if (n !== this.sent + 1) return false;
      this.got.push(n);
      this.sent = n;
      this.lastTakenAt = Date.now();
    }
    return true;
  }
  heartbeat(msg: WatchResponse): void {
    this.beats.push(msg);
    this.lastTakenAt = Date.now();
  }
  resume(): void {
    this.resumed++;
  }
  close(err: Error): void {
    this.ended = err;
  }
}

/** The tenant's log from `horizon + 1` to `head`, and the revision this process knows. */
function world() {
  const w = {
    head: 10,
    horizon: 0,
    live: true,
    fail: undefined as Error | undefined,
    reads: [] as number[],
  };
  const log = async (tenantId: string, after: number): Promise<RevisionChanges[]> => {
    w.reads.push(after);
    await Promise.resolve();
    if (w.fail) throw w.fail;
    const out = [];
    for (let r = Math.max(after, w.horizon) + 1; r <= w.head; r++) {
      out.push(create(RevisionChangesSchema, { tenantId, revision: BigInt(r), changes: [create(ChangeSchema, { kind: 'resource', id: `r${r}` })] }));
    }
    return out;
  };
  const reads = new SharedRevisionReads(log);
  reads.watch('t');
  const known = { get: () => (w.live ? w.head : undefined) } as unknown as KnownRevisions;
  const feed = new TenantFeed<ModelStream>('t', {
    known, reads, live: () => w.live, gate: 'off', heartbeatMs: 1_000, pollMs: 250, logRows: 1_000, prepareCompressed: async () => undefined,
  });
  return { w, reads, feed };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
};

afterEach(() => {
  vi.useRealTimers();
});

describe('TenantFeed', () => {
  it('reads once per commit for every parked stream and gives each the revisions it lacks, in order', async () => {
    const { w, reads, feed } = world();
    const streams = Array.from({ length: 200 }, () => new ModelStream(10));
    const behind = new ModelStream(8);
    for (const s of [...streams, behind]) feed.park(s);
    await settle();
    // Parking found one behind: it was given 9 and 10 from one read.
    expect(behind.got).toEqual([9, 10]);
    w.reads.length = 0;
    for (const head of [11, 12, 13]) {
      w.head = head;
      feed.wake();
      feed.wake(); // a second wake-up while the first reads: one more pass, not one more per stream
      await settle();
    }
    expect(w.reads.length).toBeLessThanOrEqual(6);
    expect(reads.databaseReads).toBeLessThanOrEqual(1 + 6);
    for (const s of streams) expect(s.got).toEqual([11, 12, 13]);
    expect(behind.got).toEqual([9, 10, 11, 12, 13]);
    expect(feed.parkedCount).toBe(201);
    feed.close();
  });

  it('hands a stream the log no longer reaches back to its producer, and goes on with the others', async () => {
    const { w, feed } = world();
    const caughtUp = new ModelStream(10);
    const stale = new ModelStream(3);
    w.horizon = 6; // compacted through 6: revision 4 is gone
    feed.park(caughtUp);
    feed.park(stale);
    w.head = 11;
    feed.wake();
    await settle();
    expect(stale.resumed).toBe(1);
    expect(stale.got).toEqual([]);
    expect(feed.isParked(stale)).toBe(false);
    expect(caughtUp.got).toEqual([11]);
    expect(feed.isParked(caughtUp)).toBe(true);
    feed.close();
  });

  it('ends every parked stream with the error of a failed read', async () => {
    const { w, feed } = world();
    const streams = [new ModelStream(10), new ModelStream(10)];
    for (const s of streams) feed.park(s);
    w.fail = new Error('the database is gone');
    w.head = 11;
    feed.wake();
    await settle();
    for (const s of streams) expect(s.ended?.message).toBe('the database is gone');
    expect(feed.parkedCount).toBe(0);
  });

  it('sends quiet streams one heartbeat message per tick and revision, at most a quarter heartbeat late; none to a busy one', async () => {
    // Off the 250 ms grid: a falls due at 1,001,010 and b at 1,001,110, both in the slot ending at 1,001,250.
    vi.useFakeTimers({ now: 1_000_010 });
    const { feed } = world();
    const a = new ModelStream(10);
    const b = new ModelStream(10);
    const busy = new ModelStream(10);
    busy.quiet = false;
    // Fell quiet at different moments within one quarter of the grid.
    a.lastTakenAt = Date.now();
    vi.advanceTimersByTime(100);
    b.lastTakenAt = Date.now();
    busy.lastTakenAt = Date.now();
    for (const s of [a, b, busy]) feed.park(s);
    vi.advanceTimersByTime(1_100);
    expect(a.beats).toHaveLength(0);
    vi.advanceTimersByTime(40);
    expect(a.beats).toHaveLength(1);
    expect(b.beats).toHaveLength(1);
    expect(a.beats[0]).toBe(b.beats[0]);
    expect(busy.beats).toHaveLength(0);
    const beat = a.beats[0].event;
    expect(beat.case === 'heartbeat' && [beat.value.tenantId, beat.value.revision, beat.value.resourceScopeGate]).toEqual(['t', 10n, 'off']);
    // Then every heartbeat after the last message, all of them together.
    vi.advanceTimersByTime(1_250);
    expect([a.beats.length, b.beats.length]).toEqual([2, 2]);
    expect(a.beats[1]).toBe(b.beats[1]);
    feed.close();
  });

  it('polls the log every pollMs while notifications are down', async () => {
    vi.useFakeTimers({ now: 2_000_000 });
    const { w, feed } = world();
    w.live = false;
    const s = new ModelStream(10);
    feed.park(s);
    await vi.advanceTimersByTimeAsync(10);
    w.head = 12; // a commit this process was not told of
    await vi.advanceTimersByTimeAsync(300);
    expect(s.got).toEqual([11, 12]);
    feed.close();
  });
});
