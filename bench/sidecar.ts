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
 * saturation), h2load for gRPC. Targets: the sidecar at ≥ 70% of its baseline on every surface,
 * the control plane's REST at ≥ 35%. Results go to bench/results/sidecar.json.
 *
 * Variants of the sidecar, each its own process following the same scripted control plane and
 * loaded in the same rounds as the plain one, so that what they cost is read side by side:
 * `log` (the decision log on, every decision, to a file; always run), `tracing` (spans exported
 * over OTLP/HTTP to a receiver in this process that only counts them) and `before` (another
 * build's `dist/cmd/sidecar/main.js`, given with `--before`, e.g. the code before a change).
 *
 * Usage: npm run bench:sidecar [-- --rounds 3 --seconds 5 --resources 10000 --variants log,tracing,before --before /path/dist/cmd/sidecar/main.js]
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { create, toBinary } from '@bufbuild/protobuf';
import { EvaluateRequestSchema } from '../gen/authz/v1/decision_service_pb.js';
import { cpuMs, startProcess, waitFor200, type RunningProcess } from '../test/processes.js';
import { createScratchDatabase } from '../test/databases.js';
import { EVALUATE, TENANT, scriptedControlPlane } from './decision-tenant.js';
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
const evaluateJson = JSON.stringify(EVALUATE);
writeFileSync(join(dir, 'post.lua'), `wrk.method = "POST"\nwrk.body = '${evaluateJson}'\nwrk.headers["Content-Type"] = "application/json"\n`);
const message = toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, EVALUATE));
const framed = Buffer.alloc(5 + message.length);
framed.writeUInt32BE(message.length, 1);
framed.set(message, 5);
writeFileSync(join(dir, 'grpc.bin'), framed);
writeFileSync(join(dir, 'body.json'), evaluateJson);

const CP_KEY = 'azk_bench_bootstrap_key_0123456789abcdefghijkl';

/**
 * The real control plane (compiled) on a fresh database, with a tenant like the sidecar's (a
 * role granting `read` on docs to alice, one doc); writes its request files and returns its URL.
 */
async function startRealControlPlane(): Promise<{ url: string; pid: number | undefined; drop: () => Promise<void> }> {
  const admin = process.env.DATABASE_URL;
  const scratch = admin ? await createScratchDatabase(admin, 'authz_bench') : undefined;
  const env: Record<string, string> = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: CP_KEY, SERVICE_DATA_DIR: 'memory://', SERVICE_LOG_LEVEL: 'info' };
  if (scratch) env.DATABASE_URL = scratch.url;
  const { url, child } = track(await startProcess('control-plane', env, { built: true }));
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
  const json = JSON.stringify(ask);
  const check = await fetch(url + '/evaluate', { method: 'POST', headers: { 'x-api-key': key.secretKey, 'content-type': 'application/json' }, body: json });
  if (!((await check.json()) as { allowed: boolean }).allowed) throw new Error('the control plane does not allow the bench request');
  writeFileSync(join(dir, 'cp-post.lua'), `wrk.method = "POST"\nwrk.body = '${json}'\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["x-api-key"] = "${key.secretKey}"\n`);
  writeFileSync(join(dir, 'cp-body.json'), json);
  const msg = toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, ask));
  const f = Buffer.alloc(5 + msg.length);
  f.writeUInt32BE(msg.length, 1);
  f.set(msg, 5);
  writeFileSync(join(dir, 'cp-grpc.bin'), f);
  cpKey = key.secretKey;
  return { url, pid: child.pid, drop: async () => scratch?.drop() };
}
let cpKey = '';

interface Load { rps: number; p50ms?: number; p99ms?: number; cpuUsPerRequest?: number }

/** Runs one load and adds the server's CPU µs per request (`pid`: the process serving it). */
async function costed(pid: number | undefined, load: () => Promise<Load & { requests: number }>): Promise<Load> {
  const before = cpuMs(pid);
  const { requests, ...result } = await load();
  const after = cpuMs(pid);
  if (before !== undefined && after !== undefined && requests > 0) result.cpuUsPerRequest = ((after - before) * 1000) / requests;
  return result;
}

/** wrk at saturation: req/s and its latency percentiles. */
async function wrk(url: string, script = 'post.lua'): Promise<Load & { requests: number }> {
  const { stdout } = await run('wrk', ['-t1', '-c50', `-d${SECONDS}s`, '--latency', '-s', join(dir, script), url]);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout);
    return m ? Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1) : undefined;
  };
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]), p50ms: pct('50'), p99ms: pct('99'), requests: Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0) };
}

/**
 * JSON at a fixed rate in all (`hey -q`, per worker): 50 workers, each on its own ticker, so
 * requests arrive spread out rather than in bursts; latency percentiles from hey's histogram.
 */
async function hey(url: string, rps: number, headers: string[] = []): Promise<Load> {
  const argv = ['-z', `${SECONDS}s`, '-c', '50', '-q', String(Math.max(1, Math.round(rps / 50))), '-m', 'POST', '-T', 'application/json', '-D', join(dir, headers.length ? 'cp-body.json' : 'body.json')];
  for (const h of headers) argv.push('-H', h);
  const { stdout } = await run('hey', [...argv, url], { maxBuffer: 16 * 1024 * 1024 });
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}% in ([\\d.]+) secs`).exec(stdout);
    return m ? Number(m[1]) * 1000 : undefined;
  };
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]), p50ms: pct('50'), p99ms: pct('99') };
}

/** h2load (gRPC over h2, or `--h1` for JSON): req/s and latency percentiles from its per-request log, optionally at `rps` in all. */
async function h2load(url: string, kind: 'grpc' | 'json', rps?: number, controlPlane = false): Promise<Load & { requests: number }> {
  const log = join(dir, `h2load-${Date.now()}.log`);
  const file = (controlPlane ? 'cp-' : '') + (kind === 'grpc' ? 'grpc.bin' : 'body.json');
  const argv = ['-c50', '-D', String(SECONDS), '--log-file', log, '-d', join(dir, file)];
  if (controlPlane) argv.push('-H', `x-api-key: ${cpKey}`);
  if (kind === 'grpc') argv.push('-m10', '-H', 'content-type: application/grpc', '-H', 'te: trailers');
  else argv.push('--h1', '-H', 'content-type: application/json');
  if (rps !== undefined) argv.push(`--rps=${Math.max(1, Math.round(rps / 50))}`);
  const { stdout } = await run('h2load', [...argv, url], { maxBuffer: 64 * 1024 * 1024 });
  const us = readFileSync(log, 'utf8').trim().split('\n').map((l) => Number(l.split('\t')[2])).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const at = (q: number) => (us.length ? us[Math.min(us.length - 1, Math.floor(q * us.length))] / 1000 : undefined);
  return { rps: Number(/finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(stdout)?.[1]), p50ms: at(0.5), p99ms: at(0.99), requests: us.length };
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

async function main() {
  const loadAtStart = loadAverageNow();
  const cp = await scriptedControlPlane(RESOURCES);
  const { found: httpPort, pid: httpPid } = await spawnUntil(process.execPath, ['--import', 'tsx', 'bench/constant-servers.ts', 'http'], {}, (l) => /^listening (\d+)/.exec(l)?.[1]);
  const { found: grpcPort, pid: grpcPid } = await spawnUntil(process.execPath, ['--import', 'tsx', 'bench/constant-servers.ts', 'grpc'], {}, (l) => /^listening (\d+)/.exec(l)?.[1]);
  const startedAt = Date.now();
  // BENCH_SIDECAR_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the sidecar.
  const nodeArgs = (process.env.BENCH_SIDECAR_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const { url: sidecarUrl, child: sidecarChild } = track(await startProcess('sidecar', {
    SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: 'azk_bench', SIDECAR_TENANT_ID: TENANT, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
  }, { built: true, nodeArgs }));
  await waitFor200(`${sidecarUrl}/readyz`, 30_000);
  const readyMs = Date.now() - startedAt;
  // The variants, each its own sidecar process on the same scripted control plane.
  const sink = VARIANTS.includes('tracing') ? await otlpSink() : undefined;
  const variants: { name: string; url: string; pid: number | undefined }[] = [];
  for (const name of VARIANTS) {
    const env: Record<string, string> = {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: 'azk_bench', SIDECAR_TENANT_ID: TENANT, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    };
    if (name === 'log') env.SIDECAR_DECISION_LOG = `file:${decisionLogPath}`;
    if (name === 'tracing') Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url });
    const p = track(await startProcess('sidecar', env, { built: true, entry: name === 'before' ? resolve(BEFORE!) : undefined }));
    await waitFor200(`${p.url}/readyz`, 30_000);
    variants.push({ name, url: p.url, pid: p.child.pid });
  }
  const cpReal = await startRealControlPlane();
  const cpUrl = cpReal.url;
  dropScratch = cpReal.drop;
  const constantHttp = `http://127.0.0.1:${httpPort}`;
  const constantGrpc = `http://127.0.0.1:${grpcPort}/authz.v1.DecisionService/Evaluate`;
  console.log(`sidecar ready in ${readyMs} ms with ${RESOURCES} resources; ${ROUNDS} rounds of ${SECONDS} s`);

  const rounds: Record<string, Load>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const round: Record<string, Load> = {};
    const sidecarPid = sidecarChild.pid;
    const loads: [string, () => Promise<Load>][] = [
      ['nodeHttp', () => costed(httpPid, () => wrk(`${constantHttp}/evaluate`))],
      ['rest', () => costed(sidecarPid, () => wrk(`${sidecarUrl}/evaluate`))],
      ['connectJson', () => costed(sidecarPid, () => wrk(`${sidecarUrl}/authz.v1.DecisionService/Evaluate`))],
      ['grpcJs', () => costed(grpcPid, () => h2load(constantGrpc, 'grpc'))],
      ['grpc', () => costed(sidecarPid, () => h2load(`${sidecarUrl}/authz.v1.DecisionService/Evaluate`, 'grpc'))],
      ['cpRest', () => costed(cpReal.pid, () => wrk(`${cpUrl}/evaluate`, 'cp-post.lua'))],
      ['cpConnectJson', () => costed(cpReal.pid, () => wrk(`${cpUrl}/authz.v1.DecisionService/Evaluate`, 'cp-post.lua'))],
      ['cpGrpc', () => costed(cpReal.pid, () => h2load(`${cpUrl}/authz.v1.DecisionService/Evaluate`, 'grpc', undefined, true))],
    ];
    for (const v of variants) {
      loads.push([`${v.name}Rest`, () => costed(v.pid, () => wrk(`${v.url}/evaluate`))]);
      loads.push([`${v.name}ConnectJson`, () => costed(v.pid, () => wrk(`${v.url}/authz.v1.DecisionService/Evaluate`))]);
      loads.push([`${v.name}Grpc`, () => costed(v.pid, () => h2load(`${v.url}/authz.v1.DecisionService/Evaluate`, 'grpc'))]);
    }
    if (r % 2 === 1) loads.reverse();
    for (const [name, load] of loads) {
      await new Promise((settle) => setTimeout(settle, PAUSE_MS));
      round[name] = await load();
    }
    for (const v of variants) {
      console.log(`  ${v.name}: REST ${round[`${v.name}Rest`].rps.toFixed(0)} (${(round[`${v.name}Rest`].rps / round.rest.rps).toFixed(2)} of the plain sidecar), ` +
        `Connect JSON ${round[`${v.name}ConnectJson`].rps.toFixed(0)} (${(round[`${v.name}ConnectJson`].rps / round.connectJson.rps).toFixed(2)}), ` +
        `gRPC ${round[`${v.name}Grpc`].rps.toFixed(0)} (${(round[`${v.name}Grpc`].rps / round.grpc.rps).toFixed(2)}) req/s`);
    }
    rounds.push(round);
    console.log(`round ${r + 1}${r % 2 === 1 ? ' (reversed)' : ''}: node:http ${round.nodeHttp.rps.toFixed(0)}, REST ${round.rest.rps.toFixed(0)} (${(round.rest.rps / round.nodeHttp.rps).toFixed(2)}), ` +
      `Connect JSON ${round.connectJson.rps.toFixed(0)} (${(round.connectJson.rps / round.nodeHttp.rps).toFixed(2)}); grpc-js ${round.grpcJs.rps.toFixed(0)}, gRPC ${round.grpc.rps.toFixed(0)} (${(round.grpc.rps / round.grpcJs.rps).toFixed(2)}) req/s; ` +
      `control plane: REST ${round.cpRest.rps.toFixed(0)} (${(round.cpRest.rps / round.nodeHttp.rps).toFixed(2)}), Connect JSON ${round.cpConnectJson.rps.toFixed(0)} (${(round.cpConnectJson.rps / round.nodeHttp.rps).toFixed(2)}), ` +
      `gRPC ${round.cpGrpc.rps.toFixed(0)} (${(round.cpGrpc.rps / round.grpcJs.rps).toFixed(2)})`);
  }
  const ratio = (a: string, b: string) => median(rounds.map((x) => x[a].rps / x[b].rps));
  const rate = (k: string) => median(rounds.map((x) => x[k].rps));
  const summary = {
    rest: ratio('rest', 'nodeHttp'), connectJson: ratio('connectJson', 'nodeHttp'), grpc: ratio('grpc', 'grpcJs'),
    controlPlaneRest: ratio('cpRest', 'nodeHttp'), controlPlaneConnectJson: ratio('cpConnectJson', 'nodeHttp'), controlPlaneGrpc: ratio('cpGrpc', 'grpcJs'),
  };
  // CPU per request, the same ratio read as cost: the baseline's µs over the surface's.
  const cost = (a: string, b: string) => median(rounds.map((x) => (x[b].cpuUsPerRequest ?? NaN) / (x[a].cpuUsPerRequest ?? NaN)));
  const cpu = (k: string) => median(rounds.map((x) => x[k].cpuUsPerRequest ?? NaN));
  const costRatios = {
    rest: cost('rest', 'nodeHttp'), connectJson: cost('connectJson', 'nodeHttp'), grpc: cost('grpc', 'grpcJs'),
    controlPlaneRest: cost('cpRest', 'nodeHttp'), controlPlaneConnectJson: cost('cpConnectJson', 'nodeHttp'), controlPlaneGrpc: cost('cpGrpc', 'grpcJs'),
  };
  console.log(`CPU µs per request: node:http ${cpu('nodeHttp').toFixed(1)}, sidecar REST ${cpu('rest').toFixed(1)}, Connect JSON ${cpu('connectJson').toFixed(1)}; grpc-js ${cpu('grpcJs').toFixed(1)}, sidecar gRPC ${cpu('grpc').toFixed(1)}; control plane REST ${cpu('cpRest').toFixed(1)}, Connect JSON ${cpu('cpConnectJson').toFixed(1)}, gRPC ${cpu('cpGrpc').toFixed(1)}`);
  console.log(`as cost ratios (baseline µs / surface µs): sidecar REST ${costRatios.rest.toFixed(2)}, Connect JSON ${costRatios.connectJson.toFixed(2)}, gRPC ${costRatios.grpc.toFixed(2)}; control plane REST ${costRatios.controlPlaneRest.toFixed(2)}, Connect JSON ${costRatios.controlPlaneConnectJson.toFixed(2)}, gRPC ${costRatios.controlPlaneGrpc.toFixed(2)}`);
  // Latency at half of each one's own saturated rate.
  const half = {
    nodeHttp: await hey(`${constantHttp}/evaluate`, rate('nodeHttp') / 2),
    rest: await hey(`${sidecarUrl}/evaluate`, rate('rest') / 2),
    connectJson: await hey(`${sidecarUrl}/authz.v1.DecisionService/Evaluate`, rate('connectJson') / 2),
    grpcJs: await h2load(constantGrpc, 'grpc', rate('grpcJs') / 2),
    grpc: await h2load(`${sidecarUrl}/authz.v1.DecisionService/Evaluate`, 'grpc', rate('grpc') / 2),
    cpRest: await hey(`${cpUrl}/evaluate`, rate('cpRest') / 2, [`x-api-key: ${cpKey}`]),
    cpGrpc: await h2load(`${cpUrl}/authz.v1.DecisionService/Evaluate`, 'grpc', rate('cpGrpc') / 2, true),
  };
  // The variants against the plain sidecar of the same rounds: req/s and CPU per request as ratios, p99s side by side.
  const variantSummary: Record<string, unknown> = {};
  for (const v of variants) {
    const surfaces = { Rest: 'rest', ConnectJson: 'connectJson', Grpc: 'grpc' } as const;
    const out: Record<string, unknown> = {};
    for (const [suffix, plain] of Object.entries(surfaces)) {
      const k = `${v.name}${suffix}`;
      out[plain] = {
        rpsRatio: ratio(k, plain), cpuRatio: median(rounds.map((x) => (x[k].cpuUsPerRequest ?? NaN) / (x[plain].cpuUsPerRequest ?? NaN))),
        rps: rate(k), plainRps: rate(plain), p99ms: median(rounds.map((x) => x[k].p99ms ?? NaN)), plainP99ms: median(rounds.map((x) => x[plain].p99ms ?? NaN)),
      };
    }
    out.halfRate = {
      rest: await hey(`${v.url}/evaluate`, rate(`${v.name}Rest`) / 2),
      grpc: await h2load(`${v.url}/authz.v1.DecisionService/Evaluate`, 'grpc', rate(`${v.name}Grpc`) / 2),
    };
    if (v.name === 'log') {
      out.linesWritten = await metricOf(v.url, 'authz_decision_log_lines_total{result="written"}');
      out.linesDropped = await metricOf(v.url, 'authz_decision_log_lines_total{result="dropped"}');
    }
    if (v.name === 'tracing') out.otlpBytes = sink!.bytes();
    variantSummary[v.name] = out;
    const o = out as Record<string, { rpsRatio: number; cpuRatio: number; p99ms: number; plainP99ms: number }> & { halfRate: Record<string, Load> };
    console.log(`${v.name} / plain sidecar: req/s REST ${o.rest.rpsRatio.toFixed(2)}, Connect JSON ${o.connectJson.rpsRatio.toFixed(2)}, gRPC ${o.grpc.rpsRatio.toFixed(2)}; ` +
      `CPU per request REST ${o.rest.cpuRatio.toFixed(2)}, Connect JSON ${o.connectJson.cpuRatio.toFixed(2)}, gRPC ${o.grpc.cpuRatio.toFixed(2)}; ` +
      `p99 at saturation REST ${o.rest.p99ms.toFixed(2)} vs ${o.rest.plainP99ms.toFixed(2)} ms, gRPC ${o.grpc.p99ms.toFixed(2)} vs ${o.grpc.plainP99ms.toFixed(2)} ms; ` +
      `at half rate REST p50/p99 ${o.halfRate.rest.p50ms?.toFixed(2)}/${o.halfRate.rest.p99ms?.toFixed(2)} ms, gRPC ${o.halfRate.grpc.p50ms?.toFixed(2)}/${o.halfRate.grpc.p99ms?.toFixed(2)} ms` +
      (v.name === 'log' ? `; lines written ${out.linesWritten}, dropped ${out.linesDropped}` : ''));
  }
  sink?.close();
  console.log(`medians: REST ${summary.rest.toFixed(2)} and Connect JSON ${summary.connectJson.toFixed(2)} of node:http (target ≥ 0.70); gRPC ${summary.grpc.toFixed(2)} of grpc-js (target ≥ 0.70)`);
  console.log(`control plane: REST ${summary.controlPlaneRest.toFixed(2)} and Connect JSON ${summary.controlPlaneConnectJson.toFixed(2)} of node:http (target ≥ 0.35 on REST); gRPC ${summary.controlPlaneGrpc.toFixed(2)} of grpc-js`);
  for (const [k, v] of Object.entries(half)) console.log(`  at half rate, ${k}: p50 ${v.p50ms?.toFixed(2)} ms, p99 ${v.p99ms?.toFixed(2)} ms`);
  const last = rounds[rounds.length - 1];
  for (const [k, v] of Object.entries(last)) console.log(`  at saturation, ${k}: p50 ${v.p50ms?.toFixed(2)} ms, p99 ${v.p99ms?.toFixed(2)} ms`);
  const command = ['npm run build && tsx bench/sidecar.ts', ...process.argv.slice(2)].join(' ');
  const file = writeResults('sidecar', {
    command, loadAtStart, baseline: { nodeHttpRps: Math.round(rate('nodeHttp')) },
    results: { resources: RESOURCES, readyMs, rounds, ratios: summary, costRatios, halfRate: half, variants: variantSummary },
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
