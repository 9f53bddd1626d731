/**
 * Write-path benchmark (contract target): creating 10,000 resources through
 * BatchCreateResources (10 calls of 1,000) must take at most 3× what raw multi-row INSERTs of
 * the same rows through `pg` take on the same database.
 *
 * Creates a fresh PostgreSQL database (admin connection: DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), starts the real control plane on it (app.ts:
 * migrations, bootstrap platform key, every service; REST gateway → Connect router → metrics,
 * error and auth interceptors → ResourceService handler → store) on a free port, seeds a tenant
 * and a resource type, and then, after a warm-up round, times rounds of
 *   - api: 10 × `POST /resources/batch` with 1,000 items each, over HTTP/1.1 keep-alive;
 *   - raw: 10 × one multi-row `INSERT INTO resources …` of 1,000 equivalent rows through `pg`
 * interleaved call by call (api, raw, raw, api, …), so both paths see the same machine load and
 * the same table. Before every round the resources table and the change log are emptied, so a
 * round is exactly "create 10,000 resources" both ways (--grow keeps earlier rows, to watch both
 * paths as the table grows). Prints the medians over the rounds and the median of the rounds'
 * ratios; exits 1 when that ratio is over 3. The database is dropped at the end.
 *
 * With --connect, the same RPC over the Connect protocol (binary protobuf, same server) is timed
 * too and reported for information; the gate is the REST ratio.
 *
 * Usage: npm run bench:writes [-- --rounds 7] [--grow] [--connect]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { ResourceService } from '../gen/authz/v1/resource_service_pb.js';
import type { Database } from '../services/store/db.js';
import { runWrite } from '../services/store/write.js';
import { startControlPlane, type ControlPlane } from '../services/control-plane/app.js';
import { loadConfig } from '../services/control-plane/config.js';
import { createScratchDatabase } from '../test/databases.js';
import { loadAverageNow, writeResults } from './results-file.js';

const CALLS = 10;
const PER_CALL = 1000;
const MAX_RATIO = 3;
const TENANT = 'tenant_bench';
const SCOPE = `scope_${TENANT}`;
const TYPE = 'resource_type_bench';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const ROUNDS = arg('rounds', 7);
/** With --grow the resources of earlier runs stay, so later runs write into an ever larger table. */
const GROW = process.argv.includes('--grow');
/** With --connect the Connect-protocol (binary) surface of the same server is timed too, for information. */
const CONNECT = process.argv.includes('--connect');

/** The fields of one benchmark resource, shared by both paths so they write equivalent rows. */
function item(tag: string, call: number, i: number) {
  return {
    id: `resource_${tag}_${call}_${i}`,
    externalResourceId: `${tag}-${call}-${i}`,
    displayName: `Resource ${call}/${i}`,
    attributes: { department: 'engineering', index: i, labels: ['a', 'b'] },
  };
}

async function seed(db: Database) {
  await runWrite(db, async (tx) => {
    const now = new Date();
    await tx.insert('tenant', [{ id: TENANT, name: 'bench', scopeId: SCOPE, revision: 0, createdAt: now, createdBy: 'bench' }]);
    await tx.useTenant(TENANT);
    await tx.insert('scope', [{ id: SCOPE, tenantId: TENANT, name: 'root', typeId: 'scope_type_tenant', createdAt: now, createdBy: 'bench' }]);
    await tx.insert('resourceType', [{ id: TYPE, tenantId: TENANT, name: 'Bench', key: 'bench', scopeId: SCOPE, createdAt: now, createdBy: 'bench' }]);
  });
}

/** One `POST /resources/batch` of 1,000 items per prepared body; each call's milliseconds. */
function apiCalls(baseUrl: string, secret: string, tag: string): (() => Promise<number>)[] {
  return Array.from({ length: CALLS }, (_, call) => {
    const body = JSON.stringify(Array.from({ length: PER_CALL }, (_, i) => ({ ...item(tag, call, i), resourceTypeId: TYPE, ownerScopeId: SCOPE })));
    return async () => {
      const t0 = performance.now();
      const res = await fetch(`${baseUrl}/resources/batch`, {
        method: 'POST', body, headers: { 'content-type': 'application/json', 'x-api-key': secret },
      });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`POST /resources/batch answered ${res.status}: ${text.slice(0, 500)}`);
      if (!res.headers.get('x-revision')) throw new Error('POST /resources/batch answered without x-revision');
      return ms;
    };
  });
}

/** One BatchCreateResources of 1,000 items over the Connect protocol (binary protobuf) per call. */
function connectCalls(client: Client<typeof ResourceService>, tag: string): (() => Promise<number>)[] {
  return Array.from({ length: CALLS }, (_, call) => {
    const req = { items: Array.from({ length: PER_CALL }, (_, i) => ({ ...item(tag, call, i), resourceTypeId: TYPE, ownerScopeId: SCOPE })) };
    return async () => {
      const t0 = performance.now();
      const res = await client.batchCreateResources(req);
      const ms = performance.now() - t0;
      if (res.resources.length !== PER_CALL) throw new Error('BatchCreateResources answered a short batch');
      return ms;
    };
  });
}

/** One multi-row INSERT of 1,000 equivalent rows through pg per call (parameters prepared ahead). */
function rawCalls(client: pg.Client, tag: string): (() => Promise<number>)[] {
  const cols = ['id', 'tenant_id', 'created_at', 'created_by', 'resource_type_id', 'owner_scope_id', 'external_resource_id', 'display_name', 'attributes'];
  return Array.from({ length: CALLS }, (_, call) => {
    const values: unknown[] = [];
    const tuples: string[] = [];
    const now = new Date();
    for (let i = 0; i < PER_CALL; i++) {
      const it = item(tag, call, i);
      const base = values.length;
      values.push(it.id, TENANT, now, 'subject_bench', TYPE, SCOPE, it.externalResourceId, it.displayName, JSON.stringify(it.attributes));
      tuples.push(`(${cols.map((_, k) => `$${base + k + 1}`).join(', ')})`);
    }
    const text = `insert into resources (${cols.join(', ')}) values ${tuples.join(', ')}`;
    return async () => {
      const t0 = performance.now();
      await client.query(text, values);
      return performance.now() - t0;
    };
  });
}

/**
 * One round: 10 calls of each path, interleaved call by call (which path goes first alternates),
 * so both see the same machine load and the same table; milliseconds per path.
 */
async function round(paths: Record<string, (() => Promise<number>)[]>, r: number): Promise<Record<string, number>> {
  const names = Object.keys(paths);
  const total: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (let call = 0; call < CALLS; call++) {
    const order = (r + call) % 2 === 0 ? names : [...names].reverse();
    for (const n of order) total[n] += await paths[n][call]();
  }
  return total;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const loadAtStart = loadAverageNow();
  const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const { url, drop } = await createScratchDatabase(admin, 'authz_bench');
  let cp: ControlPlane | undefined;
  const raw = new pg.Client({ connectionString: url });
  try {
    // The real control plane (app.ts): every service, API-key verification against the store,
    // metrics, error mapping; the bootstrap platform key is the benchmark's credential.
    const secret = `sk_bench_${randomBytes(24).toString('hex')}`;
    const config = loadConfig({
      DATABASE_URL: url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: secret, SERVICE_LOG_LEVEL: 'silent',
    }, []);
    cp = await startControlPlane(config, pino({ level: 'silent' }));
    const srv = cp.server;
    await seed(cp.db);
    await raw.connect();
    console.log(`database ${new URL(url).pathname.slice(1)}; server ${srv.url}; ${CALLS} calls × ${PER_CALL} resources, ${ROUNDS} rounds${GROW ? ', table growing' : ', tables emptied before each round'}`);

    const reset = async () => {
      if (!GROW) await raw.query('truncate resources, change_log cascade');
    };
    const client = createClient(ResourceService, createConnectTransport({
      baseUrl: srv.url, httpVersion: '1.1', useBinaryFormat: true,
      interceptors: [(next) => (req) => (req.header.set('x-api-key', secret), next(req))],
    }));
    const pathsFor = (tag: string) => ({
      api: apiCalls(srv.url, secret, `api${tag}`),
      raw: rawCalls(raw, `raw${tag}`),
      ...(CONNECT ? { connect: connectCalls(client, `connect${tag}`) } : {}),
    });
    await reset();
    await round(pathsFor('warm'), 0); // warm-up: JIT, connections, caches
    const results: Record<string, number>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const paths = pathsFor(String(r));
      await reset();
      const t = await round(paths, r);
      results.push(t);
      console.log(`round ${r + 1}: api ${t.api.toFixed(0)} ms, raw ${t.raw.toFixed(0)} ms, ratio ${(t.api / t.raw).toFixed(2)}` +
        (CONNECT ? `; connect ${t.connect.toFixed(0)} ms, ratio ${(t.connect / t.raw).toFixed(2)}` : ''));
    }
    const a = median(results.map((t) => t.api));
    const b = median(results.map((t) => t.raw));
    // Each round times both paths side by side, so its ratio is one paired sample; the gate is
    // the median of those (steadier than a ratio of separately taken medians on a busy machine).
    const ratio = median(results.map((t) => t.api / t.raw));
    console.log(`median of ${ROUNDS} rounds: api (REST /resources/batch, real server) ${a.toFixed(0)} ms; raw pg multi-row INSERT ${b.toFixed(0)} ms`);
    console.log(`ratio (median of the rounds' ratios): ${ratio.toFixed(2)} (limit ${MAX_RATIO})`);
    if (CONNECT) {
      const cm = median(results.map((t) => t.connect));
      console.log(`median: connect (binary BatchCreateResources, real server) ${cm.toFixed(0)} ms; ratio ${(cm / b).toFixed(2)} (for information)`);
    }
    const command = ['npm run bench:writes --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
    const saved = {
      calls: CALLS, perCall: PER_CALL, rounds: ROUNDS, grow: GROW, apiMedianMs: Math.round(a), rawMedianMs: Math.round(b),
      ratio: Number(ratio.toFixed(2)), maxRatio: MAX_RATIO, roundsMs: results.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v)]))),
    };
    console.log(`wrote ${writeResults('writes', { command, results: saved, loadAtStart })}`);
    if (ratio > MAX_RATIO) {
      console.error(`FAIL: the batch path is ${ratio.toFixed(2)}× raw inserts; at most ${MAX_RATIO}× is allowed`);
      process.exitCode = 1;
    }
  } finally {
    await cp?.close();
    await raw.end().catch(() => undefined);
    await drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
