/**
 * Many lean Watch streams of one tenant on a real control plane, read by raw HTTP/2 clients: the
 * caught-up ones are parked in the tenant's feed; a stream whose client stops reading still ends
 * at its buffer bound while the others get every revision; streams that accept gzip get each
 * revision of 1 KiB or more gzipped (the same bytes on each), the others plain, all the same
 * messages once decoded.
 */
import * as http2 from 'node:http2';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { WatchRequestSchema, WatchResponseSchema } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';
import { populate, restClient } from '../../../test/watch-fixtures.js';

type CP = Awaited<ReturnType<typeof startTestControlPlane>>;

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Frame {
  flag: number;
  /** As written: compressed when flag is 1. */
  raw: Buffer;
  /** The message's bytes, inflated. */
  message: Buffer;
}

/** A raw gRPC Watch stream: its frames as they came, the revisions it holds, its trailers. */
function rawWatch(url: string, tenantId: string, opts: { gzip?: boolean; window?: number; paused?: boolean } = {}) {
  const session = http2.connect(url, opts.window === undefined ? {} : { settings: { initialWindowSize: opts.window } });
  const body = toBinary(WatchRequestSchema, create(WatchRequestSchema, { tenantId, acceptRowBlocks: true }));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  Buffer.from(body).copy(frame, 5);
  const req = session.request({
    ':method': 'POST', ':path': '/authz.v1.SnapshotService/Watch', 'content-type': 'application/grpc', te: 'trailers', 'x-api-key': TEST_BOOTSTRAP_KEY,
    ...(opts.gzip ? { 'grpc-accept-encoding': 'gzip' } : {}),
  });
  const w = { frames: [] as Frame[], held: 0, changes: [] as number[], trailers: undefined as http2.IncomingHttpHeaders | undefined, headers: undefined as http2.IncomingHttpHeaders | undefined, req, session };
  let pending = Buffer.alloc(0);
  const read = (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const len = pending.readUInt32BE(1);
      const raw = pending.subarray(5, 5 + len);
      const f = { flag: pending[0], raw: Buffer.from(raw), message: pending[0] === 1 ? gunzipSync(raw) : Buffer.from(raw) };
      pending = pending.subarray(5 + len);
      w.frames.push(f);
      const m = fromBinary(WatchResponseSchema, f.message);
      if (m.event.case === 'snapshot' && m.event.value.last) w.held = Number(m.event.value.revision);
      if (m.event.case === 'changes') {
        w.held = Number(m.event.value.revision);
        w.changes.push(w.held);
      }
    }
  };
  req.on('response', (h) => (w.headers = h));
  req.on('trailers', (h) => (w.trailers = h));
  if (opts.paused) req.pause();
  else req.on('data', read);
  req.end(frame);
  return { ...w, get state() {
    return w;
  }, resume: () => {
    req.on('data', read);
    req.resume();
  }, close: () => session.destroy() };
}

describeEachBackend('Watch fan-out on %s: many lean streams of one tenant', (backend) => {
  let cp: CP;
  let rest: ReturnType<typeof restClient>;
  let t: Awaited<ReturnType<typeof populate>>;
  const bound = 65_536;

  beforeAll(async () => {
    cp = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '100', SERVICE_WATCH_MAX_BUFFERED_BYTES: String(bound) });
    rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
    t = await populate(rest, 'fanout');
  });
  afterAll(() => cp?.close());

  const committed = async (tenantId = t.tenantId) => Number(((await cp.db.orm.em.fork().execute('select revision from tenants where id = ?', [tenantId])) as { revision: string }[])[0].revision);

  it('a stream whose client stops reading ends at its buffer bound; the others of its tenant get every revision, parked', async () => {
    const readers = Array.from({ length: 6 }, () => rawWatch(cp.url, t.tenantId));
    const slow = rawWatch(cp.url, t.tenantId, { window: 16_384, paused: true });
    const start = await committed();
    await until(() => readers.every((r) => r.state.held === start), 'every snapshot');
    await until(() => cp.watch.feed(t.tenantId)?.parkedCount === 7, 'all seven parked');
    let writes = 0;
    for (; writes < 120 && cp.watch.stats().slowConsumers === 0; writes++) {
      await rest('PATCH', `/resources/${t.resourceIds[writes % 6]}`, { attributes: { writes, pad: 'y'.repeat(2_000) } });
    }
    await until(() => cp.watch.stats().slowConsumers === 1, 'the slow stream to be ended');
    expect(cp.watch.stats().maxStreamBufferedBytes).toBeLessThanOrEqual(bound + 8_192);
    // The readers did not wait for it, and go on after it.
    await rest('PATCH', `/resources/${t.resourceIds[0]}`, { attributes: { after: true } });
    writes++;
    const target = start + writes;
    await until(() => readers.every((r) => r.state.held === target), 'every revision on every reader');
    for (const r of readers) expect(r.state.changes).toEqual(Array.from({ length: writes }, (_, i) => start + i + 1));
    expect(cp.watch.stats().streams).toBe(6);
    expect(cp.watch.feed(t.tenantId)?.parkedCount).toBe(6);
    slow.resume();
    await until(() => slow.state.trailers !== undefined, 'the slow stream\'s trailers');
    expect(slow.state.trailers!['grpc-status']).toBe(String(Code.ResourceExhausted));
    for (const r of [...readers, slow]) r.close();
    await until(() => cp.watch.stats().streams === 0, 'the streams closed');
  });

  it('compresses per stream: gzip streams get a revision of 1 KiB or more gzipped, the same bytes each, the others plain; all decode alike', async () => {
    // A tenant of its own: the first test's 2 KB revisions after the kept snapshot would pass the small bound on catching up.
    const t2 = await populate(rest, 'compressed');
    const gz = [rawWatch(cp.url, t2.tenantId, { gzip: true }), rawWatch(cp.url, t2.tenantId, { gzip: true })];
    const plain = rawWatch(cp.url, t2.tenantId);
    const start = await committed(t2.tenantId);
    await until(() => [...gz, plain].every((r) => r.state.held === start), 'every snapshot');
    expect(gz[0].state.headers!['grpc-encoding']).toBe('gzip');
    expect(plain.state.headers!['grpc-encoding']).toBeUndefined();
    const before = [...gz, plain].map((r) => r.state.frames.length);
    await rest('PATCH', `/resources/${t2.resourceIds[1]}`, { attributes: { big: 'z'.repeat(3_000) } });
    await rest('PATCH', `/resources/${t2.resourceIds[2]}`, { attributes: { small: 1 } });
    await until(() => [...gz, plain].every((r) => r.state.held === start + 2), 'both revisions everywhere');
    const changes = (r: ReturnType<typeof rawWatch>, i: number) => r.state.frames.slice(before[i]).filter((f) => fromBinary(WatchResponseSchema, f.message).event.case === 'changes');
    const [g0, g1, p] = [changes(gz[0], 0), changes(gz[1], 1), changes(plain, 2)];
    expect([g0.length, g1.length, p.length]).toEqual([2, 2, 2]);
    // The big one gzipped, byte for byte alike on both gzip streams; the small one plain everywhere.
    expect([g0[0].flag, g0[1].flag, p[0].flag, p[1].flag]).toEqual([1, 0, 0, 0]);
    expect(g0[0].raw.equals(g1[0].raw)).toBe(true);
    for (let i = 0; i < 2; i++) expect(g0[i].message.equals(p[i].message)).toBe(true);
    expect(p[0].message.length).toBeGreaterThan(3_000);
    for (const r of [...gz, plain]) r.close();
    await until(() => cp.watch.stats().streams === 0, 'the streams closed');
  });
});
