/**
 * SnapshotService/Watch over a real server and PostgreSQL: the real sidecar Follower ends with
 * the control plane's own index; resume is exactly once at every message boundary; a compacted
 * log gives a fresh snapshot; tiers and reach; two control planes on one database; the
 * per-stream buffer bound for a client that does not read; shutdown ends streams promptly.
 */
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { compressionBrotli, compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import type { Compression } from '@connectrpc/connect/protocol';
import { create, toBinary } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { SnapshotChunkSchema, SnapshotService, WatchRequestSchema, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { Follower } from '../../../sidecar/follower.js';
import { sidecarMetrics } from '../../../sidecar/metrics.js';
import { TenantIndexes } from '../decision/indexes.js';
import { compactChangeLog } from '../../store/compaction.js';
import { BACKENDS, type Backend, describeEachBackend, revisionGaps, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';
import { ModelClient, indexDigest, populate, restClient } from '../../../test/watch-fixtures.js';

const logger = pino({ level: 'silent' });
type CP = Awaited<ReturnType<typeof startTestControlPlane>>;

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const codeOf = (e: unknown) => Code[ConnectError.from(e).code];

/**
 * What the suite's gRPC clients accept: nothing compressed (as a sidecar by default) or gzip is
 * served by the lean path (lean-watch.ts), brotli by connect-node. The suite runs once with each
 * on PostgreSQL, and with the first on the embedded database too: the path is the HTTP layer's
 * choice, the backend the store's, and the store is the same whatever the path (the embedded
 * runs of the other two paths cost 80 s of CI and tested nothing the first did not).
 */
const PATHS: Record<'lean' | 'lean, gzip' | 'connect-node', { accept: Compression[]; encoding: string | null; backends: readonly Backend[] }> = {
  lean: { accept: [], encoding: null, backends: BACKENDS },
  'lean, gzip': { accept: [compressionGzip], encoding: 'gzip', backends: ['postgres'] },
  'connect-node': { accept: [compressionBrotli], encoding: 'br', backends: ['postgres'] },
};
let acceptCompression: Compression[] = [];
function watchClient(url: string) {
  return createClient(SnapshotService, createGrpcTransport({ baseUrl: url, acceptCompression }));
}

/** Reads a Watch stream into `model` until `stop` says so (then cancels it); returns the messages read. */
async function follow(url: string, key: string, tenantId: string, fromRevision: number, model: ModelClient, stop: (n: number) => boolean): Promise<number> {
  const ac = new AbortController();
  let n = 0;
  try {
    for await (const m of watchClient(url).watch({ tenantId, fromRevision: BigInt(fromRevision) }, { signal: ac.signal, headers: { 'x-api-key': key } })) {
      if (m.event.case === 'heartbeat') {
        if (stop(n)) break;
        continue;
      }
      model.apply(m);
      n++;
      if (process.env.WATCH_DEBUG) console.log('msg', m.event.case, m.event.value?.revision, model.held);
      if (stop(n)) break;
    }
  } finally {
    ac.abort();
  }
  return n;
}

async function committed(cp: CP, tenantId: string): Promise<number> {
  const rows = (await cp.db.orm.em.fork().execute('select revision from tenants where id = ?', [tenantId])) as { revision: string }[];
  return Number(rows[0].revision);
}

/** The snapshot's rows as the control plane would send them now (a model client from revision 0). */
/** The tenant's rows at its committed revision, as a new client gets them (a snapshot, kept or not, then the changes after it). */
async function freshRows(cp: CP, tenantId: string): Promise<Map<string, string>> {
  const target = await committed(cp, tenantId);
  const m = new ModelClient();
  await follow(cp.url, TEST_BOOTSTRAP_KEY, tenantId, 0, m, () => m.held !== undefined && m.held >= target);
  return m.rows;
}

for (const path of Object.keys(PATHS) as (keyof typeof PATHS)[]) describeEachBackend(`Watch on %s, the ${path} path`, PATHS[path].backends, (backend) => {
  let cp: CP;
  let rest: ReturnType<typeof restClient>;
  let t: Awaited<ReturnType<typeof populate>>;

  beforeAll(async () => {
    acceptCompression = [...PATHS[path].accept];
    // Small chunks and pages: a small tenant gives many chunks and many pages.
    cp = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '100' }, { watch: { chunkBytes: 1500, batchRows: 3 } });
    rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
    t = await populate(rest, 'acme');
  });
  afterAll(() => cp?.close());

  it('feeds the real sidecar Follower: snapshot, then changes; its index equals a fresh one', async () => {
    const metrics = sidecarMetrics(new Registry(), () => follower);
    const follower: Follower = new Follower({ controlPlaneUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY, tenantId: t.tenantId, maxStalenessMs: 5_000, logger, metrics });
    follower.start();
    try {
      await until(async () => follower.revision === (await committed(cp, t.tenantId)), 'the snapshot');
      // Changes of every op after the snapshot: updates, deletes, creates.
      await rest('PATCH', `/resources/${t.resourceIds[1]}`, { displayName: 'renamed', attributes: { n: 99 } });
      await rest('DELETE', `/role-assignments/${t.roleAssignmentId}`);
      await rest('DELETE', `/resources/${t.resourceIds[2]}`);
      await rest('POST', '/memberships', { subjectId: t.subjectIds[1], scopeId: t.scopeId });
      await rest('POST', '/projects', { tenantId: t.tenantId, name: 'p' }); // a revision with scope and project rows
      const target = await committed(cp, t.tenantId);
      await until(() => follower.revision === target, `revision ${target}`);
      expect(follower.gate).toBe('off');
      const fresh = await new TenantIndexes(cp.db, { minRevisionWaitMs: 0, maxRows: 1e9 }).get(t.tenantId);
      expect(fresh.revision).toBe(target);
      expect(await indexDigest(cp.db, t.tenantId, follower.index!)).toBe(await indexDigest(cp.db, t.tenantId, fresh));
      // Heartbeats keep it fresh while nothing changes.
      const seen = follower.lastMessageAt;
      await until(() => follower.lastMessageAt > seen, 'a heartbeat', 1_000);
      expect(follower.upstreamRevision).toBe(target);
    } finally {
      await follower.stop();
    }
  });

  it(`is served by the ${path} path`, async () => {
    // Each compresses as the client accepts (and says so); the lean path takes plain and gzip.
    const canceled = async () => Number(/authz_http_rejected_total\{reason="canceled"\} (\d+)/.exec(await (await fetch(`${cp.url}/metrics`)).text())?.[1] ?? 0);
    // Streams of earlier tests gone (each counted when it went), so this one's cancel is counted alone.
    await until(() => cp.watch.stats().streams === 0, 'earlier streams released');
    const canceledBefore = await canceled();
    const ac = new AbortController();
    let headers: Headers | undefined;
    const m = new ModelClient();
    for await (const x of watchClient(cp.url).watch({ tenantId: t.tenantId }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY }, onHeader: (h) => (headers = h) })) {
      m.apply(x);
      // Whole: a stream left mid-snapshot would end the streams following its read.
      if (m.held !== undefined) break;
    }
    ac.abort();
    expect(headers?.get('content-type')).toBe('application/grpc+proto');
    expect(headers?.get('grpc-encoding') ?? null).toBe(PATHS[path].encoding);
    // The client leaving releases its stream; the lean path counts it as canceled (connect-node
    // ends such a response itself, which the server does not count).
    await until(() => cp.watch.stats().streams === 0, 'the stream released');
    if (path !== 'connect-node') await until(async () => (await canceled()) === canceledBefore + 1, 'the cancel counted');
  });

  it('sends the snapshot in chunks of at most the chunk size, all of one revision', async () => {
    const msgs: WatchResponse[] = [];
    const m = new ModelClient();
    const ac = new AbortController();
    for await (const x of watchClient(cp.url).watch({ tenantId: t.tenantId }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
      msgs.push(x);
      m.apply(x);
      if (m.held !== undefined) break;
    }
    ac.abort();
    expect(m.chunks).toBeGreaterThan(5);
    for (const x of msgs) {
      expect(x.event.case).toBe('snapshot');
      // The estimate counts from above: the encoded chunk fits (one entity alone may not).
      if (x.event.case === 'snapshot' && x.event.value.entities.length > 1) expect(toBinary(SnapshotChunkSchema, x.event.value).length).toBeLessThanOrEqual(1500);
      if (x.event.case === 'snapshot') expect(x.event.value.resourceScopeGate).toBe('off');
    }
    expect(m.rows.size).toBeGreaterThan(15);
  });

  it('in JSON (Connect, gRPC-Web, gRPC) the snapshot carries every row as in binary, row blocks asked or not, then the changes', async () => {
    const transports = {
      'Connect JSON': createConnectTransport({ baseUrl: cp.url, httpVersion: '1.1', useBinaryFormat: false }),
      'gRPC-Web JSON': createGrpcWebTransport({ baseUrl: cp.url, httpVersion: '1.1', useBinaryFormat: false }),
      'gRPC JSON': createGrpcTransport({ baseUrl: cp.url, useBinaryFormat: false }),
    };
    for (const [name, transport] of Object.entries(transports)) {
      for (const acceptRowBlocks of [false, true]) {
        // As a binary client gets it now (each round below writes).
        const want = await freshRows(cp, t.tenantId);
        const wantAt = await committed(cp, t.tenantId);
        expect(want.size).toBeGreaterThan(15);
        const m = new ModelClient();
        const ac = new AbortController();
        let wrote = false;
        let target = 0;
        for await (const x of createClient(SnapshotService, transport).watch({ tenantId: t.tenantId, acceptRowBlocks }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
          if (x.event.case === 'heartbeat') continue;
          m.apply(x);
          // A kept snapshot may be older: the changes after it bring the client to `wantAt`.
          if (m.held !== undefined && m.held >= wantAt && !wrote) {
            expect(m.rows, `${name}, row blocks ${acceptRowBlocks}`).toEqual(want);
            wrote = true;
            await rest('PATCH', `/resources/${t.resourceIds[0]}`, { displayName: `${name} ${acceptRowBlocks}` });
            target = await committed(cp, t.tenantId);
          }
          if (wrote && m.held === target) break;
        }
        ac.abort();
        expect(m.applied.at(-1), name).toBe(target);
        expect(JSON.parse(m.rows.get(`resource/${t.resourceIds[0]}`)!).displayName).toBe(`${name} ${acceptRowBlocks}`);
      }
    }
  });

  it('resumes exactly once after a cut at every message boundary, snapshot and changes alike', async () => {
    const key = TEST_BOOTSTRAP_KEY;
    // Cuts inside the snapshot: the client holds nothing whole and resumes with a new snapshot.
    const full = new ModelClient();
    await follow(cp.url, key, t.tenantId, 0, full, () => full.held !== undefined);
    const chunks = full.chunks;
    for (let k = 1; k <= chunks; k++) {
      if (process.env.WATCH_DEBUG) console.log('cut', k, chunks);
      const m = new ModelClient();
      await follow(cp.url, key, t.tenantId, 0, m, (n) => n >= k || m.held !== undefined);
      await rest('PATCH', `/resources/${t.resourceIds[3]}`, { attributes: { cut: k } }); // something to catch up on
      const target = await committed(cp, t.tenantId);
      await follow(cp.url, key, t.tenantId, m.held ?? 0, m, () => m.held === target);
      expect(m.held).toBe(target);
      expect(m.rows).toEqual(await freshRows(cp, t.tenantId));
    }
    // Cuts among changes: a client at R-6 takes j revisions, is cut, and resumes from what it holds.
    const base = await committed(cp, t.tenantId);
    for (let i = 0; i < 6; i++) await rest('PATCH', `/resources/${t.resourceIds[4]}`, { attributes: { i } });
    const from = base;
    const target = base + 6;
    const snap = new ModelClient();
    await follow(cp.url, key, t.tenantId, 0, snap, () => snap.held !== undefined);
    for (let j = 1; j <= 6; j++) {
      const m = new ModelClient();
      // Start from the state at `from`: take the fresh snapshot's rows is not that state, so only
      // revisions are checked here (each exactly once, in order, none missing).
      m.held = from;
      await follow(cp.url, key, t.tenantId, from, m, (n) => n >= j);
      expect(m.applied).toEqual(Array.from({ length: j }, (_, i) => from + 1 + i));
      await follow(cp.url, key, t.tenantId, m.held, m, () => m.held === target);
      expect(m.snapshots).toBe(0);
      expect(m.applied).toEqual(Array.from({ length: 6 }, (_, i) => from + 1 + i));
    }
  });

  it('gives a fresh snapshot when the log no longer reaches from_revision; resumes when it does', async () => {
    const before = await committed(cp, t.tenantId);
    for (let i = 0; i < 4; i++) await rest('PATCH', `/resources/${t.resourceIds[5]}`, { attributes: { i } });
    const target = before + 4;
    const deleted = await compactChangeLog(cp.db, { keepRevisions: 2, keepMs: 0 });
    expect(deleted).toBeGreaterThan(0);
    expect(await revisionGaps(cp.db)).toEqual([]);
    // from target-2: both revisions after it are kept: resumed.
    const kept = new ModelClient();
    kept.held = target - 2;
    await follow(cp.url, TEST_BOOTSTRAP_KEY, t.tenantId, target - 2, kept, () => kept.held === target);
    expect(kept.snapshots).toBe(0);
    expect(kept.applied).toEqual([target - 1, target]);
    // from target-3: revision target-2 is gone: a fresh snapshot at the current revision.
    const gone = new ModelClient();
    await follow(cp.url, TEST_BOOTSTRAP_KEY, t.tenantId, target - 3, gone, () => gone.held !== undefined);
    expect(gone.snapshots).toBe(1);
    expect(gone.held).toBe(target);
    // Compaction twice is harmless; the decision path still answers (its index is rebuilt if behind).
    expect(await compactChangeLog(cp.db, { keepRevisions: 2, keepMs: 0 })).toBe(0);
    const d = await rest('POST', '/evaluate', { actor: { subjectId: t.subjectIds[1] }, scopeId: t.scopeId, action: 'edit' });
    expect(d.revision).toBe(target);
  });

  it('admits service keys of the tenant and platform keys only (401 / 403 as the decision path)', async () => {
    const other = await rest('POST', '/tenants', { name: 'other' });
    const project = await rest('POST', '/projects', { tenantId: t.tenantId, name: 'auth' });
    const env = await rest('POST', '/environments', { tenantId: t.tenantId, projectId: project.id, name: 'prod' });
    const keyOf = async (body: Record<string, unknown>) => (await rest('POST', '/api-keys', { name: 'k', ...body })).secretKey as string;
    const service = await keyOf({ kind: 'service', tenantId: t.tenantId });
    const user = await keyOf({ kind: 'user', tenantId: t.tenantId });
    const foreign = await keyOf({ kind: 'service', tenantId: other.id });
    const envKey = await keyOf({ kind: 'service', tenantId: t.tenantId, environmentId: env.id });
    const first = async (key?: string) => {
      const ac = new AbortController();
      try {
        for await (const m of watchClient(cp.url).watch({ tenantId: t.tenantId }, { signal: ac.signal, headers: key ? { 'x-api-key': key } : {} })) return m.event.case;
        return 'ended';
      } catch (e) {
        return codeOf(e);
      } finally {
        ac.abort();
      }
    };
    expect(await first()).toBe('Unauthenticated');
    expect(await first('azk_not_a_key_0123456789abcdefghijklmnop')).toBe('Unauthenticated');
    expect(await first(user)).toBe('PermissionDenied');
    expect(await first(foreign)).toBe('PermissionDenied');
    expect(await first(envKey)).toBe('PermissionDenied');
    expect(await first(service)).toBe('snapshot');
    expect(await first(TEST_BOOTSTRAP_KEY)).toBe('snapshot');
    // An unknown tenant (platform key) is not_found.
    const ac = new AbortController();
    const err = await (async () => {
      try {
        for await (const _ of watchClient(cp.url).watch({ tenantId: 'tenant_nope' }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) return 'message';
      } catch (e) {
        return codeOf(e);
      }
    })();
    ac.abort();
    expect(err).toBe('NotFound');
  });

  /** Reads a Watch stream until it ends; what ended it, the heartbeats read, and when (ms after the call). */
  const endOf = (url: string, key: string, tenantId: string, ac: AbortController) => (async () => {
    const started = Date.now();
    let heartbeats = 0;
    try {
      for await (const m of watchClient(url).watch({ tenantId }, { signal: ac.signal, headers: { 'x-api-key': key } })) {
        if (m.event.case === 'heartbeat') heartbeats++;
      }
      return { how: 'ended', heartbeats, at: Date.now() - started };
    } catch (e) {
      return { how: codeOf(e), heartbeats, at: Date.now() - started };
    }
  })();

  it('ends an open stream with unauthenticated once its key expires (the periodic check), and only that stream', async () => {
    const keyOf = async (body: Record<string, unknown>) => (await rest('POST', '/api-keys', { name: 'k', kind: 'service', tenantId: t.tenantId, ...body })) as { id: string; secretKey: string };
    const kept = await keyOf({});
    const expiring = await keyOf({ expiresAt: new Date(Date.now() + 1_500).toISOString() });
    const acs = [new AbortController(), new AbortController()];
    const [k, e] = [endOf(cp.url, kept.secretKey, t.tenantId, acs[0]), endOf(cp.url, expiring.secretKey, t.tenantId, acs[1])];
    const eEnd = await e;
    expect(eEnd.how).toBe('Unauthenticated');
    expect(eEnd.at).toBeGreaterThanOrEqual(1_300);
    // The other stream of the tenant goes on.
    const before = (await Promise.race([k, new Promise((res) => setTimeout(() => res('open'), 300))]));
    expect(before).toBe('open');
    acs[0].abort();
    expect((await k).heartbeats).toBeGreaterThan(5);
  });

  it(`ends an open stream once its key is revoked, by the key's notification alone (no periodic check)${backend === 'postgres' ? ', from another process' : ''}`, async () => {
    // A control plane whose streams' keys are checked only when a key is written: nothing else
    // can end the stream. On PostgreSQL the key is revoked through a second control plane on the
    // same database, so what reaches this one is the database's NOTIFY.
    const guarded = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '100' }, { watchKeyCheckMs: 0 });
    const writer = backend === 'postgres'
      ? await startTestControlPlane('postgres', { DATABASE_URL: guarded.db.orm.config.get('clientUrl') as string })
      : undefined;
    const acs = [new AbortController(), new AbortController()];
    try {
      const own = restClient(guarded.url, TEST_BOOTSTRAP_KEY);
      const tenant = (await own('POST', '/tenants', { name: 'revoked' })) as { id: string };
      const keyOf = async () => (await own('POST', '/api-keys', { name: 'k', kind: 'service', tenantId: tenant.id })) as { id: string; secretKey: string };
      const [revoked, kept] = [await keyOf(), await keyOf()];
      const [r, k] = [endOf(guarded.url, revoked.secretKey, tenant.id, acs[0]), endOf(guarded.url, kept.secretKey, tenant.id, acs[1])];
      await until(() => guarded.watch.streams().length === 2, 'both streams open');
      await restClient((writer ?? guarded).url, TEST_BOOTSTRAP_KEY)('DELETE', `/api-keys/${revoked.id}`);
      const rEnd = await Promise.race([r, new Promise<{ how: string }>((res) => setTimeout(() => res({ how: 'still open' }), 10_000))]);
      expect(rEnd.how).toBe('Unauthenticated');
      expect(await Promise.race([k, new Promise((res) => setTimeout(() => res('open'), 300))])).toBe('open');
    } finally {
      for (const ac of acs) ac.abort();
      await writer?.close();
      await guarded.close();
    }
  });

  it('refuses a request without a tenant or with a negative fromRevision, naming the field', async () => {
    const refusal = async (req: { tenantId?: string; fromRevision?: bigint }) => {
      try {
        for await (const _ of watchClient(cp.url).watch(req, { headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) return 'message';
        return 'ended';
      } catch (e) {
        const err = ConnectError.from(e);
        return `${codeOf(e)}: ${err.rawMessage}`;
      }
    };
    expect(await refusal({})).toMatch(/^InvalidArgument: tenantId/);
    expect(await refusal({ tenantId: t.tenantId, fromRevision: -1n })).toMatch(/^InvalidArgument: fromRevision/);
  });

  it('refuses a malformed request body with invalid_argument, opening no stream (raw HTTP/2: the lean path)', async () => {
    const session = http2.connect(cp.url);
    const call = (body: Buffer) => new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/authz.v1.SnapshotService/Watch', 'content-type': 'application/grpc', te: 'trailers', 'x-api-key': TEST_BOOTSTRAP_KEY });
      let status: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => (status = h));
      req.on('trailers', (h) => (status = { ...status, ...h }));
      req.on('data', () => undefined);
      req.on('end', () => resolve(status));
      req.on('error', reject);
      req.end(body);
    });
    try {
      const envelope = (payload: Buffer, length = payload.length) => Buffer.concat([Buffer.from([0, 0, 0, 0, 0]).fill(length, 4, 5), payload]);
      // An envelope whose length does not match its body; then a body that is no WatchRequest.
      for (const body of [envelope(Buffer.from([0x0a, 0x01, 0x61]), 9), envelope(Buffer.from([0x0a, 0x7f, 0x61]))]) {
        const h = await call(body);
        expect(h['grpc-status']).toBe(String(Code.InvalidArgument));
      }
      expect(cp.watch.stats().streams).toBe(0);
    } finally {
      session.close();
    }
  });

  it('ends a stream whose client does not read with resource_exhausted, its buffer bounded', async () => {
    const bound = 65_536;
    const slow = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '50', SERVICE_WATCH_MAX_BUFFERED_BYTES: String(bound) });
    try {
      const r = restClient(slow.url, TEST_BOOTSTRAP_KEY);
      const p = await populate(r, 'slow');
      // A raw HTTP/2 client with a small window that never reads.
      const session = http2.connect(slow.url, { settings: { initialWindowSize: 16_384 } });
      const body = toBinary(WatchRequestSchema, create(WatchRequestSchema, { tenantId: p.tenantId }));
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      Buffer.from(body).copy(frame, 5);
      const req = session.request({ ':method': 'POST', ':path': '/authz.v1.SnapshotService/Watch', 'content-type': 'application/grpc', te: 'trailers', 'x-api-key': TEST_BOOTSTRAP_KEY });
      req.pause();
      req.end(frame);
      let trailers: http2.IncomingHttpHeaders | undefined;
      req.on('trailers', (h) => (trailers = h));
      await until(() => slow.watch.stats().streams === 1, 'the stream');
      const stream = slow.watch.streams()[0];
      let peak = 0;
      // Many writes of ~2 KB revisions while the client reads nothing.
      for (let i = 0; i < 120 && slow.watch.stats().slowConsumers === 0; i++) {
        await r('PATCH', `/resources/${p.resourceIds[i % 6]}`, { attributes: { i, pad: 'y'.repeat(2_000) } });
        peak = Math.max(peak, slow.watch.stats().maxStreamBufferedBytes);
      }
      await until(() => slow.watch.stats().slowConsumers === 1, 'the stream to be ended');
      // Stated bound: SERVICE_WATCH_MAX_BUFFERED_BYTES plus one message.
      expect(stream.peakBufferedBytes).toBeLessThanOrEqual(bound + 8_192);
      expect(peak).toBeLessThanOrEqual(bound + 8_192);
      expect(stream.bufferedBytes).toBeLessThanOrEqual(8_192); // the outbox was dropped
      // Reading again, the client gets what was in flight, then resource_exhausted.
      req.resume();
      req.on('data', () => undefined);
      await until(() => trailers !== undefined, 'the trailers');
      expect(trailers!['grpc-status']).toBe(String(Code.ResourceExhausted));
      expect(decodeURIComponent(String(trailers!['grpc-message']))).toContain('did not keep up');
      session.close();
    } finally {
      await slow.close();
    }
  });

  it('keeps a whole snapshot for the next streams of its tenant and format, while the log reaches back to it and within its budget', async () => {
    const cacheResults = async (c: CP) => {
      const text = await (await fetch(`${c.url}/metrics`)).text();
      const n = (result: string) => Number(new RegExp(`^authz_watch_snapshot_cache_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { hit: n('hit'), miss: n('miss'), joined: n('joined'), tooLarge: n('too_large'), invalidated: n('invalidated'), bytes: Number(/^authz_watch_snapshot_cache_bytes (\d+)$/m.exec(text)?.[1] ?? NaN) };
    };
    const c = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '50' }, { watch: { chunkBytes: 1500 } });
    const tiny = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '50', SERVICE_WATCH_SNAPSHOT_CACHE_BYTES: '2000' }, { watch: { chunkBytes: 1500 } });
    try {
      const r = restClient(c.url, TEST_BOOTSTRAP_KEY);
      const p = await populate(r, 'kept');
      const newClient = async (cp: CP, tenantId = p.tenantId) => {
        const target = await committed(cp, tenantId);
        const m = new ModelClient();
        await follow(cp.url, TEST_BOOTSTRAP_KEY, tenantId, 0, m, () => m.held !== undefined && m.held >= target);
        return m;
      };
      // The first stream reads the database; the second gets the same snapshot from memory.
      const first = await newClient(c);
      expect(first.chunks).toBeGreaterThan(3);
      const r0 = first.snapshotRevision!;
      const second = await newClient(c);
      expect([second.snapshotRevision, second.chunks, second.rows]).toEqual([r0, first.chunks, first.rows]);
      expect(await cacheResults(c)).toMatchObject({ hit: 1, miss: 1, tooLarge: 0, invalidated: 0 });
      expect((await cacheResults(c)).bytes).toBeGreaterThan(0);
      // After writes, the kept snapshot is still sent, and the changes after it bring the client
      // to the state a fresh read gives (the snapshot cache is off for it: another format).
      for (let i = 0; i < 3; i++) await r('PATCH', `/resources/${p.resourceIds[i]}`, { attributes: { kept: i } });
      const later = await newClient(c);
      expect(later.snapshotRevision).toBe(r0);
      expect(later.applied).toEqual([r0 + 1, r0 + 2, r0 + 3]);
      const json = new ModelClient();
      const target = await committed(c, p.tenantId);
      const ac = new AbortController();
      for await (const x of createClient(SnapshotService, createConnectTransport({ baseUrl: c.url, httpVersion: '1.1', useBinaryFormat: false })).watch({ tenantId: p.tenantId }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
        if (x.event.case !== 'heartbeat') json.apply(x);
        if (json.held === target) break;
      }
      ac.abort();
      expect(json.snapshotRevision).toBe(target);
      expect(later.rows).toEqual(json.rows);
      expect(await cacheResults(c)).toMatchObject({ hit: 2, miss: 2 });
      // Compacted past the kept revision: dropped, and the next stream reads a fresh snapshot.
      expect(await compactChangeLog(c.db, { keepRevisions: 1, keepMs: 0 })).toBeGreaterThan(0);
      const afterCompaction = await newClient(c);
      expect(afterCompaction.snapshotRevision).toBe(target);
      expect(afterCompaction.rows).toEqual(json.rows);
      expect(await cacheResults(c)).toMatchObject({ hit: 2, miss: 3, invalidated: 1 });
      // A snapshot larger than the budget is never kept: every stream reads the database.
      const other = await populate(restClient(tiny.url, TEST_BOOTSTRAP_KEY), 'too large');
      const small = [await newClient(tiny, other.tenantId), await newClient(tiny, other.tenantId)];
      expect(small[1].rows).toEqual(small[0].rows);
      expect(await cacheResults(tiny)).toMatchObject({ hit: 0, miss: 2, tooLarge: 2, bytes: 0 });
      // Streams of a new tenant starting together: one reads the database, the others follow it
      // (or, arriving after it ended, get it kept), and all hold the same state.
      const together = await populate(r, 'together');
      const models = await Promise.all(Array.from({ length: 5 }, () => newClient(c, together.tenantId)));
      for (const m of models) expect([m.snapshotRevision, m.rows]).toEqual([models[0].snapshotRevision, models[0].rows]);
      const after = await cacheResults(c);
      expect(after.miss).toBe(4);
      expect(after.hit + after.joined).toBe(2 + 4);
      expect(models[0].rows).toEqual(await freshRows(c, together.tenantId));
    } finally {
      await tiny.close();
      await c.close();
    }
  });

  it('many streams of one tenant read each revision from the database once, and all get every revision', async () => {
    const c = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '100' });
    const streams = 12;
    const writes = 6;
    try {
      const r = restClient(c.url, TEST_BOOTSTRAP_KEY);
      const p = await populate(r, 'many');
      const models = Array.from({ length: streams }, () => new ModelClient());
      let target = Number.POSITIVE_INFINITY;
      const following = models.map((m) => follow(c.url, TEST_BOOTSTRAP_KEY, p.tenantId, 0, m, () => m.held === target));
      const start = await committed(c, p.tenantId);
      await until(() => models.every((m) => m.held === start), 'every snapshot');
      const before = c.watch.reads.databaseReads;
      for (let i = 0; i < writes; i++) {
        await r('PATCH', `/resources/${p.resourceIds[i % 3]}`, { attributes: { i } });
        const now = start + i + 1;
        await until(() => models.every((m) => m.held === now), `revision ${now} everywhere`);
      }
      target = start + writes;
      // Each revision asked once, whoever woke first; the other streams shared it (6 here in every
      // run; the slack is for a poll while the LISTEN connection reconnects). Unshared, this is
      // streams × writes = 72 reads.
      const asked = c.watch.reads.databaseReads - before;
      expect(asked).toBeGreaterThanOrEqual(writes);
      expect(asked).toBeLessThanOrEqual(writes + 2);
      const fresh = await freshRows(c, p.tenantId);
      for (const m of models) {
        expect(m.applied).toEqual(Array.from({ length: writes }, (_, i) => start + i + 1));
        expect(m.rows).toEqual(fresh);
      }
      const text = await (await fetch(`${c.url}/metrics`)).text();
      expect(Number(/^authz_watch_log_reads_total\{source="shared"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual((streams - 1) * writes);
      // Heartbeats end each follower now that it holds the target.
      await Promise.all(following);
      await until(() => c.watch.stats().streams === 0, 'the streams closed');
      expect(c.watch.reads.tenants).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('reports how many revisions a stream has not yet handed to its client (/metrics)', async () => {
    const c = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '50' });
    try {
      const r = restClient(c.url, TEST_BOOTSTRAP_KEY);
      const p = await populate(r, 'lagging');
      const scrape = async () => {
        const text = await (await fetch(`${c.url}/metrics`)).text();
        const v = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
        return { max: v('authz_watch_stream_lag_revisions_max'), behind: v('authz_watch_streams_behind') };
      };
      expect(await scrape()).toEqual({ max: 0, behind: 0 });
      // A client with a small window that reads nothing: revisions pile up in the stream.
      const session = http2.connect(c.url, { settings: { initialWindowSize: 16_384 } });
      const body = toBinary(WatchRequestSchema, create(WatchRequestSchema, { tenantId: p.tenantId }));
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      Buffer.from(body).copy(frame, 5);
      const req = session.request({ ':method': 'POST', ':path': '/authz.v1.SnapshotService/Watch', 'content-type': 'application/grpc', te: 'trailers', 'x-api-key': TEST_BOOTSTRAP_KEY });
      req.pause();
      req.end(frame);
      await until(() => c.watch.stats().streams === 1, 'the stream');
      const stream = c.watch.streams()[0];
      await until(() => stream.lagRevisions === 0, 'the snapshot handed over');
      for (let i = 0; i < 30; i++) await r('PATCH', `/resources/${p.resourceIds[i % 6]}`, { attributes: { i, pad: 'z'.repeat(2_000) } });
      await until(async () => (await scrape()).max > 0, 'a lag');
      const lagging = await scrape();
      expect(lagging.behind).toBe(1);
      // 30 revisions of ~2 KB against a 16 KiB window: most of them wait in the stream.
      expect(lagging.max).toBeGreaterThan(10);
      expect(lagging.max).toBeLessThanOrEqual(30);
      expect(lagging.max).toBe(stream.lagRevisions);
      // Once the client reads, the stream catches up.
      req.resume();
      req.on('data', () => undefined);
      await until(async () => (await scrape()).max === 0, 'no lag');
      expect((await scrape()).behind).toBe(0);
      req.close();
      session.close();
    } finally {
      await c.close();
    }
  });

  it('ends open streams with unavailable when the server closes, promptly', async () => {
    const c = await startTestControlPlane(backend, { SERVICE_WATCH_HEARTBEAT_MS: '50' });
    const r = restClient(c.url, TEST_BOOTSTRAP_KEY);
    const p = await populate(r, 'closing');
    const m = new ModelClient();
    let ended: string | undefined;
    const reading = follow(c.url, TEST_BOOTSTRAP_KEY, p.tenantId, 0, m, () => false).then(() => (ended = 'ended'), (e) => (ended = codeOf(e)));
    await until(() => m.held !== undefined, 'the snapshot');
    const t0 = Date.now();
    await c.server.close(); // the server alone (its shutdown signal), not the hub first
    const took = Date.now() - t0;
    await reading;
    expect(ended).toBe('Unavailable');
    expect(took).toBeLessThan(450); // under the 500 ms grace: the stream did not hold it
    await c.close();
  });
});

describe.runIf(process.env.DATABASE_URL)('Watch across control planes on one PostgreSQL database', () => {
  it('streams a write made through app A to a Watch on app B', async () => {
    const a = await startTestControlPlane('postgres', { SERVICE_WATCH_HEARTBEAT_MS: '100' });
    const url = a.db.orm.config.get('clientUrl') as string;
    const b = await startTestControlPlane('postgres', { SERVICE_WATCH_HEARTBEAT_MS: '100', DATABASE_URL: url });
    try {
      const ra = restClient(a.url, TEST_BOOTSTRAP_KEY);
      const p = await populate(ra, 'two');
      const metrics = sidecarMetrics(new Registry(), () => follower);
      const follower: Follower = new Follower({ controlPlaneUrl: b.url, apiKey: TEST_BOOTSTRAP_KEY, tenantId: p.tenantId, maxStalenessMs: 5_000, logger, metrics });
      follower.start();
      try {
        await until(async () => follower.revision === (await committed(a, p.tenantId)), 'the snapshot from B');
        const w = await ra('PATCH', `/resources/${p.resourceIds[0]}`, { displayName: 'via A' });
        expect(w.displayName).toBe('via A');
        const target = await committed(a, p.tenantId);
        const t0 = Date.now();
        await until(() => follower.revision === target, 'the write through A on B', 2_000);
        // A wake-up, not a poll: well under a second.
        expect(Date.now() - t0).toBeLessThan(1_000);
        expect(follower.index!.resource(p.resourceIds[0])?.displayName).toBe('via A');
        // B's decision path learns A's commit from the notification as well.
        const d = await restClient(b.url, TEST_BOOTSTRAP_KEY)('POST', '/evaluate', { actor: { subjectId: p.subjectIds[0] }, scopeId: p.scopeId, action: 'edit' });
        expect(d.revision).toBe(target);
        // B's listener down: its streams poll the log and its decisions ask the database.
        await b.db.notifications.close();
        expect(b.db.notifications.live).toBe(false);
        await ra('PATCH', `/resources/${p.resourceIds[0]}`, { displayName: 'while B is deaf' });
        const next = await committed(a, p.tenantId);
        await until(() => follower.revision === next, 'the write through A on B, polled', 2_000);
        const d2 = await restClient(b.url, TEST_BOOTSTRAP_KEY)('POST', '/evaluate', { actor: { subjectId: p.subjectIds[0] }, scopeId: p.scopeId, action: 'edit' });
        expect(d2.revision).toBe(next);
      } finally {
        await follower.stop();
      }
    } finally {
      await b.close();
      await a.close();
    }
  });
});
