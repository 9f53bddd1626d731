/**
 * Write-path benchmark: resources created through the API against the same rows written by raw
 * multi-row INSERTs, side by side in one run, on PostgreSQL.
 *
 * Creates a fresh PostgreSQL database (admin connection: DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), starts the real control plane on it (app.ts:
 * migrations, bootstrap platform key, every service; REST gateway → Connect router → metrics,
 * error and auth interceptors → ResourceService handler → store) on a free port, seeds a tenant
 * and a resource type, and then, after a warm-up round, times rounds in which every path creates
 * the same number of resources (default 20,000) into emptied tables:
 *   - raw: multi-row `INSERT INTO resources … VALUES (…), (…)` statements of 1,000 rows with the
 *     values written into the SQL text, sent one after another on one connection through pg's
 *     simple query protocol: what psql does with a file of such statements;
 *   - api: `POST /resources/batch` with 1,000 items each, 2 calls in flight (HTTP/1.1 keep-alive),
 *     as an outside client loading data would;
 *   - connect (with --connect): the same RPC over the Connect protocol (binary protobuf).
 * The order of the paths rotates from round to round, so each sees the same machine load. Each
 * round yields one paired ratio per path: its rows per second over raw's. Prints the median of
 * those ratios and exits 1 when the API's is under its target (API_TARGET). The database is
 * dropped at the end.
 *
 * With --scale, one import of 1,000,000 resources and 1,000,000 ownership grants instead
 * (writes-scale.ts).
 *
 * Usage: npm run bench:writes [-- --rows 20000] [--rounds 5] [--in-flight 2] [--connect] | [-- --scale]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { importNdjson } from '../services/import/ndjson-client.js';
import { runScale } from './writes-scale.js';
import { loadAverageNow, writeResults } from './results-file.js';

const PER_CALL = 1000;
/** The API's rows per second must be at least this share of raw INSERTs' (median of the rounds). */
const API_TARGET = 0.3;
/** The import path's rows per second must be at least this share of raw INSERTs'. */
const IMPORT_TARGET = 0.5;
const TENANT = 'tenant_bench';
const SCOPE = `scope_${TENANT}`;
const TYPE = 'resource_type_bench';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const ROWS = arg('rows', 20_000);
const ROUNDS = arg('rounds', 5);
const IN_FLIGHT = arg('in-flight', 2);
/** With --connect the Connect-protocol (binary) surface of the same server is timed too, for information. */
const CONNECT = process.argv.includes('--connect');
const CALLS = Math.ceil(ROWS / PER_CALL);

/** The fields of one benchmark resource, shared by every path so they write equivalent rows. */
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

/** A path of one round: made ahead of the clock (request bodies, SQL text), then run; its milliseconds. */
type Path = () => Promise<number>;

/** Runs `calls` with at most `inFlight` at once; the wall time of all of them. */
async function inFlight(calls: (() => Promise<void>)[], width: number): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < calls.length) await calls[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(width, calls.length) }, lane));
  return performance.now() - t0;
}

function apiPath(baseUrl: string, secret: string, tag: string): Path {
  const bodies = Array.from({ length: CALLS }, (_, call) =>
    JSON.stringify(Array.from({ length: PER_CALL }, (_, i) => ({ ...item(tag, call, i), resourceTypeId: TYPE, ownerScopeId: SCOPE }))));
  return () => inFlight(bodies.map((body) => async () => {
    const res = await fetch(`${baseUrl}/resources/batch`, {
      method: 'POST', body, headers: { 'content-type': 'application/json', 'x-api-key': secret },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST /resources/batch answered ${res.status}: ${text.slice(0, 500)}`);
    if (!res.headers.get('x-revision')) throw new Error('POST /resources/batch answered without x-revision');
  }), IN_FLIGHT);
}

function connectPath(client: Client<typeof ResourceService>, tag: string): Path {
  const reqs = Array.from({ length: CALLS }, (_, call) =>
    ({ items: Array.from({ length: PER_CALL }, (_, i) => ({ ...item(tag, call, i), resourceTypeId: TYPE, ownerScopeId: SCOPE })) }));
  return () => inFlight(reqs.map((req) => async () => {
    const res = await client.batchCreateResources(req);
    if (res.resources.length !== PER_CALL) throw new Error('BatchCreateResources answered a short batch');
  }), IN_FLIGHT);
}

/**
 * The import path: the same resources as an NDJSON file (written ahead of the clock), sent by the
 * import client (services/import/ndjson-client.ts) in batches of 5,000, 2 in flight, over REST.
 */
function importPath(baseUrl: string, secret: string, dir: string, tag: string): Path {
  const file = join(dir, `${tag}.ndjson`);
  const lines: string[] = [];
  for (let call = 0; call < CALLS; call++) {
    for (let i = 0; i < PER_CALL; i++) {
      const it = item(tag, call, i);
      lines.push(JSON.stringify({ resource: { type: 'bench', externalId: it.externalResourceId, displayName: it.displayName, attributes: it.attributes } }));
    }
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  return async () => {
    const t0 = performance.now();
    const out = await importNdjson({ baseUrl, apiKey: secret, tenantId: TENANT, importId: `bench-${tag}`, source: file, inFlight: IN_FLIGHT });
    if (out.entities !== CALLS * PER_CALL) throw new Error(`the import wrote ${out.entities} entities`);
    return performance.now() - t0;
  };
}

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Multi-row INSERTs of 1,000 rows with literal values, one after another on one connection. */
function rawPath(client: pg.Client, tag: string): Path {
  const cols = 'id, tenant_id, created_at, created_by, resource_type_id, owner_scope_id, external_resource_id, display_name, attributes';
  const now = literal(new Date().toISOString());
  const statements = Array.from({ length: CALLS }, (_, call) => {
    const tuples: string[] = [];
    for (let i = 0; i < PER_CALL; i++) {
      const it = item(tag, call, i);
      tuples.push(`(${literal(it.id)}, ${literal(TENANT)}, ${now}, 'subject_bench', ${literal(TYPE)}, ${literal(SCOPE)}, ${literal(it.externalResourceId)}, ${literal(it.displayName)}, ${literal(JSON.stringify(it.attributes))})`);
    }
    return `insert into resources (${cols}) values ${tuples.join(', ')}`;
  });
  return async () => {
    const t0 = performance.now();
    for (const text of statements) await client.query(text);
    return performance.now() - t0;
  };
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS = 100;

/**
 * CPU milliseconds used so far by the PostgreSQL backends of the benchmark's database (from
 * /proc: the server runs on this machine); null where /proc cannot be read. Background processes
 * (WAL writer, checkpointer) are not counted.
 */
async function postgresCpuMs(client: pg.Client): Promise<number | null> {
  const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()');
  let ticks = 0;
  try {
    for (const { pid } of rows) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    }
  } catch {
    return null;
  }
  return (ticks * 1000) / TICKS;
}

/** CPU milliseconds this process (server and benchmark clients) has used so far. */
const nodeCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const loadAtStart = loadAverageNow();
  const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const { url, drop } = await createScratchDatabase(admin, 'authz_bench');
  let cp: ControlPlane | undefined;
  const raw = new pg.Client({ connectionString: url });
  const dir = mkdtempSync(join(tmpdir(), 'authz-bench-writes-'));
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
    console.log(`database ${new URL(url).pathname.slice(1)}; server ${srv.url}; ${CALLS * PER_CALL} resources per path and round, ${ROUNDS} rounds, ` +
      `API ${IN_FLIGHT} calls of ${PER_CALL} in flight, raw ${PER_CALL} rows per INSERT one at a time`);

    const client = createClient(ResourceService, createConnectTransport({
      baseUrl: srv.url, httpVersion: '1.1', useBinaryFormat: true,
      interceptors: [(next) => (req) => (req.header.set('x-api-key', secret), next(req))],
    }));
    const pathsFor = (tag: string): Record<string, Path> => ({
      raw: rawPath(raw, `raw${tag}`),
      api: apiPath(srv.url, secret, `api${tag}`),
      import: importPath(srv.url, secret, dir, `import${tag}`),
      ...(CONNECT ? { connect: connectPath(client, `connect${tag}`) } : {}),
    });
    const names = Object.keys(pathsFor('names'));
    /** One round: every path into emptied tables, in an order that rotates with `r`; milliseconds per path. */
    const cpu: Record<string, { node: number[]; postgres: number[] }> = Object.fromEntries(names.map((n) => [n, { node: [], postgres: [] }]));
    const round = async (r: number): Promise<Record<string, number>> => {
      const paths = pathsFor(String(r));
      const out: Record<string, number> = {};
      for (let k = 0; k < names.length; k++) {
        const name = names[(r + 1 + k) % names.length];
        await raw.query('truncate resources, change_log cascade');
        const [node0, pg0] = [nodeCpuMs(), await postgresCpuMs(raw)];
        out[name] = await paths[name]();
        const [node1, pg1] = [nodeCpuMs(), await postgresCpuMs(raw)];
        if (r >= 0) {
          cpu[name].node.push(node1 - node0);
          if (pg0 !== null && pg1 !== null) cpu[name].postgres.push(pg1 - pg0);
        }
      }
      return out;
    };
    await round(-1); // warm-up: JIT, connections, caches
    const results: Record<string, number>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t = await round(r);
      results.push(t);
      console.log(`round ${r + 1}: ${names.map((n) => `${n} ${t[n].toFixed(0)} ms (${rate(t[n])}/s${n === 'raw' ? '' : `, ${(t.raw / t[n]).toFixed(2)} of raw`})`).join('; ')}`);
    }
    const rows = CALLS * PER_CALL;
    const summary = Object.fromEntries(names.map((n) => [n, {
      medianMs: Math.round(median(results.map((t) => t[n]))),
      rowsPerSecond: Math.round(rows / (median(results.map((t) => t[n])) / 1000)),
      // Each round times every path side by side, so its ratio is one paired sample.
      ofRaw: Number(median(results.map((t) => t.raw / t[n])).toFixed(3)),
      // CPU per row: this process (the server and the benchmark's clients) and the database's backends.
      nodeCpuUsPerRow: Math.round((median(cpu[n].node) * 1000) / rows),
      postgresCpuUsPerRow: cpu[n].postgres.length > 0 ? Math.round((median(cpu[n].postgres) * 1000) / rows) : null,
    }]));
    for (const n of names) {
      console.log(`${n}: median ${summary[n].medianMs} ms per ${rows} resources, ${summary[n].rowsPerSecond} rows/s` +
        (n === 'raw' ? '' : `, ${summary[n].ofRaw} of raw (median of the rounds' ratios)`) +
        `; CPU per row: Node ${summary[n].nodeCpuUsPerRow} µs, PostgreSQL ${summary[n].postgresCpuUsPerRow ?? '?'} µs`);
    }
    const command = ['npm run bench:writes --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
    const saved = {
      rows, perCall: PER_CALL, rounds: ROUNDS, inFlight: IN_FLIGHT, apiTarget: API_TARGET, importTarget: IMPORT_TARGET, paths: summary,
      roundsMs: results.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v)]))),
    };
    console.log(`wrote ${writeResults('writes', { command, results: saved, loadAtStart })}`);
    if (summary.api.ofRaw < API_TARGET) {
      console.error(`FAIL: /resources/batch writes ${summary.api.ofRaw} of raw INSERTs' rows per second; at least ${API_TARGET} is the target`);
      process.exitCode = 1;
    }
    if (summary.import.ofRaw < IMPORT_TARGET) {
      console.error(`FAIL: the import path writes ${summary.import.ofRaw} of raw INSERTs' rows per second; at least ${IMPORT_TARGET} is the target`);
      process.exitCode = 1;
    }
  } finally {
    await cp?.close();
    await raw.end().catch(() => undefined);
    await drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rate = (ms: number) => Math.round((CALLS * PER_CALL) / (ms / 1000)).toLocaleString('en-US');

(process.argv.includes('--scale') ? runScale() : main()).catch((err) => {
  console.error(err);
  process.exit(2);
});
