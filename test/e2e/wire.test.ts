/**
 * The wire as a hostile client meets it, at a control-plane process and a sidecar process: what a
 * refused request costs the server (its CPU time, from /proc), malformed protobuf and UTF-8 as
 * client errors naming the field, bodies over the limit with `Connection: close`, and the fields
 * errors name. The same shapes, with their before and after figures, are in bench/hardening.ts.
 */
import * as http2 from 'node:http2';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase } from '../databases.js';
import { envelope } from '../conformance/surfaces.js';
import { startProcess, threadCpuMs, waitFor200, type RunningProcess } from '../processes.js';
import { MAX_BODY_BYTES } from '../../services/transport/request-limits.js';
import { BAD_UTF8, field, jsonWith, MALFORMED, shapes } from '../conformance/hostile.js';

const BOOTSTRAP = 'azk_e2e_wire_bootstrap_0123456789abcdefghijklmn';
/**
 * CPU a refused request may cost the server in this test: ten times the benchmark's target
 * (20 ms), so a loaded machine cannot fail it, and a hundredth of what the shapes below cost
 * before the body was bounded (3 to 5 s each).
 */
const REFUSED_CPU_MS = 200;

interface Reply { status: number; body: any } // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-api-key': BOOTSTRAP }): Promise<Reply> {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok(p: Promise<Reply>): Promise<Reply> {
  const r = await p;
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

/** A raw body to an RPC path (Connect, or REST): status and parsed JSON answer. */
async function raw(base: string, path: string, type: string, body: Uint8Array, headers: Record<string, string> = {}): Promise<Reply> {
  // undici's "fetch failed" hides why (a reset, a closed keep-alive socket): say it.
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': type, ...headers }, body }).catch((err: Error) => {
    throw new Error(`POST ${path}: ${err.message}: ${String((err.cause as Error | undefined)?.stack ?? err.cause)}`);
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed };
}

/** A unary gRPC call over HTTP/2 with `message` in one envelope: its grpc-status. */
function grpc(base: string, path: string, message: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let status = '';
    req.on('response', (h) => (status = String(h['grpc-status'] ?? status)));
    req.on('trailers', (t) => (status = String(t['grpc-status'] ?? status)));
    req.on('data', () => undefined);
    req.on('error', () => undefined);
    req.on('close', () => {
      session.close();
      resolve(status || `closed (${req.rstCode})`);
    });
    req.end(envelope(message));
  });
}

/** The server's CPU time for `send` (all its threads), once what it started has settled. */
async function cpuOf(p: RunningProcess, send: () => Promise<unknown>): Promise<number> {
  const before = threadCpuMs(p.child.pid)!;
  await send();
  await new Promise((r) => setTimeout(r, 50));
  return threadCpuMs(p.child.pid)! - before;
}

/** Sends `body` with `Connection: close` over a raw socket, writing all of it before reading: the status line read, or the error. */
function closeAfterBody(base: string, path: string, headers: Record<string, string>, body: Buffer): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let got = '';
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(got.split('\r\n')[0] || `error ${err.code}`));
    socket.on('close', () => resolve(got.split('\r\n')[0] || 'closed without an answer'));
    const head = Object.entries({ host: `${hostname}:${port}`, 'content-type': 'application/json', 'content-length': String(body.length), connection: 'close', ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
    socket.write(body);
  });
}

/** Log lines of a process at level error (50) or above. */
const errorLines = (p: RunningProcess) => p.output.filter((l) => /"level":(5\d|6\d)/.test(l));

describe('the wire of a control-plane process and a sidecar process', () => {
  let scratch: { url: string; drop: () => Promise<void> } | undefined;
  let cp: RunningProcess;
  let sidecar: RunningProcess;
  const w = {} as { tenantId: string; scopeId: string; subjectId: string; serviceKey: string };
  const key = () => ({ 'x-api-key': w.serviceKey });

  beforeAll(async () => {
    const database = process.env.DATABASE_URL ? (scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_e2e_wire')).url : undefined;
    cp = await startProcess('control-plane', {
      ...(database ? { DATABASE_URL: database } : { SERVICE_DATA_DIR: 'memory://' }),
      SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
    });
    const tenant = await ok(call(cp.url, 'POST', '/tenants', { name: 'wire' }));
    w.tenantId = tenant.body.id;
    w.scopeId = tenant.body.scopeId;
    w.subjectId = (await ok(call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }))).body.id;
    w.serviceKey = (await ok(call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }))).body.secretKey;
    sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    });
    await waitFor200(`${sidecar.url}/readyz`);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([cp?.stop('SIGKILL'), sidecar?.stop('SIGKILL')]);
    await scratch?.drop();
  });

  describe('a refused request costs no more than its limits allow', () => {
    const EVALUATE = '/authz.v1.DecisionService/Evaluate';
    const BATCH = '/authz.v1.DecisionService/EvaluateBatch';
    const SUBJECTS = '/authz.v1.SubjectService/BatchCreateSubjects';

    it('without a key the control plane answers 401 from the headers, whatever the body', async () => {
      const cases: [string, () => Promise<unknown>][] = [
        ['EvaluateBatch, 2,000,000 items, Connect', async () => expect((await raw(cp.url, BATCH, 'application/proto', shapes.emptyItems())).status).toBe(401)],
        ['EvaluateBatch, 2,000,000 items, gRPC', async () => expect(await grpc(cp.url, BATCH, shapes.emptyItems())).toBe('16')],
        ['BatchCreateSubjects, 2,000,000 items', async () => expect((await raw(cp.url, SUBJECTS, 'application/proto', shapes.emptyItems())).status).toBe(401)],
        ['Evaluate, a 200,000-key Struct', async () => expect((await raw(cp.url, EVALUATE, 'application/proto', shapes.structKeys())).status).toBe(401)],
        ['REST /evaluate, 200,000 JSON keys', async () => expect((await raw(cp.url, '/evaluate', 'application/json', shapes.jsonKeys())).status).toBe(401)],
        ['REST /subjects/batch, 200,000 JSON keys', async () => expect((await raw(cp.url, '/subjects/batch', 'application/json', shapes.jsonKeys())).status).toBe(401)],
      ];
      for (const [name, send] of cases) expect(await cpuOf(cp, send), name).toBeLessThan(REFUSED_CPU_MS);
    });

    it('with a key, the control plane refuses the same bodies as they are scanned', async () => {
      const cases: [string, () => Promise<unknown>][] = [
        ['EvaluateBatch, Connect', async () => expect((await raw(cp.url, BATCH, 'application/proto', shapes.emptyItems(), key())).body).toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('requests') })],
        ['EvaluateBatch, gRPC', async () => expect(await grpc(cp.url, BATCH, shapes.emptyItems(), key())).toBe('3')],
        ['BatchCreateSubjects', async () => expect((await raw(cp.url, SUBJECTS, 'application/proto', shapes.emptyItems(), { 'x-api-key': BOOTSTRAP })).status).toBe(400)],
        ['Evaluate, a 200,000-key Struct', async () => expect((await raw(cp.url, EVALUATE, 'application/proto', shapes.structKeys(), key())).body.message).toMatch(/^context: is larger than 16384 bytes of JSON/)],
        ['Evaluate, 2,000,000 unknown fields', async () => expect((await raw(cp.url, EVALUATE, 'application/proto', shapes.unknownFields(), key())).body.message).toContain('more than 64 fields')],
        ['REST /evaluate, 200,000 JSON keys', async () => expect((await raw(cp.url, '/evaluate', 'application/json', shapes.jsonKeys(), key())).body.message).toMatch(/^context: holds more than 10000 entries/)],
        ['REST /evaluate, 1,000,000 zeros', async () => expect((await raw(cp.url, '/evaluate', 'application/json', shapes.jsonZeros(), key())).body.message).toMatch(/^context\.a: holds more than 10000 entries/)],
      ];
      for (const [name, send] of cases) expect(await cpuOf(cp, send), name).toBeLessThan(REFUSED_CPU_MS);
    });

    it('the sidecar refuses them as they are scanned', async () => {
      const cases: [string, () => Promise<unknown>][] = [
        ['EvaluateBatch, Connect', async () => expect((await raw(sidecar.url, BATCH, 'application/proto', shapes.emptyItems())).status).toBe(400)],
        ['EvaluateBatch, gRPC', async () => expect(await grpc(sidecar.url, BATCH, shapes.emptyItems())).toBe('3')],
        ['Evaluate, a 200,000-key Struct', async () => expect((await raw(sidecar.url, EVALUATE, 'application/proto', shapes.structKeys())).status).toBe(400)],
        ['Evaluate, 2,000,000 unknown fields (was accepted)', async () => expect((await raw(sidecar.url, EVALUATE, 'application/proto', shapes.unknownFields())).status).toBe(400)],
        ['REST, 200,000 JSON keys', async () => expect((await raw(sidecar.url, '/evaluate', 'application/json', shapes.jsonKeys())).status).toBe(400)],
        ['REST, 1,000,000 zeros', async () => expect((await raw(sidecar.url, '/evaluate', 'application/json', shapes.jsonZeros())).status).toBe(400)],
      ];
      for (const [name, send] of cases) expect(await cpuOf(sidecar, send), name).toBeLessThan(REFUSED_CPU_MS);
    });

    it('a few unknown fields are skipped, as protobuf readers do', async () => {
      const body = Buffer.concat([field(1, field(1, Buffer.from(w.subjectId))), field(2, Buffer.from(w.scopeId)), field(3, Buffer.from('read')), Buffer.from([0x78, 0x01, 0x78, 0x02])]);
      for (const [base, headers] of [[cp.url, key()], [sidecar.url, {}]] as const) {
        expect((await raw(base, EVALUATE, 'application/proto', body, headers)).status).toBe(200);
      }
    });
  });

  describe('malformed protobuf is invalid_argument naming the field, never internal', () => {
    it.each(MALFORMED)('%s (%s: %s), over Connect and gRPC, at both processes', async (hex, fieldName) => {
      const body = Buffer.from(hex, 'hex');
      for (const [base, headers] of [[cp.url, key()], [sidecar.url, {}]] as const) {
        const r = await raw(base, '/authz.v1.DecisionService/Evaluate', 'application/proto', body, headers);
        expect([r.status, r.body.code, r.body.details?.[0]?.debug?.field]).toEqual([400, 'invalid_argument', fieldName]);
        expect(await grpc(base, '/authz.v1.DecisionService/Evaluate', body, headers)).toBe('3');
      }
      // Without a key the control plane answers 401 before reading the body.
      expect((await raw(cp.url, '/authz.v1.DecisionService/Evaluate', 'application/proto', body)).status).toBe(401);
    });

    it('a Connect GET whose message is not base64, or names an unknown field, is 400 naming it', async () => {
      const get = (base: string, query: string, headers: Record<string, string>) =>
        fetch(`${base}/authz.v1.DecisionService/GetEffectivePermissions?connect=v1&encoding=json&${query}`, { headers }).then(async (r) => ({ status: r.status, body: await r.json() as any })); // eslint-disable-line @typescript-eslint/no-explicit-any
      for (const [base, headers] of [[cp.url, key()], [sidecar.url, {}]] as const) {
        const notBase64 = await get(base, 'base64=1&message=!!!', headers);
        expect([notBase64.status, notBase64.body.code]).toEqual([400, 'invalid_argument']);
        const unknown = await get(base, `message=${encodeURIComponent('{"bogus":1}')}`, headers);
        expect([unknown.status, unknown.body.details[0].debug.field]).toEqual([400, 'bogus']);
      }
    });

    it('none of it was logged as an error by either process', () => {
      expect(errorLines(cp)).toEqual([]);
      expect(errorLines(sidecar)).toEqual([]);
    });
  });

  describe('malformed UTF-8 is refused naming the field, in JSON and in protobuf strings', () => {
    it.each(BAD_UTF8)('%s', async (_name, bytes) => {
      for (const [base, headers, scopeId] of [[cp.url, key(), w.scopeId], [sidecar.url, {}, w.scopeId]] as const) {
        for (const path of ['/evaluate', '/authz.v1.DecisionService/Evaluate']) {
          const r = await raw(base, path, 'application/json', jsonWith(scopeId, bytes), headers);
          expect([r.status, r.body.code, r.body.message], `${base}${path}`).toEqual([400, 'invalid_argument', expect.stringMatching(/^action: must be valid UTF-8/)]);
        }
        const binary = Buffer.concat([field(1, field(1, Buffer.from(w.subjectId))), field(2, Buffer.from(scopeId)), field(3, Buffer.from([0x72, ...bytes]))]);
        const r = await raw(base, '/authz.v1.DecisionService/Evaluate', 'application/proto', binary, headers);
        expect([r.status, r.body.message]).toEqual([400, 'action: must be valid UTF-8']);
      }
    });
  });

  it('answers a body over the limit to a client that writes it whole first with Connection: close (20 of 20)', async () => {
    const body = Buffer.alloc(MAX_BODY_BYTES + 1024 * 1024, 0x20);
    for (const [base, headers, want] of [
      [cp.url, key(), '429'], [cp.url, {}, '401'], [sidecar.url, {}, '429'],
    ] as const) {
      const lines = await Promise.all(Array.from({ length: 20 }, () => closeAfterBody(base, '/evaluate', headers, body)));
      expect(lines.filter((l) => l.startsWith(`HTTP/1.1 ${want}`)).length, `${base}: ${lines.join(' | ')}`).toBe(20);
    }
  });

  describe('errors name their field', () => {
    it('a batch\'s fullyConsistent refusal at the sidecar names requests[i]', async () => {
      const one = { actor: { subjectId: w.subjectId }, scopeId: w.scopeId, action: 'read' };
      const r = await call(sidecar.url, 'POST', '/evaluate/batch', { requests: [one, { ...one, consistency: { fullyConsistent: true } }] }, {});
      expect([r.status, r.body.details[0].field]).toEqual([400, 'requests[1].consistency.fullyConsistent']);
    });

    it('a minRevision out of range names consistency.minRevision and says why', async () => {
      for (const [base, headers] of [[cp.url, key()], [sidecar.url, {}]] as const) {
        const q = await call(base, 'GET', `/effective-permissions?subjectId=${w.subjectId}&scopeId=${w.scopeId}&consistency.minRevision=9223372036854775808`, undefined, headers);
        expect([q.status, q.body.details[0].field]).toEqual([400, 'consistency.minRevision']);
        const big = await call(base, 'POST', '/evaluate', { actor: { subjectId: w.subjectId }, scopeId: w.scopeId, action: 'read', consistency: { minRevision: String(2 ** 53 + 2) } }, headers);
        expect([big.status, big.body.details[0].field, big.body.message]).toEqual([400, 'consistency.minRevision', expect.stringContaining('at most 9007199254740991')]);
      }
    });
  });
});
