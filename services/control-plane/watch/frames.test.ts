/**
 * The frames the lean Watch path writes, per encoding: a revision's message is encoded once for
 * every stream (the same Buffer), and its bytes are the ones connect-node would write for that
 * stream, plain or gzipped (its compressMinBytes, its gzip), so sharing them changes nothing a
 * client receives.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { compressionGzip } from '@connectrpc/connect-node';
import { RevisionChangesSchema, SnapshotChunkSchema, WatchResponseSchema, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { COMPRESS_MIN_BYTES, framesOf, prepareFrames } from './frames.js';
import { heartbeatMessage } from './fanout.js';
import { changesMessage, snapshotParts } from './stream.js';

/** A gRPC envelope with `flag`, as connect-node writes one. */
function envelope(flag: number, m: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(m.length, 1);
  return Buffer.concat([head, m]);
}

/** What connect-node writes for `msg` on a stream that negotiated `gzip` (or none). */
async function connectNodeFrame(msg: WatchResponse, gzip: boolean): Promise<Buffer> {
  const bytes = toBinary(WatchResponseSchema, msg);
  if (!gzip || bytes.length < COMPRESS_MIN_BYTES) return envelope(0, bytes);
  return envelope(1, await compressionGzip.compress(bytes));
}

const revision = (n: number, rows: number) => create(RevisionChangesSchema, {
  tenantId: 'tenant_1', revision: BigInt(n),
  changes: Array.from({ length: rows }, (_, i) => ({ op: 1, kind: 'resource', id: `resource_${i}`, json: JSON.stringify({ id: `resource_${i}`, attributes: { n: i, text: 'x'.repeat(40) } }) })),
});

describe('Watch frames (frames.ts)', () => {
  it('a revision: one encoding per revision and encoding, byte for byte what connect-node writes for each stream', async () => {
    for (const rows of [1, 40]) {
      const r = revision(rows, rows);
      const { msg } = changesMessage(r);
      // Another stream's message of the same revision (e.g. read by another path) shares the bytes too.
      const again = create(WatchResponseSchema, { event: { case: 'changes', value: r } });
      expect(changesMessage(r).msg).toBe(msg);
      const plain = framesOf(msg);
      expect(plain).toHaveLength(1);
      expect(plain[0].equals(await connectNodeFrame(msg, false))).toBe(true);
      expect(framesOf(again)[0]).toBe(plain[0]);

      const prepared = (await prepareFrames(msg, 'gzip'))!;
      const gz = framesOf(msg, 'gzip');
      expect(gz[0]).toBe(prepared[0]);
      expect(framesOf(again, 'gzip')[0]).toBe(gz[0]);
      expect(gz[0].equals(await connectNodeFrame(msg, true))).toBe(true);
      const big = toBinary(WatchResponseSchema, msg).length >= COMPRESS_MIN_BYTES;
      expect(big).toBe(rows === 40);
      expect(gz[0][0]).toBe(big ? 1 : 0);
      const body = big ? gunzipSync(gz[0].subarray(5)) : gz[0].subarray(5);
      expect(toBinary(WatchResponseSchema, fromBinary(WatchResponseSchema, body))).toEqual(toBinary(WatchResponseSchema, msg));
    }
    expect(prepareFrames(changesMessage(revision(3, 3)).msg, 'identity')).toBeUndefined();
  });

  it('gzips a revision not prepared beforehand on the spot, to the same bytes', async () => {
    const { msg } = changesMessage(revision(7, 60));
    const gz = framesOf(msg, 'gzip');
    expect(gz[0].equals(await connectNodeFrame(msg, true))).toBe(true);
    expect(framesOf(msg, 'gzip')[0]).toBe(gz[0]);
  });

  it('a heartbeat made for a tick is encoded once for the streams it is written to', async () => {
    const beat = heartbeatMessage('tenant_1', 9, 'off');
    expect(framesOf(beat)[0]).toBe(framesOf(beat)[0]);
    expect(framesOf(beat, 'gzip')[0].equals(await connectNodeFrame(beat, true))).toBe(true);
  });

  it('a kept snapshot chunk, gzipped per stream, is what connect-node writes for it', async () => {
    const chunk = create(SnapshotChunkSchema, {
      tenantId: 't', revision: 7n, index: 0, last: true, resourceScopeGate: 'off',
      entities: Array.from({ length: 200 }, (_, i) => ({ kind: 'subject', id: `subject_${i}`, json: `{"id":"subject_${i}","type":"user"}` })),
    });
    const full = create(WatchResponseSchema, { event: { case: 'snapshot', value: chunk } });
    for await (const part of snapshotParts((async function* () {
      yield chunk;
    })(), false)) {
      const frames = (await prepareFrames(part.msg, 'gzip'))!;
      expect(frames).toHaveLength(1);
      expect(frames[0].equals(await connectNodeFrame(full, true))).toBe(true);
      expect(Buffer.concat(framesOf(part.msg)).equals(await connectNodeFrame(full, false))).toBe(true);
    }
  });
});
