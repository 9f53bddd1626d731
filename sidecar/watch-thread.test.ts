/**
 * The Watch stream through its worker thread against what the connect client gives on the
 * main thread: the same messages, the same errors, the same cancellations, and a read-ahead
 * that stops at its bound when the main thread stops taking messages.
 */
import { existsSync } from 'node:fs';
import http2 from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { compressionGzip, createGrpcTransport } from '@connectrpc/connect-node';
import { Change_Op, WatchResponseSchema } from '../gen/authz/v1/snapshot_service_pb.js';
import { RAW_SNAPSHOT_SERVICE, decodeWatchResponse } from './snapshot-wire.js';
import { ROWS, TENANT, changes, heartbeat, scriptedControlPlane, snapshot } from '../test/scripted-control-plane.js';
import { WatchThread, WideWindowSessions, cgroupCpuQuota, releaseMessage, soleBuffer, useWatchThread, watchSource, type UnknownFields } from './watch-thread.js';

const MiB = 1024 * 1024;
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

function thread(baseUrl: string, config: { gzip?: boolean; readAheadBytes?: number; streamWindowBytes?: number } = {}): WatchThread {
  const t = new WatchThread({ baseUrl, gzip: config.gzip ?? false, streamWindowBytes: config.streamWindowBytes ?? 8 * MiB, readAheadBytes: config.readAheadBytes ?? 8 * MiB });
  open.push(t);
  return t;
}

const request = { tenantId: TENANT, fromRevision: 7n, acceptRowBlocks: true };
const headers = { 'x-api-key': 'azk_thread_test' };

/** What decodeWatchResponse makes of each message, comparable with toEqual. */
type Raw = { $unknown?: UnknownFields['$unknown'] };

function decoded(m: Raw) {
  const event = decodeWatchResponse(m).event;
  if (event.case !== 'snapshot') return event;
  const c = event.value;
  return { ...c, bytes: undefined, ranges: undefined, entities: Array.from({ length: c.count }, (_, i) => [c.kindText(i), c.id(i), c.json(i)]) };
}

async function takeAll(it: AsyncIterable<Raw>, n: number) {
  const out: ReturnType<typeof decoded>[] = [];
  for await (const m of it) {
    out.push(decoded(m));
    if (out.length === n) break;
  }
  return out;
}

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return err as ConnectError;
  }
  throw new Error('expected a failure');
}

const script: MessageInitShape<typeof WatchResponseSchema>[] = [
  snapshot(7, 0, false, ROWS.slice(0, 5)),
  snapshot(7, 1, true, ROWS.slice(5), 'strict'),
  changes(8, [{ op: Change_Op.UPSERT, kind: ROWS[1][0], row: { ...ROWS[1][1], externalId: 'ü-ä ✓' } }, { op: Change_Op.DELETE, kind: 'resource', id: 'resource_doc1' }]),
  heartbeat(8),
  // Larger than gzip's threshold and than one HTTP/2 frame.
  snapshot(9, 0, true, Array.from({ length: 2000 }, (_, i) => ['subject', { id: `subject_${i}`, type: 'user', externalId: `user-${i}` }] as [string, Record<string, unknown>])),
];

describe('WatchThread', () => {
  it.each([false, true])('hands over every message as the connect client decodes it, with its request and headers (gzip %s)', async (gzip) => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const direct = createClient(RAW_SNAPSHOT_SERVICE, createGrpcTransport({ baseUrl: cp.server.url, acceptCompression: gzip ? [compressionGzip] : [] }));
    const results = [];
    for (const watch of [(s: AbortSignal) => thread(cp.server.url, { gzip }).watch(request, { signal: s, headers }), (s: AbortSignal) => direct.watch(request, { signal: s, headers })]) {
      const ac = new AbortController();
      const taking = takeAll(watch(ac.signal), script.length);
      const s = await cp.next();
      expect(s.request.tenantId).toBe(TENANT);
      expect(s.request.fromRevision).toBe(7n);
      expect(s.headers.get('x-api-key')).toBe('azk_thread_test');
      for (const m of script) s.push(m);
      results.push(await taking);
      ac.abort();
    }
    expect(results[0]).toHaveLength(script.length);
    expect(results[0]).toEqual(results[1]);
    expect(results[0][4]).toMatchObject({ revision: 9n, count: 2000 });
  });

  it('fails with the same error as the connect client: code, message and metadata', async () => {
    const refusal = new ConnectError('key revoked', Code.Unauthenticated, { 'x-why': 'revoked' });
    const cp = await scriptedControlPlane(() => refusal);
    open.push(cp.server);
    const direct = createClient(RAW_SNAPSHOT_SERVICE, createGrpcTransport({ baseUrl: cp.server.url }));
    const viaThread = await failure(takeAll(thread(cp.server.url).watch(request, { signal: new AbortController().signal, headers }), 1));
    const viaClient = await failure(takeAll(direct.watch(request, { signal: new AbortController().signal, headers }), 1));
    expect(viaThread).toBeInstanceOf(ConnectError);
    expect([viaThread.code, viaThread.rawMessage, viaThread.metadata.get('x-why')]).toEqual([Code.Unauthenticated, 'key revoked', 'revoked']);
    expect([viaThread.code, viaThread.rawMessage, viaThread.metadata.get('x-why')]).toEqual([viaClient.code, viaClient.rawMessage, viaClient.metadata.get('x-why')]);
  });

  it('ends as the stream ends, and fails mid-stream with the error sent after the messages before it', async () => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const t = thread(cp.server.url);
    const got: unknown[] = [];
    const run = (async () => {
      for await (const m of t.watch(request, { signal: new AbortController().signal, headers })) got.push(decoded(m));
    })();
    const s = await cp.next();
    s.push(heartbeat(3));
    s.push(heartbeat(4));
    s.fail(new ConnectError('going away', Code.Unavailable));
    const err = await failure(run);
    expect([err.code, err.rawMessage]).toEqual([Code.Unavailable, 'going away']);
    expect(got).toHaveLength(2);
  });

  it('an abort ends the iteration as connect does (the reason, or canceled) and closes the stream at the control plane', async () => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const t = thread(cp.server.url);
    for (const reason of [new Error('the stream was silent too long'), undefined]) {
      const ac = new AbortController();
      const run = takeAll(t.watch(request, { signal: ac.signal, headers }), 10);
      const s = await cp.next();
      s.push(heartbeat(1));
      await new Promise((r) => setTimeout(r, 50));
      ac.abort(reason);
      const err = await failure(run);
      expect(err.code).toBe(reason ? Code.Unknown : Code.Canceled);
      if (reason) expect(err.rawMessage).toBe(reason.message);
      await s.closed;
      expect(s.done).toBe(true);
    }
  });

  it('leaving the loop early closes the stream at the control plane', async () => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const t = thread(cp.server.url);
    const run = takeAll(t.watch(request, { signal: new AbortController().signal, headers }), 1);
    const s = await cp.next();
    s.push(heartbeat(1));
    expect(await run).toHaveLength(1);
    await s.closed;
  });

  it('close() ends open calls with canceled; a later call starts a new worker', async () => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const t = thread(cp.server.url);
    const ended = failure(takeAll(t.watch(request, { signal: new AbortController().signal, headers }), 10));
    await cp.next();
    await t.close();
    expect((await ended).code).toBe(Code.Canceled);
    const again = takeAll(t.watch(request, { signal: new AbortController().signal, headers }), 1);
    (await cp.next()).push(heartbeat(5));
    expect(await again).toMatchObject([{ case: 'heartbeat', value: { revision: 5n } }]);
  });

  it('reads ahead no further than its bound while the main thread takes nothing, then hands over everything in order', async () => {
    const messageBytes = 256 * 1024;
    const total = 64;
    const server = await floodingServer(messageBytes, total);
    open.push(server);
    const t = thread(server.url, { readAheadBytes: 1 * MiB, streamWindowBytes: 1 * MiB });
    const it = t.watch(request, { signal: new AbortController().signal, headers })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    // The main thread now takes nothing for a while; the server writes what flow control lets it.
    await new Promise((r) => setTimeout(r, 500));
    const stalled = server.written();
    await new Promise((r) => setTimeout(r, 300));
    expect(server.written()).toBe(stalled);
    // Read-ahead (1 MiB) + the stream's window (1 MiB) + what the sockets and HTTP/2 buffers hold.
    expect(stalled * messageBytes).toBeLessThan(8 * MiB);
    expect(stalled).toBeLessThan(total);
    const revisions = [decodeWatchResponse(first.value as UnknownFields).event.value!.revision];
    for (let r = await it.next(); !r.done; r = await it.next()) {
      revisions.push(decodeWatchResponse(r.value).event.value!.revision);
      if (revisions.length === total) break;
    }
    expect(revisions).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
  });
});

describe('a message\'s buffer, freed once applied', () => {
  const KiB = 1024;
  /** Fields cut from `buffer` as protobuf-es cuts them: each after a one-byte tag. */
  const fieldsOf = (buffer: ArrayBuffer, sizes: number[]) => {
    let at = 0;
    return sizes.map((n) => {
      const data = new Uint8Array(buffer, at + 1, n);
      at += 1 + n;
      return { no: 1, wireType: 2, data };
    });
  };

  it('is the message\'s own only when its fields fill a large buffer but for their tags', () => {
    const own = new ArrayBuffer(128 * KiB);
    expect(soleBuffer(fieldsOf(own, [100 * KiB - 1, 28 * KiB - 1]))).toBe(own);
    // 100 bytes the fields do not account for: something else may lie there.
    expect(soleBuffer(fieldsOf(own, [100 * KiB - 1, 28 * KiB - 101]))).toBeUndefined();
    // Small: it may be Node's shared pool.
    const small = new ArrayBuffer(4 * KiB);
    expect(soleBuffer(fieldsOf(small, [4 * KiB - 1]))).toBeUndefined();
    // Fields in two buffers.
    const other = new ArrayBuffer(128 * KiB);
    expect(soleBuffer([...fieldsOf(own, [100 * KiB - 1]), ...fieldsOf(other, [28 * KiB - 1])])).toBeUndefined();
    expect(soleBuffer([])).toBeUndefined();
  });

  it('releaseMessage detaches a message\'s own buffer and leaves any other alone', () => {
    const own = new ArrayBuffer(128 * KiB);
    releaseMessage({ $unknown: fieldsOf(own, [128 * KiB - 1]) });
    expect(own.byteLength).toBe(0);
    // A small Buffer lies in Node's pool with others: detaching it would corrupt them.
    const pooled = Buffer.from('a heartbeat');
    const neighbour = Buffer.from('another buffer of the pool');
    releaseMessage({ $unknown: [{ no: 3, wireType: 2, data: pooled.subarray(1) }] });
    expect(pooled.toString()).toBe('a heartbeat');
    expect(neighbour.toString()).toBe('another buffer of the pool');
  });

  it.each([false, true])('holds each large message received alone, on either thread, so it is freed (gzip %s)', async (gzip) => {
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const direct = createClient(RAW_SNAPSHOT_SERVICE, createGrpcTransport({ baseUrl: cp.server.url, acceptCompression: gzip ? [compressionGzip] : [] }));
    for (const watch of [(s: AbortSignal) => thread(cp.server.url, { gzip }).watch(request, { signal: s, headers }), (s: AbortSignal) => direct.watch(request, { signal: s, headers })]) {
      const ac = new AbortController();
      const taking = (async () => {
        const seen: { sole: boolean; decoded: unknown; after: number }[] = [];
        for await (const m of watch(ac.signal)) {
          const sole = soleBuffer(m.$unknown ?? []);
          const before = decoded(m);
          releaseMessage(m);
          seen.push({ sole: sole !== undefined, decoded: before, after: sole?.byteLength ?? -1 });
          if (seen.length === script.length) break;
        }
        return seen;
      })();
      const s = await cp.next();
      for (const m of script) s.push(m);
      const seen = await taking;
      ac.abort();
      // The 2,000-row chunk (~100 KiB) is held alone and detached once taken; the small ones are left.
      expect(seen.map((x) => x.sole)).toEqual([false, false, false, false, true]);
      expect(seen[4].after).toBe(0);
      expect(seen[4].decoded).toMatchObject({ revision: 9n, count: 2000 });
    }
  });
});

describe('flow control of the Watch stream', () => {
  it('opens the connection\'s window as wide as the stream\'s (HTTP/2 starts it at 64 KiB)', async () => {
    const server = await floodingServer(1024, 1);
    const sessions = new WideWindowSessions(server.url, 4 * MiB);
    try {
      const stream = await sessions.request('POST', '/authz.v1.SnapshotService/Watch', { 'content-type': 'application/grpc' }, {});
      const state = stream.session!.state;
      expect(state.localWindowSize).toBeGreaterThanOrEqual(4 * MiB - 64 * 1024);
      // Once per session: a second stream leaves it as it is.
      const again = await sessions.request('POST', '/authz.v1.SnapshotService/Watch', { 'content-type': 'application/grpc' }, {});
      expect(again.session).toBe(stream.session);
      expect(again.session!.state.localWindowSize).toBeLessThanOrEqual(4 * MiB);
      for (const s of [stream, again]) {
        s.on('error', () => undefined);
        s.close();
      }
      stream.session!.close();
    } finally {
      await server.close();
    }
  });
});

describe('the built worker (dist/, as containers run it)', () => {
  const built = new URL('../dist/sidecar/watch-thread.js', import.meta.url);
  it.runIf(existsSync(built))('starts from its .js file and hands over messages', async () => {
    const { WatchThread: BuiltThread } = (await import(built.href)) as typeof import('./watch-thread.js');
    const cp = await scriptedControlPlane();
    open.push(cp.server);
    const t = new BuiltThread({ baseUrl: cp.server.url, gzip: false, streamWindowBytes: MiB, readAheadBytes: MiB });
    open.push(t);
    const run = takeAll(t.watch(request, { signal: new AbortController().signal, headers }), 2);
    const s = await cp.next();
    s.push(heartbeat(3));
    s.push(script[0]);
    expect(await run).toMatchObject([{ case: 'heartbeat', value: { revision: 3n } }, { revision: 7n, index: 0, count: 5 }]);
  });
});

describe('where the Watch stream is received', () => {
  it('on a worker thread only when asked to; the main thread otherwise', async () => {
    const config = { baseUrl: 'http://127.0.0.1:1', gzip: false, streamWindowBytes: MiB, readAheadBytes: MiB };
    expect(watchSource(config, true)).toBeInstanceOf(WatchThread);
    expect(watchSource(config, false)).not.toBeInstanceOf(WatchThread);
  });

  it('auto: with two CPUs or more, counting the CPUs it may run on and its cgroup quota', () => {
    expect(useWatchThread(2, undefined)).toBe(true);
    expect(useWatchThread(1, undefined)).toBe(false);
    expect(useWatchThread(8, 1)).toBe(false);
    expect(useWatchThread(8, 1.5)).toBe(false);
    expect(useWatchThread(8, 2)).toBe(true);
    expect(useWatchThread(1, 4)).toBe(false);
  });

  it('reads the cgroup quota from cgroup v2, else v1; unlimited or unreadable is no quota', () => {
    const files = (f: Record<string, string>) => (path: string) => f[path];
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }))).toBe(1.5);
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '200000\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }))).toBe(2);
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }))).toBeUndefined();
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': 'garbage' }))).toBeUndefined();
    expect(cgroupCpuQuota(files({}))).toBeUndefined();
  });
});

/**
 * A Watch endpoint on a bare HTTP/2 server that writes `total` heartbeats padded to `bytes`
 * each as fast as flow control lets it, counting what it managed to write.
 */
async function floodingServer(bytes: number, total: number) {
  const server = http2.createServer();
  let written = 0;
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' });
    stream.on('error', () => undefined);
    void (async () => {
      for (let i = 1; i <= total && !stream.destroyed; i++) {
        const body = toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'heartbeat', value: { tenantId: TENANT, revision: BigInt(i), resourceScopeGate: 'x'.repeat(bytes) } } }));
        const frame = Buffer.alloc(5 + body.length);
        frame.writeUInt32BE(body.length, 1);
        frame.set(body, 5);
        const more = stream.write(frame);
        written++;
        if (!more) await new Promise((r) => stream.once('drain', r));
      }
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    written: () => written,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      setTimeout(r, 300).unref();
    }),
  };
}
