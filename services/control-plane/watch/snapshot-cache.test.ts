/**
 * The snapshot cache's memory rules on their own (what it serves, and when, is tested against
 * real streams in watch.test.ts): whole snapshots only, within the budget, least recently used
 * evicted first, and never an older snapshot over a newer one.
 */
import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { SnapshotChunkSchema, type SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { SnapshotCache } from './snapshot-cache.js';

/** A snapshot of `count` chunks at `revision`, each counted as `bytes`. */
function chunks(tenantId: string, revision: number, count: number): SnapshotChunk[] {
  return Array.from({ length: count }, (_, index) => create(SnapshotChunkSchema, { tenantId, revision: BigInt(revision), index, last: index === count - 1 }));
}

async function pass(cache: SnapshotCache, tenantId: string, all: SnapshotChunk[], bytes = 100, stopAfter = all.length): Promise<SnapshotChunk[]> {
  const out: SnapshotChunk[] = [];
  for await (const c of cache.record(tenantId, 'blocks', (async function* () {
    yield* all;
  })(), () => bytes)) {
    out.push(c);
    if (out.length === stopAfter) break;
  }
  return out;
}

describe('SnapshotCache', () => {
  it('passes every chunk through and keeps a whole snapshot within the budget', async () => {
    const cache = new SnapshotCache(1000);
    const a = chunks('tenant_a', 5, 4);
    expect(await pass(cache, 'tenant_a', a)).toEqual(a);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 400, tooLarge: 0 });
  });

  it('keeps nothing of a snapshot cut short, or larger than the whole budget', async () => {
    const cache = new SnapshotCache(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 5, 4), 100, 2);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
    expect(await pass(cache, 'tenant_b', chunks('tenant_b', 5, 11))).toHaveLength(11);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0, tooLarge: 1 });
  });

  it('evicts the least recently kept first to fit a new snapshot', async () => {
    const cache = new SnapshotCache(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 5, 4));
    await pass(cache, 'tenant_b', chunks('tenant_b', 5, 4));
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 800 });
    await pass(cache, 'tenant_c', chunks('tenant_c', 5, 3));
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 700 });
  });

  it('never replaces a snapshot with an older one of the same tenant and format', async () => {
    const cache = new SnapshotCache(1000);
    await pass(cache, 'tenant_a', chunks('tenant_a', 9, 2));
    await pass(cache, 'tenant_a', chunks('tenant_a', 7, 3));
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 200 });
    await pass(cache, 'tenant_a', chunks('tenant_a', 12, 3));
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 300 });
  });

  it('keeps nothing with a budget of 0', async () => {
    const cache = new SnapshotCache(0);
    await pass(cache, 'tenant_a', chunks('tenant_a', 5, 1), 1);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0, tooLarge: 0 });
  });
});
