/**
 * Console sessions against a real control plane, on PostgreSQL and the embedded database: sign-in
 * with user and platform keys (a service key refused), the cookie's attributes (Secure and the
 * `__Host-` name behind TLS only), a session reaching exactly what its key reaches on REST,
 * Connect, gRPC-Web, gRPC and the lean decision path, the header winning over the cookie, idle
 * timeout and absolute lifetime (the sessions' clock moved), throttled `last_seen_at` writes,
 * sign-out, revocation and expiry of the key, the periodic sweep, cross-site form posts and
 * cross-origin requests refused without a write, no Watch stream through a session, and no
 * session id in the logs. Two control planes on one PostgreSQL database: each honours the other's
 * sign-ins, sign-outs and revocations.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { Writable } from 'node:stream';
import { Code, ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { SnapshotService } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { REDACTED } from '../../common/settings.js';
import { REDACT_PATHS } from '../../transport/observability.js';
import { testCertificates, type TestCertificates } from '../../../test/certificates.js';
import { describeEachBackend, startTestControlPlane, storeDigest, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';
import { startControlPlane, type ControlPlane } from '../app.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../../transport/observability.js';
import { sessionHash } from './sessions.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One HTTP/1.1 request with exactly these headers (node:http, so that Cookie, Origin and Sec-Fetch-Site go as given). */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string, ca?: string): Promise<Reply> {
  return new Promise((done, fail) => {
    const url = new URL(path, base);
    const r = (url.protocol === 'https:' ? https.request : http.request)(url, { method, headers, agent: false, ...(ca ? { ca } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        done({ status: res.statusCode!, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : { text } });
      });
    });
    r.on('error', fail);
    r.end(body);
  });
}

const json = (base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  send(base, method, path, { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, body === undefined ? undefined : JSON.stringify(body));

const withKey = (base: string, key: string, method: string, path: string, body?: unknown) => json(base, method, path, { 'x-api-key': key }, body);

/** Signs in with `key`; returns the reply and the `Cookie` header value its Set-Cookie gives. */
async function signIn(base: string, key: string, headers: Record<string, string> = {}, ca?: string): Promise<Reply & { cookie: string }> {
  const r = await send(base, 'POST', '/console/session', { 'x-api-key': key, ...headers }, undefined, ca);
  const set = r.headers['set-cookie']?.[0] ?? '';
  return { ...r, cookie: set.split(';')[0] };
}

const idOf = (cookie: string) => cookie.slice(cookie.indexOf('=') + 1);

async function sessionRows(cp: ControlPlane, cookie?: string): Promise<number> {
  const where = cookie === undefined ? '' : ` where id_hash = '${sessionHash(idOf(cookie))}'`;
  const [r] = (await cp.db.orm.em.fork().execute(`select count(*)::int as n from sessions${where}`)) as { n: number }[];
  return r.n;
}

async function lastSeen(cp: ControlPlane, cookie: string): Promise<number> {
  const [r] = (await cp.db.orm.em.fork().execute('select last_seen_at as t from sessions where id_hash = ?', [sessionHash(idOf(cookie))])) as { t: Date }[];
  return new Date(r.t).getTime();
}

interface World {
  tenantA: string;
  scopeA: string;
  tenantB: string;
  user: { id: string; secret: string };
  platform: { id: string; secret: string };
  service: { id: string; secret: string };
}

async function newKey(base: string, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const k = await withKey(base, TEST_BOOTSTRAP_KEY, 'POST', '/api-keys', { name: 'k', ...body });
  expect(k.status, JSON.stringify(k.body)).toBe(200);
  return { id: k.body.id as string, secret: k.body.secretKey as string };
}

async function seed(base: string): Promise<World> {
  const a = await withKey(base, TEST_BOOTSTRAP_KEY, 'POST', '/tenants', { name: 'a' });
  const b = await withKey(base, TEST_BOOTSTRAP_KEY, 'POST', '/tenants', { name: 'b' });
  expect([a.status, b.status]).toEqual([200, 200]);
  return {
    tenantA: a.body.id, scopeA: a.body.scopeId, tenantB: b.body.id,
    user: await newKey(base, { kind: 'user', tenantId: a.body.id }),
    platform: await newKey(base, { kind: 'platform' }),
    service: await newKey(base, { kind: 'service', tenantId: a.body.id }),
  };
}

/** Interceptor adding a header to every call of a Connect client. */
const withHeader = (name: string, value: string): Interceptor => (next) => (req) => {
  req.header.set(name, value);
  return next(req);
};

const IDLE_MINUTES = 30;
const MAX_HOURS = 12;

describeEachBackend('console sessions on %s', (backend) => {
  let cp: ControlPlane & { url: string };
  let w: World;
  let offset = 0;
  const logs: string[] = [];
  beforeAll(async () => {
    cp = await startTestControlPlane(backend, { SERVICE_SESSION_IDLE_MINUTES: String(IDLE_MINUTES), SERVICE_SESSION_MAX_HOURS: String(MAX_HOURS) }, { sessionClock: () => Date.now() + offset });
    w = await seed(cp.url);
  });
  afterAll(() => cp?.close());

  it('signs in with a user key: 200, who signed in, and the cookie with exactly its attributes', async () => {
    const r = await signIn(cp.url, w.user.secret);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ keyId: w.user.id, kind: 'user', tenantId: w.tenantA, idleTimeoutSeconds: IDLE_MINUTES * 60 });
    expect(Date.parse(r.body.expiresAt) - Date.now()).toBeGreaterThan(MAX_HOURS * 3_600_000 - 60_000);
    expect(r.headers['cache-control']).toBe('no-store');
    const set = r.headers['set-cookie'] ?? [];
    expect(set).toHaveLength(1);
    expect(set[0]).toMatch(/^authz_session=azs_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    expect(set[0]).not.toMatch(/Secure/);
    // The id is stored only as its hash.
    expect(await sessionRows(cp, r.cookie)).toBe(1);
    const [raw] = (await cp.db.orm.em.fork().execute('select count(*)::int as n from sessions where id_hash = ?', [idOf(r.cookie)])) as { n: number }[];
    expect(raw.n).toBe(0);
    const me = await json(cp.url, 'GET', '/console/session', { cookie: r.cookie });
    expect([me.status, me.body.keyId, me.body.kind]).toEqual([200, w.user.id, 'user']);
  });

  it('signs in with a platform key; a service key is refused (403) and opens nothing', async () => {
    const p = await signIn(cp.url, w.platform.secret);
    expect([p.status, p.body.kind, p.body.tenantId]).toEqual([200, 'platform', undefined]);
    const before = await sessionRows(cp);
    const s = await signIn(cp.url, w.service.secret);
    expect([s.status, s.body.code, s.headers['set-cookie']]).toEqual([403, 'permission_denied', undefined]);
    expect(await sessionRows(cp)).toBe(before);
  });

  it('takes the key from headers only: none, an unknown one, one in the URL or in a body, are 401 or 415', async () => {
    expect((await send(cp.url, 'POST', '/console/session', {})).status).toBe(401);
    expect((await send(cp.url, 'POST', '/console/session', { 'x-api-key': 'azk_nope_nope_nope_nope_nope_nope_nope_nope' })).status).toBe(401);
    expect((await send(cp.url, 'POST', `/console/session?apiKey=${w.user.secret}`, {})).status).toBe(401);
    expect((await send(cp.url, 'POST', '/console/session', { 'content-type': 'application/json' }, JSON.stringify({ apiKey: w.user.secret }))).status).toBe(401);
    expect((await send(cp.url, 'POST', '/console/session', { 'content-type': 'application/x-www-form-urlencoded' }, `apiKey=${w.user.secret}`)).status).toBe(415);
    const bearer = await signIn(cp.url, '', { authorization: `Bearer ${w.user.secret}`, 'x-api-key': '' });
    expect(bearer.status).toBe(200);
    expect((await send(cp.url, 'PUT', '/console/session', {})).status).toBe(405);
  });

  it("a user key's session reaches its tenant and no other, and no platform or decision RPC, on every surface", async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    const c = { cookie };
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, c)).status).toBe(200);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantB}`, c)).status).toBe(403);
    expect((await json(cp.url, 'POST', '/tenants', c, { name: 'nope' })).status).toBe(403);
    // The decision tier admits service and platform keys: not a user key, not its session (lean path).
    const evaluate = { actor: { subjectId: 'subject_x' }, scopeId: w.scopeA, action: 'read' };
    expect((await json(cp.url, 'POST', '/evaluate', c, evaluate)).status).toBe(403);
    expect((await json(cp.url, 'POST', '/authz.v1.DecisionService/Evaluate', c, evaluate)).status).toBe(403);
    for (const transport of [
      createConnectTransport({ baseUrl: cp.url, httpVersion: '1.1', interceptors: [withHeader('cookie', cookie)] }),
      createGrpcWebTransport({ baseUrl: cp.url, httpVersion: '1.1', interceptors: [withHeader('cookie', cookie)] }),
      createGrpcTransport({ baseUrl: cp.url, interceptors: [withHeader('cookie', cookie)] }),
    ]) {
      const tenancy = createClient(TenancyService, transport);
      expect((await tenancy.getTenant({ id: w.tenantA })).tenant?.id).toBe(w.tenantA);
      await expect(tenancy.getTenant({ id: w.tenantB })).rejects.toMatchObject({ code: Code.PermissionDenied });
      await expect(tenancy.createTenant({ name: 'nope' })).rejects.toMatchObject({ code: Code.PermissionDenied });
    }
  });

  it("a platform key's session reaches what the key does, the lean decision path included; no Watch stream", async () => {
    const { cookie } = await signIn(cp.url, w.platform.secret);
    const created = await json(cp.url, 'POST', '/tenants', { cookie }, { name: 'by-session' });
    expect(created.status).toBe(200);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantB}`, { cookie })).status).toBe(200);
    const evaluate = { actor: { subjectId: 'subject_x' }, scopeId: w.scopeA, action: 'read' };
    expect((await json(cp.url, 'POST', '/evaluate', { cookie }, evaluate)).status).toBe(200);
    expect((await json(cp.url, 'POST', '/authz.v1.DecisionService/Evaluate', { cookie }, evaluate)).status).toBe(200);
    const watch = createClient(SnapshotService, createGrpcTransport({ baseUrl: cp.url, interceptors: [withHeader('cookie', cookie)] }));
    const err = await (async () => {
      try {
        for await (const _ of watch.watch({ tenantId: w.tenantA })) return undefined;
      } catch (e) {
        return ConnectError.from(e);
      }
    })();
    expect(err?.code).toBe(Code.PermissionDenied);
    expect(err?.rawMessage).toMatch(/console session/);
  });

  it('with a key header and the cookie, the header wins (an invalid header is not saved by the cookie)', async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    expect((await json(cp.url, 'POST', '/tenants', { cookie, 'x-api-key': TEST_BOOTSTRAP_KEY }, { name: 'header-wins' })).status).toBe(200);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie, 'x-api-key': 'azk_nope_nope_nope_nope_nope_nope_nope_nope' })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie, authorization: 'Basic abc' })).status).toBe(401);
  });

  it('refuses an unknown session id, a malformed one, and two session cookies', async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: `authz_session=azs_${'A'.repeat(43)}` })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: 'authz_session=x' })).status).toBe(401);
    // Two session cookies are refused, whichever of them is the valid one.
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: `${cookie}; authz_session=azs_${'B'.repeat(43)}` })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: `authz_session=azs_${'B'.repeat(43)}; ${cookie}` })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: `${cookie}; ${cookie}` })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: `other=1; ${cookie}` })).status).toBe(200);
  });

  it('ends a session idle for the idle timeout, and keeps one in use alive; last_seen_at is written once per period', async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    const get = () => json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie });
    const first = await lastSeen(cp, cookie);
    for (let i = 0; i < 5; i++) expect((await get()).status).toBe(200);
    expect(await lastSeen(cp, cookie)).toBe(first);
    offset += 20 * 60_000;
    expect((await get()).status).toBe(200);
    expect(await lastSeen(cp, cookie)).toBeGreaterThan(first + 19 * 60_000);
    offset += 20 * 60_000; // 40 minutes after sign-in, 20 after the last use
    expect((await get()).status).toBe(200);
    offset += IDLE_MINUTES * 60_000;
    const idle = await get();
    expect([idle.status, idle.body.message]).toEqual([401, expect.stringMatching(/session has ended/)]);
    expect(await sessionRows(cp, cookie)).toBe(0);
  });

  it('ends a session at its absolute lifetime however much it is used', async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    const get = () => json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie });
    for (let h = 0; h < MAX_HOURS * 3 - 1; h++) {
      offset += 20 * 60_000;
      expect((await get()).status, `after ${h + 1} × 20 minutes`).toBe(200);
    }
    offset += 20 * 60_000;
    expect((await get()).status).toBe(401);
    expect(await sessionRows(cp, cookie)).toBe(0);
  });

  it('ends a session no later than its key expires', async () => {
    const k = await newKey(cp.url, { kind: 'user', tenantId: w.tenantA, expiresAt: new Date(Date.now() + offset + 3_600_000).toISOString() });
    const r = await signIn(cp.url, k.secret);
    expect(Date.parse(r.body.expiresAt)).toBeLessThanOrEqual(Date.now() + offset + 3_600_000);
    expect(Number(/Max-Age=(\d+)/.exec(r.headers['set-cookie']![0])![1])).toBeLessThanOrEqual(3600);
    for (let i = 0; i < 2; i++) {
      offset += 25 * 60_000;
      expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: r.cookie })).status).toBe(200);
    }
    offset += 11 * 60_000;
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie: r.cookie })).status).toBe(401);
  });

  it('sign-out deletes the session and clears the cookie', async () => {
    const { cookie } = await signIn(cp.url, w.user.secret);
    const out = await json(cp.url, 'DELETE', '/console/session', { cookie });
    expect(out.status).toBe(200);
    expect(out.headers['set-cookie']).toEqual(['authz_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict']);
    expect(await sessionRows(cp, cookie)).toBe(0);
    expect((await json(cp.url, 'GET', '/console/session', { cookie })).status).toBe(401);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(401);
  });

  it('a revoked key ends its sessions at once', async () => {
    const k = await newKey(cp.url, { kind: 'user', tenantId: w.tenantA });
    const { cookie } = await signIn(cp.url, k.secret);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(200);
    expect((await withKey(cp.url, TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${k.id}`)).status).toBe(200);
    expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(401);
    expect(await sessionRows(cp, cookie)).toBe(0);
  });

  describe('cross-site requests with the cookie are refused and write nothing', () => {
    let cookie: string;
    beforeAll(async () => {
      ({ cookie } = await signIn(cp.url, w.platform.secret));
    });
    const evil = 'https://evil.example';

    it('a form post (text/plain, urlencoded, multipart) from another site: 415', async () => {
      const before = await storeDigest(cp.db);
      for (const [type, body] of [
        ['text/plain', '{"name":"csrf"}'],
        ['application/x-www-form-urlencoded', 'name=csrf'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\ncsrf\r\n--x--\r\n'],
      ]) {
        for (const path of ['/tenants', '/authz.v1.TenancyService/CreateTenant', '/console/session']) {
          const r = await send(cp.url, 'POST', path, { cookie, origin: evil, 'sec-fetch-site': 'cross-site', 'content-type': type }, body);
          expect(r.status, `${type} to ${path}`).toBe(415);
        }
      }
      expect(await storeDigest(cp.db)).toEqual(before);
    });

    it('a cross-origin fetch (application/json) from another origin: 403', async () => {
      const before = await storeDigest(cp.db);
      const cases: Record<string, string>[] = [
        { origin: evil },
        { origin: 'null' },
        { origin: cp.url.replace('127.0.0.1', 'localhost') },
        { origin: 'http://127.0.0.1:1' },
        { origin: `${cp.url}/path` },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
        { origin: cp.url, 'sec-fetch-site': 'same-site' },
      ];
      for (const h of cases) {
        const rest = await json(cp.url, 'POST', '/tenants', { cookie, ...h }, { name: 'csrf' });
        expect([rest.status, rest.body.code], JSON.stringify(h)).toEqual([403, 'permission_denied']);
        const connect = await json(cp.url, 'POST', '/authz.v1.TenancyService/CreateTenant', { cookie, ...h }, { name: 'csrf' });
        expect(connect.status, JSON.stringify(h)).toBe(403);
        const lean = await json(cp.url, 'POST', '/evaluate', { cookie, ...h }, { actor: { subjectId: 'subject_x' }, scopeId: w.scopeA, action: 'read' });
        expect(lean.status, JSON.stringify(h)).toBe(403);
        expect((await json(cp.url, 'DELETE', '/console/session', { cookie, ...h })).status).toBe(403);
        expect((await json(cp.url, 'GET', '/console/session', { cookie, ...h })).status).toBe(403);
      }
      expect(await storeDigest(cp.db)).toEqual(before);
      expect(await sessionRows(cp, cookie)).toBe(1);
      // An API key is not a browser's ambient credential: its requests are not checked for origin.
      expect((await json(cp.url, 'GET', `/tenants/${w.tenantA}`, { 'x-api-key': TEST_BOOTSTRAP_KEY, origin: evil })).status).toBe(200);
    });

    it('the same requests from the own origin go through', async () => {
      const own: Record<string, string>[] = [{ origin: cp.url }, { origin: cp.url, 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'same-origin' }, {}];
      for (const h of own) {
        expect((await json(cp.url, 'POST', '/tenants', { cookie, ...h }, { name: 'same-origin' })).status, JSON.stringify(h)).toBe(200);
      }
    });
  });

  it('the periodic sweep deletes timed-out sessions nobody uses again', async () => {
    let sweptOffset = 0;
    const swept = await startTestControlPlane(backend, { SERVICE_CHANGE_LOG_COMPACT_INTERVAL_MS: '20' }, { sessionClock: () => Date.now() + sweptOffset });
    try {
      const { cookie } = await signIn(swept.url, TEST_BOOTSTRAP_KEY);
      const other = await signIn(swept.url, TEST_BOOTSTRAP_KEY);
      await new Promise((r) => setTimeout(r, 100));
      expect(await sessionRows(swept)).toBe(2);
      expect((await json(swept.url, 'GET', '/console/session', { cookie })).status).toBe(200);
      sweptOffset = 31 * 60_000;
      const deadline = Date.now() + 5_000;
      while ((await sessionRows(swept)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await sessionRows(swept)).toBe(0);
      expect(other.status).toBe(200);
    } finally {
      await swept.close();
    }
  });
});

describe('console sessions behind TLS', () => {
  let certs: TestCertificates;
  let cp: ControlPlane & { url: string };
  beforeAll(async () => {
    certs = await testCertificates(['localhost', '127.0.0.1']);
    cp = await startTestControlPlane('embedded', { SERVICE_TLS_CERT_FILE: certs.certFile, SERVICE_TLS_KEY_FILE: certs.keyFile });
  });
  afterAll(() => cp?.close());

  it('sets a Secure cookie named __Host-authz_session, honoured over https from the own origin only', async () => {
    const r = await signIn(cp.url, TEST_BOOTSTRAP_KEY, {}, certs.ca);
    expect(r.status).toBe(200);
    expect(r.headers['set-cookie']![0]).toMatch(/^__Host-authz_session=azs_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
    expect((await send(cp.url, 'GET', '/console/session', { cookie: r.cookie }, undefined, certs.ca)).status).toBe(200);
    expect((await send(cp.url, 'GET', '/console/session', { cookie: r.cookie, origin: cp.url }, undefined, certs.ca)).status).toBe(200);
    // The plain-text origin of the same host is another origin.
    expect((await send(cp.url, 'GET', '/console/session', { cookie: r.cookie, origin: cp.url.replace('https:', 'http:') }, undefined, certs.ca)).status).toBe(403);
    // The name without the prefix is not this server's cookie.
    expect((await send(cp.url, 'GET', '/console/session', { cookie: `authz_session=${idOf(r.cookie)}` }, undefined, certs.ca)).status).toBe(401);
  });
});

describe('no session id in the logs', () => {
  it('a debug-level run of sign-in, use, refusals and sign-out prints no session id; the cookie header is redacted', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
    const logger = pino({ level: 'debug', redact: { paths: REDACT_PATHS, censor: REDACTED } }, sink);
    const cp = await startControlPlane(loadConfig({ SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY, SERVICE_DATA_DIR: 'memory://' }, []), logger);
    let sessionId = '';
    try {
      const base = cp.server.url;
      const { cookie } = await signIn(base, TEST_BOOTSTRAP_KEY);
      await json(base, 'GET', '/tenants', { cookie });
      await json(base, 'POST', '/tenants', { cookie, origin: 'https://evil.example' }, { name: 'x' });
      await json(base, 'POST', '/tenants', { cookie: `${cookie}; ${cookie}` }, { name: 'x' });
      await send(base, 'POST', '/tenants', { cookie, 'content-type': 'text/plain' }, 'x');
      await json(base, 'DELETE', '/console/session', { cookie });
      await json(base, 'GET', '/tenants', { cookie });
      logger.info({ req: { headers: { cookie } }, res: { headers: { 'set-cookie': cookie } } }, 'a request as a serializer would log it');
      sessionId = idOf(cookie);
    } finally {
      await cp.close();
    }
    const text = lines.join('');
    expect(text).toContain('a request as a serializer would log it');
    expect(sessionId).toMatch(/^azs_/);
    expect(text).not.toContain(sessionId);
    expect(text).not.toContain(sessionId.slice(4, 20));
  });
});

describe.runIf(process.env.DATABASE_URL)('console sessions on two control planes over one PostgreSQL database', () => {
  let a: ControlPlane & { url: string };
  let b: ControlPlane;
  let w: World;
  beforeAll(async () => {
    a = await startTestControlPlane('postgres');
    const url = a.db.orm.config.get('clientUrl') as string;
    b = await startControlPlane(loadConfig({ SERVICE_PORT: '0', DATABASE_URL: url, SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY }, []), createLogger({ logLevel: 'silent' }));
    w = await seed(a.url);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const until = async (cond: () => Promise<boolean>, what: string) => {
    const start = Date.now();
    while (!(await cond())) {
      if (Date.now() - start > 1_000) throw new Error(`${what}: not within 1 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  it('a session opened on one is honoured by the other; a sign-out on one holds on the other at once', async () => {
    const { cookie } = await signIn(a.url, w.user.secret);
    expect((await json(b.server.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(200);
    expect((await json(b.server.url, 'DELETE', '/console/session', { cookie })).status).toBe(200);
    expect((await json(a.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(401);
  });

  it('a key revoked through one ends its sessions on the other as soon as the NOTIFY arrives', async () => {
    const k = await newKey(a.url, { kind: 'user', tenantId: w.tenantA });
    const { cookie } = await signIn(a.url, k.secret);
    // Both replicas have the key cached (answered from memory until the revocation).
    for (const base of [a.url, b.server.url, b.server.url]) expect((await json(base, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(200);
    expect((await withKey(a.url, TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${k.id}`)).status).toBe(200);
    await until(async () => (await json(b.server.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status === 401, 'the revocation on the other replica');
    expect((await json(a.url, 'GET', `/tenants/${w.tenantA}`, { cookie })).status).toBe(401);
  });
});
