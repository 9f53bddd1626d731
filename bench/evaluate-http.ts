/**
 * The control plane's `POST /evaluate` end to end: a real server on a free port (PostgreSQL
 * from DATABASE_URL, else the embedded database in memory), the README quick start's tenant, and
 * REST calls with an API key, one at a time and 16 at once, on the lean decision path. Each call
 * verifies the key from the key cache (no query once cached), catches the tenant's index up to the
 * committed revision the process knows from NOTIFY (no query) and runs the engine. Results go to
 * bench/results/evaluate-http-<database>.json.
 *
 *   npm run bench:evaluate-http
 *
 * The client runs in the same process, so on a 2-core machine it shares the CPU with the
 * server: the figures bound what a remote client would see from above.
 */
import { startControlPlane } from '../services/control-plane/app.js';
import { loadConfig } from '../services/control-plane/config.js';
import { createLogger } from '../services/transport/observability.js';
import { createScratchDatabase } from '../test/databases.js';
import { loadAverageNow, writeResults } from './results-file.js';

const KEY = 'azk_bench_bootstrap_key_0123456789abcdefghijkl';
const SEQUENTIAL = 3000;
const CONCURRENCY = 16;
const CONCURRENT_CALLS = 6000;

async function main(): Promise<void> {
  const loadAtStart = loadAverageNow();
  const admin = process.env.DATABASE_URL;
  const scratch = admin ? await createScratchDatabase(admin, 'authz_bench') : undefined;
  const env: Record<string, string> = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, SERVICE_DATA_DIR: 'memory://' };
  if (scratch) env.DATABASE_URL = scratch.url;
  // BENCH_LEAN_WATCH=off: no lean Watch path beside the lean decisions (its cost to a decision, side by side).
  const cp = await startControlPlane(loadConfig(env, []), createLogger({ logLevel: 'silent' }), { leanWatch: process.env.BENCH_LEAN_WATCH !== 'off' });
  try {
    const base = cp.server.url;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(base + path, { method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = (await r.json()) as Record<string, string>;
      if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
      return json;
    };
    const tenant = await call('POST', '/tenants', { name: 'acme' });
    const team = await call('POST', '/scope-types', { name: 'team' });
    const scope = await call('POST', '/scopes', { tenantId: tenant.id, name: 'eng', typeId: team.id });
    const subject = await call('POST', '/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' });
    const role = await call('POST', '/roles', { scopeId: scope.id, key: 'editor', name: 'Editor' });
    const perm = await call('POST', '/permissions', { scopeId: scope.id, action: 'edit', resourceType: 'doc', resourcePattern: '*' });
    await call('POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
    const m = await call('POST', '/memberships', { subjectId: subject.id, scopeId: scope.id });
    await call('POST', '/role-assignments', { membershipId: m.id, roleId: role.id });
    const type = await call('POST', '/resource-types', { name: 'Document', key: 'doc', scopeId: scope.id });
    const res = await call('POST', '/resources', { resourceTypeId: type.id, ownerScopeId: scope.id, externalResourceId: 'readme' });
    const ask = { actor: { subjectId: subject.id }, scopeId: scope.id, action: 'edit', resource: { resourceId: res.id } };
    const evaluate = async () => {
      if ((await call('POST', '/evaluate', ask)).allowed !== (true as unknown)) throw new Error('expected an allow');
    };

    for (let i = 0; i < 300; i++) await evaluate();
    const samples = new Float64Array(SEQUENTIAL);
    for (let i = 0; i < SEQUENTIAL; i++) {
      const t0 = performance.now();
      await evaluate();
      samples[i] = performance.now() - t0;
    }
    samples.sort();
    const q = (p: number) => samples[Math.min(SEQUENTIAL - 1, Math.floor(p * SEQUENTIAL))].toFixed(3);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = 0; i < CONCURRENT_CALLS / CONCURRENCY; i++) await evaluate();
      }),
    );
    const perSec = Math.round(CONCURRENT_CALLS / ((performance.now() - t0) / 1000));
    console.log(`database: ${scratch ? 'PostgreSQL' : 'embedded (PGlite)'}`);
    console.log(`one at a time: median ${q(0.5)} ms, p99 ${q(0.99)} ms over ${SEQUENTIAL} calls`);
    console.log(`${CONCURRENCY} at once: ${perSec} calls/s over ${CONCURRENT_CALLS} calls`);
    const results = {
      database: scratch ? 'postgres' : 'embedded',
      oneAtATime: { calls: SEQUENTIAL, medianMs: Number(q(0.5)), p99Ms: Number(q(0.99)) },
      concurrent: { concurrency: CONCURRENCY, calls: CONCURRENT_CALLS, callsPerSec: perSec },
    };
    const command = `${scratch ? 'DATABASE_URL=… ' : ''}npm run bench:evaluate-http`;
    console.log(`wrote ${writeResults(`evaluate-http-${results.database}`, { command, results, loadAtStart })}`);
  } finally {
    await cp.close();
    await scratch?.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
