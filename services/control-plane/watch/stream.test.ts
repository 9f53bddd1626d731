/**
 * Snapshot chunks as a stream sends them (snapshotParts): for a binary client, a message carrying
 * its own encoded bytes must be written exactly as the message it stands for, and decode back to
 * it; a JSON client's is the message itself. Then what the lean Watch path writes of each message
 * (lean-watch.ts), and which calls it takes.
 */
import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { SnapshotChunkSchema, WatchResponseSchema, type SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { chunkBytes } from './snapshot.js';
import { ChunkRowBlocks } from './row-blocks.js';
import { snapshotParts } from './stream.js';
import { responseEncoding, takesWatch } from './lean-watch.js';
import { framesOf } from './frames.js';
import type { NodeServerRequest } from '../../transport/node-types.js';
import { RevisionChangesSchema, HeartbeatSchema } from '../../../gen/authz/v1/snapshot_service_pb.js';

/** Three chunks: entities, row blocks (pre-encoded unknown fields), and large enough for a 3-byte length. */
function chunks(): SnapshotChunk[] {
  const fields = ['id', 'tenantId', 'externalResourceId', 'attributes'];
  const blocks = new ChunkRowBlocks(() => ({ fields, index: new Map(fields.map((f, k) => [f, k])) }));
  for (let i = 0; i < 3_000; i++) {
    blocks.bound('resource', { id: `resource_${i}`, tenantId: 't', externalResourceId: `doc-${i} ü`, attributes: { n: i } });
    blocks.add('resource');
  }
  return [
    create(SnapshotChunkSchema, { tenantId: 't', revision: 7n, index: 0, resourceScopeGate: 'off', resourceCount: 3000n, entities: [{ kind: 'scope', id: 'scope_1', json: '{"id":"scope_1"}' }] }),
    Object.assign(create(SnapshotChunkSchema, { tenantId: 't', revision: 7n, index: 1, resourceScopeGate: 'off' }), { $unknown: blocks.take() }),
    create(SnapshotChunkSchema, { tenantId: 't', revision: 7n, index: 2, last: true, resourceScopeGate: 'off', entities: Array.from({ length: 400 }, (_, i) => ({ kind: 'subject', id: `subject_${i}`, json: `{"id":"subject_${i}","type":"user"}` })) }),
  ];
}

async function parts(json: boolean) {
  const all = chunks();
  const out = [];
  for await (const p of snapshotParts((async function* () {
    yield* all;
  })(), json)) out.push(p);
  return { all, out };
}

describe('snapshotParts', () => {
  it('for a binary client, writes each message exactly as the snapshot message it carries, which decodes back to the chunk', async () => {
    const { all, out } = await parts(false);
    expect(out).toHaveLength(3);
    expect(toBinary(SnapshotChunkSchema, all[2]).length).toBeGreaterThan(16_384);
    out.forEach((p, i) => {
      const full = create(WatchResponseSchema, { event: { case: 'snapshot', value: all[i] } });
      expect(p.msg.event.case).toBeUndefined();
      expect(Buffer.from(toBinary(WatchResponseSchema, p.msg)).equals(Buffer.from(toBinary(WatchResponseSchema, full)))).toBe(true);
      const back = fromBinary(WatchResponseSchema, toBinary(WatchResponseSchema, p.msg));
      expect(back.event.case).toBe('snapshot');
      expect(toBinary(SnapshotChunkSchema, back.event.value as SnapshotChunk)).toEqual(toBinary(SnapshotChunkSchema, all[i]));
      expect([p.index, p.revision, p.last, p.bytes]).toEqual([i, 7n, i === 2, chunkBytes(all[i])]);
    });
  });

  it("for a JSON client, keeps the message itself (a message's own bytes would be lost in JSON)", async () => {
    const { all, out } = await parts(true);
    out.forEach((p, i) => {
      expect(p.msg.event.case).toBe('snapshot');
      expect(p.msg.event.value).toBe(all[i]);
      expect(toJson(WatchResponseSchema, p.msg)).toHaveProperty('snapshot');
    });
  });
});

/** A gRPC envelope (flag 0, big-endian length) around a message, as connect-node writes one. */
const envelope = (m: Uint8Array) => Buffer.concat([Buffer.from([0, m.length >>> 24, (m.length >>> 16) & 255, (m.length >>> 8) & 255, m.length & 255]), m]);

describe('the lean Watch path (lean-watch.ts)', () => {
  it('writes every message as connect-node would: a kept chunk from its own bytes, without a copy', async () => {
    const { all, out } = await parts(false);
    out.forEach((p, i) => {
      const frames = framesOf(p.msg);
      const full = create(WatchResponseSchema, { event: { case: 'snapshot', value: all[i] } });
      expect(Buffer.concat(frames).equals(envelope(toBinary(WatchResponseSchema, full)))).toBe(true);
      // The chunk's bytes are the kept buffer itself (a view), after a 6-byte head.
      expect(frames).toHaveLength(2);
      expect(frames[0].length).toBe(6);
      expect(frames[1].buffer).toBe(p.msg.$unknown![0].data.buffer);
    });
    const changes = create(RevisionChangesSchema, { tenantId: 't', revision: 9n, changes: [{ op: 1, kind: 'scope', id: 'scope_1', json: '{"id":"scope_1"}' }] });
    const a = create(WatchResponseSchema, { event: { case: 'changes', value: changes } });
    const b = create(WatchResponseSchema, { event: { case: 'changes', value: changes } });
    expect(Buffer.concat(framesOf(a)).equals(envelope(toBinary(WatchResponseSchema, a)))).toBe(true);
    // One encoding per revision, for every stream that sends it.
    expect(framesOf(b)[0]).toBe(framesOf(a)[0]);
    const beat = create(WatchResponseSchema, { event: { case: 'heartbeat', value: create(HeartbeatSchema, { tenantId: 't', revision: 9n, resourceScopeGate: 'off' }) } });
    expect(Buffer.concat(framesOf(beat)).equals(envelope(toBinary(WatchResponseSchema, beat)))).toBe(true);
  });

  it('takes gRPC calls over HTTP/2 with the request plain and the answers plain or gzipped, and leaves every other to connect-node', () => {
    const req = (headers: Record<string, string>, over: Partial<{ method: string; url: string; httpVersionMajor: number }> = {}) =>
      ({ method: 'POST', url: '/authz.v1.SnapshotService/Watch', httpVersionMajor: 2, headers: { 'content-type': 'application/grpc', ...headers }, ...over }) as unknown as NodeServerRequest;
    expect(takesWatch(req({}))).toBe(true);
    expect(takesWatch(req({ 'content-type': 'application/grpc+proto', 'grpc-encoding': 'identity', 'grpc-accept-encoding': 'identity' }))).toBe(true);
    expect(takesWatch(req({ 'grpc-accept-encoding': 'identity, gzip' }))).toBe(true);
    expect(responseEncoding(req({ 'grpc-accept-encoding': 'identity, gzip' }))).toBe('gzip');
    expect(responseEncoding(req({ 'grpc-accept-encoding': 'identity' }))).toBe('identity');
    expect(responseEncoding(req({}))).toBe('identity');
    // The first the server knows, as connect-node chooses: brotli is left to connect-node.
    expect(takesWatch(req({ 'grpc-accept-encoding': 'gzip, br' }))).toBe(true);
    expect(takesWatch(req({ 'grpc-accept-encoding': 'br, gzip' }))).toBe(false);
    expect(takesWatch(req({ 'grpc-accept-encoding': 'br' }))).toBe(false);
    expect(takesWatch(req({ 'grpc-encoding': 'gzip' }))).toBe(false);
    expect(takesWatch(req({ 'content-encoding': 'gzip' }))).toBe(false);
    expect(takesWatch(req({ 'content-type': 'application/grpc+json' }))).toBe(false);
    expect(takesWatch(req({ 'content-type': 'application/grpc-web' }))).toBe(false);
    expect(takesWatch(req({ 'content-type': 'application/proto' }))).toBe(false);
    expect(takesWatch(req({}, { httpVersionMajor: 1 }))).toBe(false);
    expect(takesWatch(req({}, { method: 'GET' }))).toBe(false);
    expect(takesWatch(req({}, { url: '/authz.v1.DecisionService/Evaluate' }))).toBe(false);
  });
});
