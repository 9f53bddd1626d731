/**
 * The snapshot cache on its own (what it serves, and when, is also tested against real streams
 * in watch.test.ts): whole snapshots only, within the budget, least recently used evicted first,
 * never an older snapshot over a newer one; single flight: streams that start while one is
 * being made follow it, and end with its error, or `unavailable`, when it cannot finish for them.
 */
import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { SnapshotChunkSchema, type SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { MAX_REPLAY_REVISIONS, SnapshotCache, type LogReach } from './snapshot-cache.js';

/** A snapshot of `count` chunks at `revision`. */
function chunks(tenantId: string, revision: number, count: number): SnapshotChunk[] {
  return Array.from({ length: count }, (_, index) => create(SnapshotChunkSchema, { tenantId, revision: BigInt(revision), index, last: index === count - 1 }));
}

/**
 * A snapshot source the test releases chunk by chunk (`release(n)`), or fails (`fail(err)`);
 * `reads` counts how many times a stream made it, `closed` whether the one made was let go.
 */
function source(all: SnapshotChunk[]) {
  let released = 0;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const s = {
    reads: 0,
    closed: false,
    release(n = all.length) {
      released = Math.min(all.length, released + n);
      wake?.();
    },
    fail(err: Error) {
      failure = err;
      wake?.();
    },
    make: async function* (): AsyncGenerator<SnapshotChunk> {
      s.reads++;
      try {
        for (let i = 0; i < all.length; i++) {
          while (i >= released && failure === undefined) await new Promise<void>((r) => (wake = r));
          if (failure !== undefined) throw failure;
          yield all[i];
        }
      } finally {
        s.closed = true;
      }
    },
  };
  return s;
}

const REACH: LogReach = { committed: 5, horizon: 0 };

function open(cache: SnapshotCache<SnapshotChunk>, tenantId: string, make: () => AsyncIterable<SnapshotChunk>, o: { fresh?: boolean; reach?: LogReach | Error; bytes?: number } = {}) {
  return cache.open(tenantId, 'blocks', {
    fresh: o.fresh ?? false,
    reach: async () => {
      if (o.reach instanceof Error) throw o.reach;
      return o.reach ?? REACH;
    },
    make,
    bytesOf: () => o.bytes ?? 100,
  });
}

/** Every chunk of a stream (up to `stopAfter`), or the error it ended with. */
async function drain(it: AsyncGenerator<SnapshotChunk>, stopAfter = Infinity): Promise<SnapshotChunk[] | Error> {
  const out: SnapshotChunk[] = [];
  try {
    for await (const c of it) {
      out.push(c);
      if (out.length === stopAfter) break;
    }
  } catch (err) {
    return err as Error;
  }
  return out;
}

async function pass(cache: SnapshotCache<SnapshotChunk>, tenantId: string, all: SnapshotChunk[], bytes = 100, stopAfter = all.length): Promise<SnapshotChunk[] | Error> {
  return drain(open(cache, tenantId, async function* () {
    yield* all;
  }, { bytes, fresh: true }), stopAfter);
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('SnapshotCache', () => {
  it('passes every chunk through and keeps a whole snapshot within the budget', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const a = chunks('tenant_a', 5, 4);
    expect(await pass(cache, 'tenant_a', a)).toEqual(a);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 400, tooLarge: 0 });
  });

  it('keeps nothing of a snapshot cut short, or larger than the whole budget', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 5, 4), 100, 2);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
    expect(await pass(cache, 'tenant_b', chunks('tenant_b', 5, 11))).toHaveLength(11);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0, tooLarge: 1 });
  });

  it('evicts the least recently kept first to fit a new snapshot', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 5, 4));
    await pass(cache, 'tenant_b', chunks('tenant_b', 5, 4));
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 800 });
    await pass(cache, 'tenant_c', chunks('tenant_c', 5, 3));
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 700 });
  });

  it('never replaces a snapshot with an older one of the same tenant and format', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 9, 2));
    await pass(cache, 'tenant_a', chunks('tenant_a', 7, 3));
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 200 });
    await pass(cache, 'tenant_a', chunks('tenant_a', 12, 3));
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 300 });
  });

  it('keeps nothing with a budget of 0, and every stream reads its own', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(0);
    const src = source(chunks('tenant_a', 5, 2));
    const a = drain(open(cache, 'tenant_a', src.make));
    const b = drain(open(cache, 'tenant_a', src.make));
    src.release();
    expect(await a).toHaveLength(2);
    expect(await b).toHaveLength(2);
    expect(src.reads).toBe(2);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0, tooLarge: 0, joined: 0, misses: 2 });
  });

  it('serves a kept snapshot only while the log reaches back to it and it is not past the committed revision', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const a = chunks('tenant_a', 5, 2);
    await pass(cache, 'tenant_a', a);
    const never = async function* (): AsyncGenerator<SnapshotChunk> {
      throw new Error('read from the database');
    };
    expect(await drain(open(cache, 'tenant_a', never, { reach: { committed: 8, horizon: 5 } }))).toEqual(a);
    // The first read was a miss.
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1 });
    // Compacted past it, a restored database behind it, too far behind: each drops it.
    for (const reach of [{ committed: 8, horizon: 6 }, { committed: 4, horizon: 0 }, { committed: 5 + MAX_REPLAY_REVISIONS + 1, horizon: 0 }]) {
      await pass(cache, 'tenant_a', a);
      const fresh = chunks('tenant_a', reach.committed, 1);
      expect(await drain(open(cache, 'tenant_a', async function* () {
        yield* fresh;
      }, { reach }))).toEqual(fresh);
    }
    // Each pass and each read after a dropped entry: a miss.
    expect(cache.stats()).toMatchObject({ hits: 1, invalidated: 3, misses: 7 });
    // A tenant that is gone: its error, and the entry dropped.
    const gone = new ConnectError('tenant not found', Code.NotFound);
    expect(await drain(open(cache, 'tenant_a', never, { reach: gone }))).toBe(gone);
    expect(cache.stats()).toMatchObject({ entries: 0 });
  });

  it('single flight: streams starting while a snapshot is made follow it, each chunk as it is made, and it is read once', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const all = chunks('tenant_a', 5, 4);
    const src = source(all);
    const leader = open(cache, 'tenant_a', src.make);
    const first = leader.next();
    src.release(1);
    expect((await first).value).toBe(all[0]);
    // Two followers start mid-way: they get the chunks made so far, then wait for the rest.
    const seen: SnapshotChunk[] = [];
    const follower = (async () => {
      for await (const c of open(cache, 'tenant_a', src.make)) seen.push(c);
      return seen;
    })();
    const late = drain(open(cache, 'tenant_a', src.make));
    await settle();
    expect(seen).toEqual(all.slice(0, 1));
    // The leader's own reading paces the read (backpressure): the followers get each chunk as it is made for it.
    const second = leader.next();
    src.release(1);
    expect((await second).value).toBe(all[1]);
    await settle();
    expect(seen).toEqual(all.slice(0, 2));
    src.release();
    expect(await drain(leader)).toEqual(all.slice(2));
    expect(await follower).toEqual(all);
    expect(await late).toEqual(all);
    expect(src.reads).toBe(1);
    expect(cache.stats()).toMatchObject({ misses: 1, joined: 2, hits: 0, entries: 1 });
    // Once made, it is kept: the next stream is a hit.
    expect(await drain(open(cache, 'tenant_a', src.make))).toEqual(all);
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1, joined: 2 });
    expect(src.reads).toBe(1);
  });

  it("a leader's error ends its followers with it; the next stream reads anew", async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const all = chunks('tenant_a', 5, 3);
    const src = source(all);
    const leader = drain(open(cache, 'tenant_a', src.make));
    await settle();
    const follower = drain(open(cache, 'tenant_a', src.make));
    src.release(1);
    await settle();
    const gone = new ConnectError('tenant not found', Code.NotFound);
    src.fail(gone);
    expect(await leader).toBe(gone);
    expect(await follower).toBe(gone);
    const again = source(all);
    again.release();
    expect(await drain(open(cache, 'tenant_a', again.make))).toEqual(all);
    expect(again.reads).toBe(1);
  });

  it('a leader whose client goes away before the end ends its followers with unavailable and lets its read go', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const all = chunks('tenant_a', 5, 3);
    const src = source(all);
    const leader = open(cache, 'tenant_a', src.make);
    const first = leader.next();
    const follower = drain(open(cache, 'tenant_a', src.make));
    src.release(1);
    expect((await first).value).toBe(all[0]);
    await leader.return(undefined);
    expect(src.closed).toBe(true);
    const err = await follower;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).message).toMatch(/abandoned/);
    expect(cache.stats()).toMatchObject({ entries: 0, joined: 1, misses: 1 });
  });

  it('a snapshot outgrowing the budget ends its followers with unavailable, and the tenant is not followed until one fits', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(250);
    const all = chunks('tenant_a', 5, 3);
    const src = source(all);
    const leader = drain(open(cache, 'tenant_a', src.make));
    const follower = drain(open(cache, 'tenant_a', src.make));
    src.release();
    expect(await leader).toEqual(all);
    const err = await follower;
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).message).toMatch(/outgrew SERVICE_WATCH_SNAPSHOT_CACHE_BYTES/);
    expect(cache.stats()).toMatchObject({ tooLarge: 1, entries: 0, joined: 1 });
    // Known too large: two streams starting together each read their own.
    const big = source(all);
    const a = drain(open(cache, 'tenant_a', big.make));
    const b = drain(open(cache, 'tenant_a', big.make));
    big.release();
    expect(await a).toEqual(all);
    expect(await b).toEqual(all);
    expect(big.reads).toBe(2);
    expect(cache.stats()).toMatchObject({ joined: 1 });
    // Once one fits again, it is followed again.
    const small = source(chunks('tenant_a', 6, 2));
    const c = drain(open(cache, 'tenant_a', small.make));
    small.release();
    expect(await c).toHaveLength(2);
    const next = source(chunks('tenant_a', 7, 2));
    await pass(cache, 'tenant_b', chunks('tenant_b', 1, 1));
    const d = drain(open(cache, 'tenant_a', next.make, { reach: { committed: 7, horizon: 7 } }));
    const e = drain(open(cache, 'tenant_a', next.make, { reach: { committed: 7, horizon: 7 } }));
    await settle();
    next.release();
    expect(await d).toHaveLength(2);
    expect(await e).toHaveLength(2);
    expect(next.reads).toBe(1);
  });

  it('a stream asking for a fresh snapshot neither follows one being made nor is followed', async () => {
    const cache = new SnapshotCache<SnapshotChunk>(1000);
    const all = chunks('tenant_a', 5, 2);
    const src = source(all);
    const leader = drain(open(cache, 'tenant_a', src.make));
    const fresh = drain(open(cache, 'tenant_a', src.make, { fresh: true }));
    src.release();
    expect(await leader).toEqual(all);
    expect(await fresh).toEqual(all);
    expect(src.reads).toBe(2);
    expect(cache.stats()).toMatchObject({ joined: 0, misses: 2 });
  });
});
