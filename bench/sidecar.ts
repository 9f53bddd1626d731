/**
 * `npm run bench:sidecar`: the sidecar's decision path against servers that do nothing but
 * answer, side by side in one run (absolute rates drift between machines; ratios do not).
 *
 * Processes (each its own, as in production): the sidecar from `dist/` (compiled, as containers
 * run it) following a control plane; a constant-answer node:http server; a constant-answer
 * @grpc/grpc-js server (bench/constant-servers.ts). The control plane here is a scripted Watch
 * server in this process holding a tenant of `--resources` resources, so the figures are the
 * decision path's, whatever the control plane costs.
 *
 * Throughput at saturation, interleaved over `--rounds` rounds: `wrk -t1 -c50` for REST and
 * Connect JSON (against node:http), `h2load -c50 -m10` for gRPC (against grpc-js). A load's place
 * in its round matters on a shared 2-core machine (two identical sidecars measured one after the
 * other: the first did better in 5 rounds of 6, by up to 0.3 of node:http's rate; perhaps the
 * process loaded just before is still collecting its garbage), so every other round runs its
 * loads in reverse order, each after a pause. Even so, an A/A run (`--variants before` with a copy
 * of the same build) was not even: read a variant's ratio as ±0.3. Each load also
 * reads the serving process's CPU time from /proc: CPU µs per request is a cost that does not move
 * with whatever else the machine runs, where req/s on a shared 2-core machine does (the load
 * generator competes with the server). Then latency p50/p99 at half of each surface's measured
 * rate and at saturation: `hey -q` for JSON (50 workers on their own tickers, so requests come
 * spread out; h2load's `--rps` sent them in bursts, which made half rate look slower than
 * saturation), h2load for gRPC. Results go to bench/results/sidecar.json, per mix.
 *
 * Variants of the sidecar, each its own process following the same scripted control plane and
 * loaded in the same rounds as the plain one, so that what they cost is read side by side:
 * `log` (the decision log on, every decision, to a file; always run), `tracing` (spans exported
 * over OTLP/HTTP to a receiver in this process that only counts them) and `before` (another
 * build's `dist/cmd/sidecar/main.js`, given with `--before`, e.g. the code before a change).
 *
 * Two mixes (`--mix simple,realistic`, both by default), each with its own sidecar(s) on its own
 * scripted control plane, loaded in the same way against the same constant servers:
 * - `simple`: one body (a role-based allow) on a tenant of `--resources` docs (decision-tenant.ts);
 * - `realistic`: bench/realistic-tenant.ts's tenant (100,000 resources of 4 types, 10,000
 *   subjects, 100 roles, 20 collections, 1,000 policies, ownership grants) and 10,000 bodies
 *   (60% role allows, a tenth of them by external id; 5% ownership; 25% denies; 10% decided by
 *   a policy, some reading `context.deviceType`), each body's decision checked against the
 *   engine in process when generated. wrk cycles them with a Lua script that formats every
 *   request once in `init()` and hands them out in turn from `request()` (wrk calls it per
 *   thread, not per connection: with `-t1` one counter cycles the whole mix). gRPC: h2load sends
 *   one body, so this mix's gRPC loads (sidecar and grpc-js alike) use bench/grpc-cycle.ts, a raw
 *   `node:http2` client in a child process that cycles pre-encoded frames (its header says why).
 *   Latency at half rate (`hey`, h2load) still sends one body of the mix.
 * Before any load, a sample of real answers from every surface (sidecar REST, Connect JSON,
 * gRPC, each variant's REST, the control plane's three) must equal the expected decisions: a mix
 * that is all-deny by mistake would measure nothing. The real control plane (on PostgreSQL,
 * `DATABASE_URL`) holds both tenants: the simple one written through its API, the realistic one
 * through SQL (`insertRealisticTenant`, as big-tenant.ts), under a tenant made through its API.
 * Targets: sidecar REST and Connect JSON ≥ 0.85 of node:http, gRPC ≥ 1.0 of
 * grpc-js, the control plane's REST ≥ 0.5, on each mix. `--loads nodeHttp,rest,…` runs only
 * those loads (e.g. to profile one surface); `--grpc-load h2load|cycle` picks gRPC's generator for
 * every mix (by default h2load for one body, grpc-cycle.ts for many).
 *
 * Usage: npm run bench:sidecar [-- --mix simple,realistic --rounds 3 --seconds 5 --resources 10000 --variants log,tracing,before --before /path/dist/cmd/sidecar/main.js --loads rest,nodeHttp --grpc-load auto]
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fromBinary, fromJson, toBinary, type JsonValue } from '@bufbuild/protobuf';
import { EvaluateRequestSchema, EvaluateResponseSchema } from '../gen/authz/v1/decision_service_pb.js';
import type { EvaluateRequest } from '../services/engine/mod.js';
import { cpuMs, startProcess, waitFor200, type RunningProcess } from '../test/processes.js';
import { createScratchDatabase } from '../test/databases.js';
import { EVALUATE, TENANT, scriptedControlPlane, scriptedWatch } from './decision-tenant.js';
import { frameOf, grpcOnce } from './grpc-cycle.js';
import { REALISTIC_TENANT, forRoot, insertRealisticTenant, mixSummary, realisticEntities, realisticIndex, realisticMix, realisticRows } from './realistic-tenant.js';
import { loadAverageNow, writeResults } from './results-file.js';

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const ROUNDS = Number(args.get('rounds') ?? 4);
const SECONDS = Number(args.get('seconds') ?? 5);
const RESOURCES = Number(args.get('resources') ?? 10_000);
const BEFORE = args.get('before');
const VARIANTS = (args.get('variants') ?? 'log').split(',').filter(Boolean);
for (const v of VARIANTS) if (!['log', 'tracing', 'before'].includes(v)) throw new Error(`--variants: unknown variant ${v}`);
if (VARIANTS.includes('before') && !BEFORE) throw new Error('--variants before needs --before <path to dist/cmd/sidecar/main.js>');
const MIXES = (args.get('mix') ?? 'simple,realistic').split(',').filter(Boolean);
for (const m of MIXES) if (!['simple', 'realistic'].includes(m)) throw new Error(`--mix: unknown mix ${m}`);
const LOADS = args.get('loads')?.split(',').filter(Boolean);
/** Bodies of a mix whose real answers are checked on every surface before it is loaded. */
const SAMPLE = Number(args.get('sample') ?? 300);
/** The cycling gRPC client's connections and streams in flight on each. */
const GRPC_SESSIONS = 10;
const GRPC_STREAMS = 20;
/** gRPC's load generator: `auto` (h2load for one body, bench/grpc-cycle.ts for many), or either for every mix. */
const GRPC_LOAD = args.get('grpc-load') ?? 'auto';
if (!['auto', 'h2load', 'cycle'].includes(GRPC_LOAD)) throw new Error(`--grpc-load: auto, h2load or cycle, not ${GRPC_LOAD}`);
/** Targets, on each mix. */
const TARGETS = { json: 0.85, grpc: 1.0, controlPlaneRest: 0.5 };

/** The pause before each load, so that the process loaded before it has settled. */
const PAUSE_MS = 1000;

const children: ChildProcess[] = [];
const track = (p: RunningProcess) => (children.push(p.child), p);

/** Spawns a constant server and resolves with what `ready(line)` finds in its output, and its pid. */
function spawnUntil(cmd: string, argv: string[], env: Record<string, string>, ready: (line: string) => string | undefined): Promise<{ found: string; pid: number | undefined }> {
  const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolveReady, reject) => {
    const onLine = (buf: Buffer) => {
      for (const line of buf.toString().split('\n')) {
        const found = ready(line);
        if (found !== undefined) resolveReady({ found, pid: child.pid });
      }
    };
    child.stdout!.on('data', onLine);
    child.stderr!.on('data', onLine);
    child.once('exit', (code) => reject(new Error(`${cmd} ${argv.join(' ')} exited with ${code}`)));
  });
}

const dir = mkdtempSync(join(tmpdir(), 'bench-sidecar-'));
/** The `log` variant's decision log (hundreds of MB after a run; removed with `dir` at the end). */
const decisionLogPath = join(dir, 'decisions.jsonl');

interface Expected { allowed: boolean; reason: string }
/** The bodies a mix sends one surface, and what each must be answered. */
interface Bodies { bodies: EvaluateRequest[]; expected: Expected[]; apiKey?: string }

const encode = (body: EvaluateRequest) => frameOf(toBinary(EvaluateRequestSchema, fromJson(EvaluateRequestSchema, body as unknown as JsonValue)));

/**
 * Writes a surface's request files under `prefix`: `.lua` for wrk (one body: `wrk.body`; many:
 * every request formatted once in `init()`, handed out in turn), `-body.json` and `-grpc.bin`
 * (the first body, for hey and h2load), `-frames.bin` (every body as a gRPC frame, for
 * bench/grpc-cycle.ts).
 */
function writeLoadFiles(prefix: string, { bodies, apiKey }: Bodies): void {
  const json = bodies.map((b) => JSON.stringify(b));
  const key = apiKey ? `wrk.headers["x-api-key"] = "${apiKey}"\n` : '';
  if (json.length === 1) {
    writeFileSync(join(dir, `${prefix}.lua`), `wrk.method = "POST"\nwrk.body = '${json[0]}'\nwrk.headers["Content-Type"] = "application/json"\n${key}`);
  } else {
    for (const j of json) if (j.includes(']==]')) throw new Error('a body closes the Lua long string');
    writeFileSync(join(dir, `${prefix}.lua`), [
      'local bodies = {', ...json.map((j) => `[==[${j}]==],`), '}',
      'wrk.method = "POST"', 'wrk.headers["Content-Type"] = "application/json"', key,
      'local requests = {}', 'local i = 0',
      'function init(args)', '  for k, b in ipairs(bodies) do requests[k] = wrk.format(nil, nil, nil, b) end', 'end',
      'function request()', '  i = i % #requests + 1', '  return requests[i]', 'end', '',
    ].join('\n'));
  }
  writeFileSync(join(dir, `${prefix}-body.json`), json[0]);
  writeFileSync(join(dir, `${prefix}-grpc.bin`), encode(bodies[0]));
  writeFileSync(join(dir, `${prefix}-frames.bin`), Buffer.concat(bodies.map(encode)));
}

/** Real answers to the first SAMPLE bodies over `surface` must equal the expected decisions. */
async function checkAnswers(label: string, url: string, surface: 'rest' | 'connectJson' | 'grpc', { bodies, expected, apiKey }: Bodies): Promise<number> {
  const n = Math.min(SAMPLE, bodies.length);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) };
  for (let i = 0; i < n; i++) {
    let got: Expected;
    if (surface === 'grpc') {
      const answer = fromBinary(EvaluateResponseSchema, await grpcOnce(`${url}/authz.v1.DecisionService/Evaluate`, encode(bodies[i]), apiKey ? { 'x-api-key': apiKey } : {}));
      got = { allowed: answer.allowed, reason: answer.reason };
    } else {
      const r = await fetch(url + (surface === 'rest' ? '/evaluate' : '/authz.v1.DecisionService/Evaluate'), { method: 'POST', headers, body: JSON.stringify(bodies[i]) });
      const answer = (await r.json()) as { allowed?: boolean; reason?: string };
      if (r.status !== 200) throw new Error(`${label} ${surface}: ${r.status} ${JSON.stringify(answer)} for ${JSON.stringify(bodies[i])}`);
      got = { allowed: answer.allowed ?? false, reason: answer.reason ?? '' };
    }
    if (got.allowed !== expected[i].allowed || got.reason !== expected[i].reason) {
      throw new Error(`${label} ${surface} answered ${JSON.stringify(got)} where the engine in process decided ${JSON.stringify(expected[i])} for ${JSON.stringify(bodies[i])}`);
    }
  }
  return n;
}

const CP_KEY = 'azk_bench_bootstrap_key_0123456789abcdefghijkl';

/**
 * The real control plane (compiled) on a fresh database, holding the mixes' tenants: the simple
 * one through its API (a role granting `read` on docs to alice, one doc), the realistic one
 * through SQL under a tenant made through its API. Returns its URL and each mix's bodies.
 */
async function startRealControlPlane(realistic?: Bodies): Promise<{ url: string; pid: number | undefined; drop: () => Promise<void>; bodies: Record<string, Bodies> }> {
  const admin = process.env.DATABASE_URL;
  const scratch = admin ? await createScratchDatabase(admin, 'authz_bench') : undefined;
  if (realistic && !scratch) throw new Error('the realistic mix needs DATABASE_URL (its tenant is written into the control plane\'s PostgreSQL)');
  const env: Record<string, string> = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: CP_KEY, SERVICE_DATA_DIR: 'memory://', SERVICE_LOG_LEVEL: 'info' };
  if (scratch) env.DATABASE_URL = scratch.url;
  // BENCH_CONTROL_PLANE_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the control plane.
  const nodeArgs = (process.env.BENCH_CONTROL_PLANE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const { url, child } = track(await startProcess('control-plane', env, { built: true, nodeArgs }));
  const call = async (path: string, body: unknown) => {
    const r = await fetch(url + path, { method: 'POST', headers: { 'x-api-key': CP_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await r.json()) as Record<string, string>;
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  const tenant = await call('/tenants', { name: 'bench' });
  const subject = await call('/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' });
  const role = await call('/roles', { scopeId: tenant.scopeId, key: 'reader', name: 'reader' });
  const perm = await call('/permissions', { scopeId: tenant.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' });
  await call('/role-permissions', { roleId: role.id, permissionId: perm.id });
  const m = await call('/memberships', { subjectId: subject.id, scopeId: tenant.scopeId });
  await call('/role-assignments', { membershipId: m.id, roleId: role.id });
  const type = await call('/resource-types', { name: 'Doc', key: 'doc', scopeId: tenant.scopeId });
  const doc = await call('/resources', { resourceTypeId: type.id, ownerScopeId: tenant.scopeId, externalResourceId: 'doc-42' });
  const key = await call('/api-keys', { name: 'bench', kind: 'service', tenantId: tenant.id });
  const ask = { actor: { subjectId: subject.id }, scopeId: tenant.scopeId, action: 'read', resource: { resourceId: doc.id } };
  const bodies: Record<string, Bodies> = { simple: { bodies: [ask], expected: [{ allowed: true, reason: 'role' }], apiKey: key.secretKey } };
  if (realistic) {
    const t0 = Date.now();
    const other = await call('/tenants', { name: 'realistic' });
    const otherKey = await call('/api-keys', { name: 'bench', kind: 'service', tenantId: other.id });
    await insertRealisticTenant(scratch!.url, other.id, other.scopeId);
    bodies.realistic = { bodies: realistic.bodies.map((b) => forRoot(b, other.scopeId)), expected: realistic.expected, apiKey: otherKey.secretKey };
    console.log(`control plane: realistic tenant written in ${Date.now() - t0} ms`);
  }
  return { url, pid: child.pid, drop: async () => scratch?.drop(), bodies };
}

interface Load { rps: number; p50ms?: number; p99ms?: number; cpuUsPerRequest?: number; requests?: number }

/** Runs one load and adds the server's CPU µs per request (`pid`: the process serving it). */
async function costed(pid: number | undefined, load: () => Promise<Load & { requests: number }>): Promise<Load> {
  const before = cpuMs(pid);
  const result: Load = await load();
  const after = cpuMs(pid);
  if (before !== undefined && after !== undefined && result.requests! > 0) result.cpuUsPerRequest = ((after - before) * 1000) / result.requests!;
  return result;
}

/** wrk at saturation: req/s and its latency percentiles; non-2xx answers fail the run. */
async function wrk(url: string, script: string): Promise<Load & { requests: number }> {
  const { stdout } = await run('wrk', ['-t1', '-c50', `-d${SECONDS}s`, '--latency', '-s', join(dir, script), url]);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout);
    return m ? Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1) : undefined;
  };
  const bad = /Non-2xx or 3xx responses: (\d+)/.exec(stdout);
  if (bad) throw new Error(`wrk ${url} ${script}: ${bad[1]} answers were not 2xx`);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]), p50ms: pct('50'), p99ms: pct('99'), requests: Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0) };
}

/**
 * JSON at a fixed rate in all (`hey -q`, per worker): 50 workers, each on its own ticker, so
 * requests arrive spread out rather than in bursts; latency percentiles from hey's histogram.
 */
async function hey(url: string, rps: number, bodyFile: string, headers: string[] = []): Promise<Load> {
  const argv = ['-z', `${SECONDS}s`, '-c', '50', '-q', String(Math.max(1, Math.round(rps / 50))), '-m', 'POST', '-T', 'application/json', '-D', join(dir, bodyFile)];
  for (const h of headers) argv.push('-H', h);
  const { stdout } = await run('hey', [...argv, url], { maxBuffer: 16 * 1024 * 1024 });
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}% in ([\\d.]+) secs`).exec(stdout);
    return m ? Number(m[1]) * 1000 : undefined;
  };
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]), p50ms: pct('50'), p99ms: pct('99') };
}

/** h2load gRPC (one body, `file`): req/s and latency percentiles from its per-request log, optionally at `rps` in all. */
async function h2load(url: string, file: string, rps?: number, apiKey?: string): Promise<Load & { requests: number }> {
  const log = join(dir, `h2load-${Date.now()}.log`);
  const argv = ['-c50', '-D', String(SECONDS), '--log-file', log, '-d', join(dir, file), '-m10', '-H', 'content-type: application/grpc', '-H', 'te: trailers'];
  if (apiKey) argv.push('-H', `x-api-key: ${apiKey}`);
  if (rps !== undefined) argv.push(`--rps=${Math.max(1, Math.round(rps / 50))}`);
  const { stdout } = await run('h2load', [...argv, url], { maxBuffer: 64 * 1024 * 1024 });
  const us = readFileSync(log, 'utf8').trim().split('\n').map((l) => Number(l.split('\t')[2])).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const at = (q: number) => (us.length ? us[Math.min(us.length - 1, Math.floor(q * us.length))] / 1000 : undefined);
  return { rps: Number(/finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(stdout)?.[1]), p50ms: at(0.5), p99ms: at(0.99), requests: us.length };
}

/** bench/grpc-cycle.ts in a child process: every body of the mix in turn. */
async function grpcCycle(url: string, framesFile: string, apiKey?: string): Promise<Load & { requests: number }> {
  const argv = ['--import', 'tsx', 'bench/grpc-cycle.ts', url, join(dir, framesFile), String(SECONDS), String(GRPC_SESSIONS), String(GRPC_STREAMS), ...(apiKey ? [apiKey] : [])];
  const { stdout } = await run(process.execPath, argv, { cwd: ROOT });
  const r = JSON.parse(stdout.trim().split('\n').pop()!) as Load & { requests: number; failures: number };
  if (r.failures > 0) throw new Error(`grpc-cycle ${url}: ${r.failures} calls failed`);
  return r;
}

let dropScratch: () => Promise<void> = async () => {};

/** The median; of an even count, the mean of the two middle values. */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** An OTLP/HTTP endpoint that takes span batches and counts their bytes (the `tracing` variant's collector). */
async function otlpSink(): Promise<{ url: string; bytes: () => number; close: () => void }> {
  let bytes = 0;
  const server = createHttpServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, bytes: () => bytes, close: () => server.close() };
}

/** A value of a sidecar's /metrics (first sample whose line starts with `prefix`). */
async function metricOf(url: string, prefix: string): Promise<number> {
  const line = (await (await fetch(`${url}/metrics`)).text()).split('\n').find((l) => l.startsWith(prefix));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

/** What a mix is: its tenant for the scripted Watch, its bodies for the sidecars. */
interface MixSpec { name: string; tenantId: string; watch: () => ReturnType<typeof scriptedWatch>; sidecar: Bodies; summary?: unknown }

interface Shared { httpPid: number | undefined; grpcPid: number | undefined; constantHttp: string; constantGrpc: string; cp: Awaited<ReturnType<typeof startRealControlPlane>> }

const fmt = (x: number | undefined, digits = 2) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits));

/** One mix: its scripted control plane and sidecars, the answers checked, the rounds, latency at half rate, the variants. */
async function runMix(mix: MixSpec, shared: Shared) {
  const cp = await mix.watch();
  const many = GRPC_LOAD === 'auto' ? mix.sidecar.bodies.length > 1 : GRPC_LOAD === 'cycle';
  const p = (name: string) => `${mix.name}-${name}`;
  writeLoadFiles(p('sidecar'), mix.sidecar);
  const cpBodies = shared.cp.bodies[mix.name];
  writeLoadFiles(p('cp'), cpBodies);
  const startedAt = Date.now();
  const own: ChildProcess[] = [];
  const start = async (env: Record<string, string>, entry?: string, nodeArgs: string[] = []) => {
    const proc = track(await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: 'azk_bench', SIDECAR_TENANT_ID: mix.tenantId, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info', ...env,
    }, { built: true, entry, nodeArgs }));
    own.push(proc.child);
    await waitFor200(`${proc.url}/readyz`, 60_000);
    return proc;
  };
  // BENCH_SIDECAR_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the sidecar.
  const sidecar = await start({}, undefined, (process.env.BENCH_SIDECAR_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const sidecarUrl = sidecar.url;
  const sidecarPid = sidecar.child.pid;
  const readyMs = Date.now() - startedAt;
  // The variants, each its own sidecar process on the same scripted control plane.
  const sink = VARIANTS.includes('tracing') ? await otlpSink() : undefined;
  const variants: { name: string; url: string; pid: number | undefined }[] = [];
  for (const name of VARIANTS) {
    const env: Record<string, string> = {};
    if (name === 'log') env.SIDECAR_DECISION_LOG = `file:${decisionLogPath}-${mix.name}`;
    if (name === 'tracing') Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url });
    const v = await start(env, name === 'before' ? resolve(BEFORE!) : undefined);
    variants.push({ name, url: v.url, pid: v.child.pid });
  }
  // Real answers before any load, on every surface.
  const checked: Record<string, number> = {};
  for (const surface of ['rest', 'connectJson', 'grpc'] as const) checked[surface] = await checkAnswers('sidecar', sidecarUrl, surface, mix.sidecar);
  for (const v of variants) checked[`${v.name}Rest`] = await checkAnswers(`sidecar (${v.name})`, v.url, 'rest', mix.sidecar);
  for (const surface of ['rest', 'connectJson', 'grpc'] as const) checked[`cp${surface[0].toUpperCase()}${surface.slice(1)}`] = await checkAnswers('control plane', shared.cp.url, surface, cpBodies);
  console.log(`[${mix.name}] sidecar ready in ${readyMs} ms; ${JSON.stringify(mix.summary ?? { requests: 1 })}; answers checked: ${JSON.stringify(checked)}`);

  const { httpPid, grpcPid, constantHttp, constantGrpc } = shared;
  const cpUrl = shared.cp.url;
  const evaluatePath = '/authz.v1.DecisionService/Evaluate';
  const grpcLoad = (url: string, who: 'sidecar' | 'cp', apiKey?: string, rps?: number) =>
    many && rps === undefined ? grpcCycle(url, `${p(who)}-frames.bin`, apiKey) : h2load(url, `${p(who)}-grpc.bin`, rps, apiKey);
  const rounds: Record<string, Load>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const round: Record<string, Load> = {};
    let loads: [string, () => Promise<Load>][] = [
      ['nodeHttp', () => costed(httpPid, () => wrk(`${constantHttp}/evaluate`, `${p('sidecar')}.lua`))],
      ['rest', () => costed(sidecarPid, () => wrk(`${sidecarUrl}/evaluate`, `${p('sidecar')}.lua`))],
      ['connectJson', () => costed(sidecarPid, () => wrk(`${sidecarUrl}${evaluatePath}`, `${p('sidecar')}.lua`))],
      ['grpcJs', () => costed(grpcPid, () => grpcLoad(constantGrpc, 'sidecar'))],
      ['grpc', () => costed(sidecarPid, () => grpcLoad(`${sidecarUrl}${evaluatePath}`, 'sidecar'))],
      ['cpRest', () => costed(shared.cp.pid, () => wrk(`${cpUrl}/evaluate`, `${p('cp')}.lua`))],
      ['cpConnectJson', () => costed(shared.cp.pid, () => wrk(`${cpUrl}${evaluatePath}`, `${p('cp')}.lua`))],
      ['cpGrpc', () => costed(shared.cp.pid, () => grpcLoad(`${cpUrl}${evaluatePath}`, 'cp', cpBodies.apiKey))],
    ];
    for (const v of variants) {
      loads.push([`${v.name}Rest`, () => costed(v.pid, () => wrk(`${v.url}/evaluate`, `${p('sidecar')}.lua`))]);
      loads.push([`${v.name}ConnectJson`, () => costed(v.pid, () => wrk(`${v.url}${evaluatePath}`, `${p('sidecar')}.lua`))]);
      loads.push([`${v.name}Grpc`, () => costed(v.pid, () => grpcLoad(`${v.url}${evaluatePath}`, 'sidecar'))]);
    }
    if (LOADS) loads = loads.filter(([name]) => LOADS.includes(name));
    if (r % 2 === 1) loads.reverse();
    for (const [name, load] of loads) {
      await new Promise((settle) => setTimeout(settle, PAUSE_MS));
      round[name] = await load();
    }
    const x = (a: string, b: string) => `${fmt(round[a]?.rps, 0)} (${fmt(round[a] && round[b] ? round[a].rps / round[b].rps : undefined)})`;
    for (const v of variants) {
      console.log(`  [${mix.name}] ${v.name}: REST ${x(`${v.name}Rest`, 'rest')} of the plain sidecar, Connect JSON ${x(`${v.name}ConnectJson`, 'connectJson')}, gRPC ${x(`${v.name}Grpc`, 'grpc')} req/s`);
    }
    rounds.push(round);
    console.log(`[${mix.name}] requests served: ${Object.entries(round).map(([k, v]) => `${k} ${v.requests}`).join(', ')}`);
    console.log(`[${mix.name}] round ${r + 1}${r % 2 === 1 ? ' (reversed)' : ''}: node:http ${fmt(round.nodeHttp?.rps, 0)}, REST ${x('rest', 'nodeHttp')}, Connect JSON ${x('connectJson', 'nodeHttp')}; ` +
      `grpc-js ${fmt(round.grpcJs?.rps, 0)}, gRPC ${x('grpc', 'grpcJs')} req/s; control plane: REST ${x('cpRest', 'nodeHttp')}, Connect JSON ${x('cpConnectJson', 'nodeHttp')}, gRPC ${x('cpGrpc', 'grpcJs')}`);
  }
  const ratio = (a: string, b: string) => median(rounds.map((x) => (x[a]?.rps ?? NaN) / (x[b]?.rps ?? NaN)));
  const rate = (k: string) => median(rounds.map((x) => x[k]?.rps ?? NaN));
  const summary = {
    rest: ratio('rest', 'nodeHttp'), connectJson: ratio('connectJson', 'nodeHttp'), grpc: ratio('grpc', 'grpcJs'),
    controlPlaneRest: ratio('cpRest', 'nodeHttp'), controlPlaneConnectJson: ratio('cpConnectJson', 'nodeHttp'), controlPlaneGrpc: ratio('cpGrpc', 'grpcJs'),
  };
  // CPU per request, the same ratio read as cost: the baseline's µs over the surface's.
  const cost = (a: string, b: string) => median(rounds.map((x) => (x[b]?.cpuUsPerRequest ?? NaN) / (x[a]?.cpuUsPerRequest ?? NaN)));
  const cpu = (k: string) => median(rounds.map((x) => x[k]?.cpuUsPerRequest ?? NaN));
  const costRatios = {
    rest: cost('rest', 'nodeHttp'), connectJson: cost('connectJson', 'nodeHttp'), grpc: cost('grpc', 'grpcJs'),
    controlPlaneRest: cost('cpRest', 'nodeHttp'), controlPlaneConnectJson: cost('cpConnectJson', 'nodeHttp'), controlPlaneGrpc: cost('cpGrpc', 'grpcJs'),
  };
  const cpuUs = Object.fromEntries(Object.keys(rounds[0] ?? {}).map((k) => [k, cpu(k)]));
  console.log(`[${mix.name}] CPU µs per request: node:http ${fmt(cpu('nodeHttp'), 1)}, sidecar REST ${fmt(cpu('rest'), 1)}, Connect JSON ${fmt(cpu('connectJson'), 1)}; grpc-js ${fmt(cpu('grpcJs'), 1)}, sidecar gRPC ${fmt(cpu('grpc'), 1)}; control plane REST ${fmt(cpu('cpRest'), 1)}, Connect JSON ${fmt(cpu('cpConnectJson'), 1)}, gRPC ${fmt(cpu('cpGrpc'), 1)}`);
  console.log(`[${mix.name}] as cost ratios (baseline µs / surface µs): sidecar REST ${fmt(costRatios.rest)}, Connect JSON ${fmt(costRatios.connectJson)}, gRPC ${fmt(costRatios.grpc)}; control plane REST ${fmt(costRatios.controlPlaneRest)}, Connect JSON ${fmt(costRatios.controlPlaneConnectJson)}, gRPC ${fmt(costRatios.controlPlaneGrpc)}`);
  // Latency at half of each one's own saturated rate (one body of the mix).
  const half: Record<string, Load> = {};
  const halfLoads: [string, () => Promise<Load>][] = [
    ['nodeHttp', () => hey(`${constantHttp}/evaluate`, rate('nodeHttp') / 2, `${p('sidecar')}-body.json`)],
    ['rest', () => hey(`${sidecarUrl}/evaluate`, rate('rest') / 2, `${p('sidecar')}-body.json`)],
    ['connectJson', () => hey(`${sidecarUrl}${evaluatePath}`, rate('connectJson') / 2, `${p('sidecar')}-body.json`)],
    ['grpcJs', () => h2load(constantGrpc, `${p('sidecar')}-grpc.bin`, rate('grpcJs') / 2)],
    ['grpc', () => h2load(`${sidecarUrl}${evaluatePath}`, `${p('sidecar')}-grpc.bin`, rate('grpc') / 2)],
    ['cpRest', () => hey(`${cpUrl}/evaluate`, rate('cpRest') / 2, `${p('cp')}-body.json`, [`x-api-key: ${cpBodies.apiKey}`])],
    ['cpGrpc', () => h2load(`${cpUrl}${evaluatePath}`, `${p('cp')}-grpc.bin`, rate('cpGrpc') / 2, cpBodies.apiKey)],
  ];
  for (const [k, load] of halfLoads) if (Number.isFinite(rate(k))) half[k] = await load();
  // The variants against the plain sidecar of the same rounds: req/s and CPU per request as ratios, p99s side by side.
  const variantSummary: Record<string, unknown> = {};
  for (const v of variants) {
    const surfaces = { Rest: 'rest', ConnectJson: 'connectJson', Grpc: 'grpc' } as const;
    const out: Record<string, unknown> = {};
    for (const [suffix, plain] of Object.entries(surfaces)) {
      const k = `${v.name}${suffix}`;
      out[plain] = {
        rpsRatio: ratio(k, plain), cpuRatio: median(rounds.map((x) => (x[k]?.cpuUsPerRequest ?? NaN) / (x[plain]?.cpuUsPerRequest ?? NaN))),
        rps: rate(k), plainRps: rate(plain), p99ms: median(rounds.map((x) => x[k]?.p99ms ?? NaN)), plainP99ms: median(rounds.map((x) => x[plain]?.p99ms ?? NaN)),
      };
    }
    if (v.name === 'log') {
      out.linesWritten = await metricOf(v.url, 'authz_decision_log_lines_total{result="written"}');
      out.linesDropped = await metricOf(v.url, 'authz_decision_log_lines_total{result="dropped"}');
    }
    if (v.name === 'tracing') out.otlpBytes = sink!.bytes();
    variantSummary[v.name] = out;
    const o = out as Record<string, { rpsRatio: number; cpuRatio: number; p99ms: number; plainP99ms: number }>;
    console.log(`[${mix.name}] ${v.name} / plain sidecar: req/s REST ${fmt(o.rest.rpsRatio)}, Connect JSON ${fmt(o.connectJson.rpsRatio)}, gRPC ${fmt(o.grpc.rpsRatio)}; ` +
      `CPU per request REST ${fmt(o.rest.cpuRatio)}, Connect JSON ${fmt(o.connectJson.cpuRatio)}, gRPC ${fmt(o.grpc.cpuRatio)}; ` +
      `p99 at saturation REST ${fmt(o.rest.p99ms)} vs ${fmt(o.rest.plainP99ms)} ms, gRPC ${fmt(o.grpc.p99ms)} vs ${fmt(o.grpc.plainP99ms)} ms` +
      (v.name === 'log' ? `; lines written ${out.linesWritten}, dropped ${out.linesDropped}` : ''));
  }
  sink?.close();
  const met = (x: number, t: number) => (x >= t ? 'met' : 'NOT met');
  console.log(`[${mix.name}] medians: REST ${fmt(summary.rest)} and Connect JSON ${fmt(summary.connectJson)} of node:http (target ≥ ${TARGETS.json}: ${met(Math.min(summary.rest, summary.connectJson), TARGETS.json)}); ` +
    `gRPC ${fmt(summary.grpc)} of grpc-js (target ≥ ${TARGETS.grpc}: ${met(summary.grpc, TARGETS.grpc)})`);
  console.log(`[${mix.name}] control plane: REST ${fmt(summary.controlPlaneRest)} (target ≥ ${TARGETS.controlPlaneRest}: ${met(summary.controlPlaneRest, TARGETS.controlPlaneRest)}) and Connect JSON ${fmt(summary.controlPlaneConnectJson)} of node:http; gRPC ${fmt(summary.controlPlaneGrpc)} of grpc-js`);
  for (const [k, v] of Object.entries(half)) console.log(`  [${mix.name}] at half rate, ${k}: p50 ${fmt(v.p50ms)} ms, p99 ${fmt(v.p99ms)} ms`);
  const last = rounds[rounds.length - 1];
  for (const [k, v] of Object.entries(last)) console.log(`  [${mix.name}] at saturation, ${k}: p50 ${fmt(v.p50ms)} ms, p99 ${fmt(v.p99ms)} ms`);
  // This mix's sidecars end here (a profiled one writes its profile on exit).
  for (const c of own) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  await cp.close();
  return {
    mix: mix.summary ?? { requests: 1 }, readyMs, answersChecked: checked, nodeHttpRps: Math.round(rate('nodeHttp')),
    rounds, ratios: summary, costRatios, cpuUsPerRequest: cpuUs, halfRate: half, variants: variantSummary,
    grpcLoad: many ? `bench/grpc-cycle.ts, ${GRPC_SESSIONS} connections × ${GRPC_STREAMS} streams` : 'h2load -c50 -m10',
  };
}

async function main() {
  const loadAtStart = loadAverageNow();
  const specs: MixSpec[] = [];
  if (MIXES.includes('simple')) {
    specs.push({ name: 'simple', tenantId: TENANT, watch: () => scriptedControlPlane(RESOURCES), sidecar: { bodies: [EVALUATE as EvaluateRequest], expected: [{ allowed: true, reason: 'role' }] } });
  }
  if (MIXES.includes('realistic')) {
    const t0 = Date.now();
    const rows = realisticRows();
    const generated = realisticMix(realisticIndex(rows));
    const entities = realisticEntities(rows);
    const summary = { ...mixSummary(generated), entities: entities.length, generatedMs: Date.now() - t0 };
    specs.push({
      name: 'realistic', tenantId: REALISTIC_TENANT, watch: () => scriptedWatch(REALISTIC_TENANT, entities), summary,
      sidecar: { bodies: generated.map((m) => m.body), expected: generated.map((m) => m.expected) },
    });
  }
  const { found: httpPort, pid: httpPid } = await spawnUntil(process.execPath, ['--import', 'tsx', 'bench/constant-servers.ts', 'http'], {}, (l) => /^listening (\d+)/.exec(l)?.[1]);
  const { found: grpcPort, pid: grpcPid } = await spawnUntil(process.execPath, ['--import', 'tsx', 'bench/constant-servers.ts', 'grpc'], {}, (l) => /^listening (\d+)/.exec(l)?.[1]);
  const cp = await startRealControlPlane(specs.find((s) => s.name === 'realistic')?.sidecar);
  dropScratch = cp.drop;
  const shared: Shared = { httpPid, grpcPid, constantHttp: `http://127.0.0.1:${httpPort}`, constantGrpc: `http://127.0.0.1:${grpcPort}/authz.v1.DecisionService/Evaluate`, cp };
  console.log(`mixes ${specs.map((s) => s.name).join(', ')}; ${ROUNDS} rounds of ${SECONDS} s`);
  const mixes: Record<string, unknown> = {};
  for (const spec of specs) mixes[spec.name] = await runMix(spec, shared);
  const command = ['npm run build && tsx bench/sidecar.ts', ...process.argv.slice(2)].join(' ');
  const first = Object.values(mixes)[0] as { nodeHttpRps: number } | undefined;
  const file = writeResults('sidecar', {
    command, loadAtStart, baseline: { nodeHttpRps: first?.nodeHttpRps },
    results: { resources: RESOURCES, targets: TARGETS, mixes },
  });
  console.log(`wrote ${file}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await dropScratch().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    setTimeout(() => process.exit(), 200).unref();
  });
