/**
 * The API-key cache: two control planes on one PostgreSQL database (a revocation through one is
 * refused by the other as soon as its NOTIFY arrives; a new key works at once on both; the cache
 * is bypassed while the LISTEN connection is down), expiry by the clock, and what may enter it.
 */
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../app.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../../transport/observability.js';
import { Notifications } from '../../store/notifications.js';
import type { Database } from '../../store/db.js';
import { describeEachBackend, TEST_BOOTSTRAP_KEY, startTestControlPlane } from '../../../test/harness.js';
import { CachedKeyVerifier } from './key-cache.js';
import { hashSecret } from './key-store.js';

/** How long a NOTIFY may take to reach the other process before the test fails. */
const NOTIFY_BOUND_MS = 1_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<number> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(5);
  }
  return Date.now() - start;
}

/** The key verifier a control plane uses (its metrics read the same object). */
async function cacheSize(cp: ControlPlane): Promise<number> {
  const text = await (await fetch(`${cp.server.url}/metrics`)).text();
  return Number(/authz_api_key_cache_entries (\d+)/.exec(text)?.[1]);
}

interface Setup {
  tenantId: string;
  rootScopeId: string;
}

async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(base + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

async function setUp(base: string): Promise<Setup> {
  const t = await call(base, TEST_BOOTSTRAP_KEY, 'POST', '/tenants', { name: 'keys' });
  expect(t.status).toBe(200);
  return { tenantId: t.body.id as string, rootScopeId: t.body.scopeId as string };
}

async function newKey(base: string, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const k = await call(base, TEST_BOOTSTRAP_KEY, 'POST', '/api-keys', { name: 'k', ...body });
  expect(k.status, JSON.stringify(k.body)).toBe(200);
  return { id: k.body.id as string, secret: k.body.secretKey as string };
}

describeEachBackend('the key cache in one process on %s', (backend) => {
  let cp: ControlPlane & { url: string };
  let s: Setup;
  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
    s = await setUp(cp.url);
  });
  afterAll(() => cp?.close());

  const evaluate = (base: string, key: string) => call(base, key, 'POST', '/evaluate', { actor: { subjectId: 'subject_x' }, scopeId: s.rootScopeId, action: 'read' });

  it('answers from memory, and a revocation through the same process applies to its very next call', async () => {
    const k = await newKey(cp.url, { kind: 'service', tenantId: s.tenantId });
    for (let i = 0; i < 3; i++) expect((await evaluate(cp.url, k.secret)).status).toBe(200);
    expect(await cacheSize(cp)).toBeGreaterThan(0);
    expect((await call(cp.url, TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${k.id}`)).status).toBe(200);
    expect((await evaluate(cp.url, k.secret)).status).toBe(401);
  });

  it('refuses an expired key once its time passes, with no write in between', async () => {
    const expiresAt = new Date(Date.now() + 1_500);
    const k = await newKey(cp.url, { kind: 'service', tenantId: s.tenantId, expiresAt: expiresAt.toISOString() });
    expect((await evaluate(cp.url, k.secret)).status).toBe(200);
    expect((await evaluate(cp.url, k.secret)).status).toBe(200);
    await sleep(Math.max(0, expiresAt.getTime() - Date.now() + 5));
    const after = await evaluate(cp.url, k.secret);
    expect([after.status, after.body.message]).toEqual([401, 'unknown, revoked or expired API key']);
  });

  it('keeps no entry for unknown secrets, nor for wrong secrets of a known prefix', async () => {
    const k = await newKey(cp.url, { kind: 'service', tenantId: s.tenantId });
    expect((await evaluate(cp.url, k.secret)).status).toBe(200);
    // The database's echo of the creation's NOTIFY may drop the entry (or keep a read in flight
    // from being stored) once more: let it arrive, then cache the key for good.
    await sleep(200);
    expect((await evaluate(cp.url, k.secret)).status).toBe(200);
    const before = await cacheSize(cp);
    for (let i = 0; i < 50; i++) {
      expect((await evaluate(cp.url, `azk_${i}${'x'.repeat(40)}`)).status).toBe(401);
      expect((await evaluate(cp.url, k.secret.slice(0, 20) + 'y'.repeat(27))).status).toBe(401);
    }
    expect(await cacheSize(cp)).toBe(before);
    expect((await evaluate(cp.url, k.secret)).status).toBe(200);
  });
});

describe.runIf(process.env.DATABASE_URL)('the key cache across two processes on one PostgreSQL database', () => {
  let a: ControlPlane & { url: string };
  let b: ControlPlane;
  let url: string;
  let s: Setup;
  let admin: pg.Client;

  beforeAll(async () => {
    a = await startTestControlPlane('postgres');
    url = a.db.orm.config.get('clientUrl') as string;
    b = await startControlPlane(loadConfig({ SERVICE_PORT: '0', DATABASE_URL: url, SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY }, []), createLogger({ logLevel: 'silent' }));
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    s = await setUp(a.url);
  });
  afterAll(async () => {
    await admin?.end();
    await b?.close();
    await a?.close();
  });

  const evaluate = (base: string, key: string) => call(base, key, 'POST', '/evaluate', { actor: { subjectId: 'subject_x' }, scopeId: s.rootScopeId, action: 'read' });
  const B = () => b.server.url;

  it(`a key revoked through A is refused by B once the NOTIFY arrives (within ${NOTIFY_BOUND_MS} ms)`, async () => {
    const k = await newKey(a.url, { kind: 'service', tenantId: s.tenantId });
    for (let i = 0; i < 3; i++) expect((await evaluate(B(), k.secret)).status).toBe(200);
    expect((await call(a.url, TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${k.id}`)).status).toBe(200);
    expect((await evaluate(a.url, k.secret)).status).toBe(401);
    const waited = await until(async () => (await evaluate(B(), k.secret)).status === 401, NOTIFY_BOUND_MS, 'B refuses the revoked key');
    expect(waited).toBeLessThan(NOTIFY_BOUND_MS);
  });

  it('platform keys, which have no tenant, are invalidated too', async () => {
    const k = await newKey(a.url, { kind: 'platform' });
    expect((await evaluate(B(), k.secret)).status).toBe(200);
    expect((await evaluate(B(), k.secret)).status).toBe(200);
    expect((await call(a.url, TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${k.id}`)).status).toBe(200);
    await until(async () => (await evaluate(B(), k.secret)).status === 401, NOTIFY_BOUND_MS, 'B refuses the revoked platform key');
  });

  it('a key written by hand (psql) is invalidated too: the trigger sends the NOTIFY', async () => {
    const k = await newKey(a.url, { kind: 'service', tenantId: s.tenantId });
    expect((await evaluate(B(), k.secret)).status).toBe(200);
    expect((await evaluate(a.url, k.secret)).status).toBe(200);
    await admin.query(`update api_keys set status = 'revoked' where id = $1`, [k.id]);
    await until(async () => (await evaluate(B(), k.secret)).status === 401 && (await evaluate(a.url, k.secret)).status === 401, NOTIFY_BOUND_MS, 'both refuse');
  });

  it('a key created through A works at once on both', async () => {
    for (let i = 0; i < 5; i++) {
      const k = await newKey(a.url, { kind: 'service', tenantId: s.tenantId });
      expect((await evaluate(B(), k.secret)).status).toBe(200);
      expect((await evaluate(a.url, k.secret)).status).toBe(200);
    }
  });

  it('while B\'s LISTEN connection is down its cache is not trusted: a revocation it cannot hear of applies to the next call; after reconnecting it starts empty', async () => {
    const k = await newKey(a.url, { kind: 'service', tenantId: s.tenantId });
    const other = await newKey(a.url, { kind: 'service', tenantId: s.tenantId });
    for (const key of [k, other]) expect((await evaluate(B(), key.secret)).status).toBe(200);
    const n = b.db.notifications as unknown as { client?: pg.Client & { processID: number }; opts: { retryMs?: number }; epoch: number; live: boolean };
    const epoch = n.epoch;
    n.opts.retryMs = 2_000; // reconnects later than this test needs to look
    const pid = n.client!.processID;
    await admin.query('select pg_terminate_backend($1)', [pid]);
    await until(() => !n.live, 2_000, 'B notices the lost connection');
    // Revoked through another connection: the NOTIFY reaches nobody in B.
    await admin.query(`update api_keys set status = 'revoked' where id = $1`, [k.id]);
    const refused = await evaluate(B(), k.secret);
    expect([refused.status, n.live, n.epoch]).toEqual([401, false, epoch]);
    expect((await evaluate(B(), other.secret)).status).toBe(200);
    expect(n.live).toBe(false);
    n.opts.retryMs = 500;
    await until(() => n.epoch === epoch + 1 && n.live, 10_000, 'B listens again');
    expect(await cacheSize(b)).toBe(0);
    expect((await evaluate(B(), other.secret)).status).toBe(200);
    expect((await evaluate(B(), k.secret)).status).toBe(401);
  });

  it('an expired key is refused by both once its time passes, with no write', async () => {
    const expiresAt = new Date(Date.now() + 1_500);
    const k = await newKey(a.url, { kind: 'service', tenantId: s.tenantId, expiresAt: expiresAt.toISOString() });
    for (const base of [a.url, B(), a.url, B()]) expect((await evaluate(base, k.secret)).status).toBe(200);
    await sleep(Math.max(0, expiresAt.getTime() - Date.now() + 5));
    for (const base of [a.url, B()]) expect((await evaluate(base, k.secret)).status).toBe(401);
  });
});

/** A database whose key reads the test controls, for the races a real one cannot stage on demand. */
function fakeDatabase(rows: Record<string, unknown>[]) {
  const notifications = new Notifications({ url: undefined, channels: [], logger: pino({ level: 'silent' }) });
  let live = true;
  Object.defineProperty(notifications, 'live', { get: () => live });
  const pending: (() => void)[] = [];
  let reads = 0;
  const db = {
    notifications,
    orm: {
      em: {
        getConnection: () => ({
          execute: async (_sql: string, [prefix]: string[]) => {
            reads++;
            const answer = rows.filter((r) => r.prefix === prefix).map((r) => ({ ...r }));
            await new Promise<void>((resolve) => pending.push(resolve));
            return answer;
          },
        }),
      },
    },
  } as unknown as Database;
  return {
    db,
    setLive: (v: boolean) => (live = v),
    /** Lets every read in flight answer. */
    release: async () => {
      while (pending.length) pending.shift()!();
      await sleep(0);
    },
    reads: () => reads,
  };
}

const SECRET = 'azk_fakeprefix_0123456789abcdefghijklmnopqrstuv';
const row = (extra: Record<string, unknown> = {}) => ({
  id: 'apk_1', kind: 'service', tenantId: 'tenant_1', subjectId: 'subject_1', secretHash: hashSecret(SECRET), hashAlgo: 'sha256',
  status: 'active', expiresAt: null, environmentId: null, environmentScopeId: null, prefix: SECRET.slice(0, 12), ...extra,
});

describe('the key cache\'s races', () => {
  it('does not store a read that an invalidation overtook', async () => {
    const f = fakeDatabase([row()]);
    const cache = new CachedKeyVerifier(f.db);
    const first = cache.verify(SECRET) as Promise<unknown>;
    f.db.notifications.deliverLocal('authz_keys', SECRET.slice(0, 12));
    await f.release();
    expect(await first).toMatchObject({ keyId: 'apk_1' });
    expect(cache.stats.size).toBe(0);
    const second = cache.verify(SECRET);
    expect(second).toBeInstanceOf(Promise);
    await f.release();
    await second;
    expect(cache.stats.size).toBe(1);
    expect(cache.verify(SECRET)).toMatchObject({ keyId: 'apk_1' }); // synchronous: a hit
  });

  it('a call after an invalidation does not join a read that started before it', async () => {
    const f = fakeDatabase([row()]);
    const cache = new CachedKeyVerifier(f.db);
    const first = cache.verify(SECRET);
    const joined = cache.verify(SECRET);
    expect(f.reads()).toBe(1);
    f.db.notifications.deliverLocal('authz_keys', SECRET.slice(0, 12));
    const after = cache.verify(SECRET);
    expect(f.reads()).toBe(2);
    await f.release();
    await Promise.all([first, joined, after]);
  });

  it('neither trusts nor fills the cache while notifications are down, and forgets everything on resync', async () => {
    const f = fakeDatabase([row()]);
    const cache = new CachedKeyVerifier(f.db);
    const p = cache.verify(SECRET);
    await f.release();
    await p;
    expect(cache.verify(SECRET)).toMatchObject({ keyId: 'apk_1' });
    f.setLive(false);
    const bypass = cache.verify(SECRET);
    expect(bypass).toBeInstanceOf(Promise);
    await f.release();
    await bypass;
    expect(cache.stats.bypasses).toBe(1);
    f.setLive(true);
    (f.db.notifications as unknown as { resyncHandlers: Set<() => void> }).resyncHandlers.forEach((fn) => fn());
    expect(cache.stats.size).toBe(0);
  });

  it('holds at most maxEntries prefixes, and trusts an entry for maxAgeMs at most', async () => {
    const secrets = [0, 1, 2].map((i) => `azk_prefix${i}xx_0123456789abcdefghijklmnopqrstuv`);
    const f = fakeDatabase(secrets.map((sec, i) => row({ id: `apk_${i}`, secretHash: hashSecret(sec), prefix: sec.slice(0, 12) })));
    let now = 1_000_000;
    const cache = new CachedKeyVerifier(f.db, { maxEntries: 2, maxAgeMs: 1_000, now: () => now });
    for (const sec of secrets) {
      const p = cache.verify(sec);
      await f.release();
      await p;
    }
    expect(cache.stats.size).toBe(2);
    expect(cache.verify(secrets[2])).toMatchObject({ keyId: 'apk_2' });
    now += 1_000;
    expect(cache.verify(secrets[2])).toBeInstanceOf(Promise);
    await f.release();
  });

  it('drops the least recently used prefix first, a hit counting as a use', async () => {
    const secrets = [0, 1, 2].map((i) => `azk_prefix${i}xx_0123456789abcdefghijklmnopqrstuv`);
    const f = fakeDatabase(secrets.map((sec, i) => row({ id: `apk_${i}`, secretHash: hashSecret(sec), prefix: sec.slice(0, 12) })));
    const cache = new CachedKeyVerifier(f.db, { maxEntries: 2 });
    const readThrough = async (sec: string) => {
      const p = cache.verify(sec);
      expect(p).toBeInstanceOf(Promise);
      await f.release();
      await p;
    };
    await readThrough(secrets[0]);
    await readThrough(secrets[1]);
    // prefix 0, read first, is used again: prefix 1 is now the least recently used.
    expect(cache.verify(secrets[0])).toMatchObject({ keyId: 'apk_0' });
    expect(cache.verify(secrets[0])).toMatchObject({ keyId: 'apk_0' });
    await readThrough(secrets[2]);
    expect(cache.verify(secrets[0])).toMatchObject({ keyId: 'apk_0' });
    expect(cache.verify(secrets[2])).toMatchObject({ keyId: 'apk_2' });
    await readThrough(secrets[1]);
    expect(cache.stats).toMatchObject({ size: 2, misses: 4 });
  });

  it('reads the database again for a revoked or expired match (a newer key may share the secret)', async () => {
    let now = 1_000_000;
    const f = fakeDatabase([row({ expiresAt: new Date(now + 100).toISOString() })]);
    const cache = new CachedKeyVerifier(f.db, { now: () => now });
    const p = cache.verify(SECRET);
    await f.release();
    expect(await p).toMatchObject({ keyId: 'apk_1' });
    expect(cache.verify(SECRET)).toMatchObject({ keyId: 'apk_1' });
    now += 100;
    const expired = cache.verify(SECRET);
    expect(expired).toBeInstanceOf(Promise);
    await f.release();
    expect(await expired).toBeNull();
  });
});
