/**
 * The real Watch snapshot end to end: a control plane (this process, the sources, on a scratch
 * PostgreSQL database) streams a tenant of `--resources` resources, `--grants` ownership grants
 * and `--subjects` subjects (defaults 1,000,000 / 1,000,000 / 100,000, inserted with
 * generate_series) to a real sidecar process from `dist/`. Reported: time from the sidecar's
 * spawn to its `/readyz` answering 200 (the snapshot loaded), its resident memory then
 * (`process_resident_memory_bytes` on its `/metrics`), and that an ownership decision answers.
 * `--runs N` starts N sidecars one after the other on the same data; `--compression none,gzip`
 * alternates SIDECAR_WATCH_COMPRESSION over the runs (side by side on one loaded machine).
 *
 * `--together N` starts N sidecars at once in each run (a rollout): each one's time to ready, and
 * how the control plane served them (read from PostgreSQL, followed the one reading it, kept).
 *
 * `--entries current,/path/dist/cmd/sidecar/main.js` alternates the sidecar build over the runs (e.g.
 * this one and one from before a change, side by side).
 *
 * Usage: npm run build && DATABASE_URL=postgres://… tsx bench/watch-sidecar.ts [--resources 1000000 --grants 1000000 --subjects 100000 --runs 2 --snapshot-cache keep|off]
 * Extra `SIDECAR_*` variables in the environment reach the sidecar (e.g. SIDECAR_WATCH_COMPRESSION);
 * `--lean-watch off` serves the sidecars' Watch calls by connect-node instead of the lean path.
 * `--save 1` writes the runs to bench/results/watch-sidecar.json.
 *
 * The floor each run is measured against, in the same run: PostgreSQL `COPY`ing the same rows
 * (the control plane's own selects) through `psql` into /dev/null, right before the sidecar
 * starts (copy-baseline.ts; `--copy off` skips it). Printed: ready ÷ COPY and each process's CPU
 * ÷ COPY (PostgreSQL's: the backends of the scratch database, sampled every 100 ms, so not what
 * other databases of a shared server do), and the sidecar's bytes per entity above a sidecar of
 * an empty tenant (started first): RSS, and heap + external memory (prom-client's, not after a
 * forced collection).
 * `--profile DIR`: a CPU profile of each side per run, the control plane's (this process, from
 * the sidecar's spawn to its ready) and the sidecar's (`--cpu-prof`, written when it stops), in DIR.
 * BENCH_SIDECAR_NODE_ARGS its `node` (e.g. `--trace-gc`; sets separated by `|` alternate over
 * the runs), and BENCH_SIDECAR_OUTPUT=/path keeps
 * what each run's sidecar printed in /path.<run>.
 */
import { resolve } from 'node:path';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpuMs, rssOf, startProcess, waitFor200 } from '../test/processes.js';
import { insertBigTenant } from './big-tenant.js';
import { runAsDeployed } from './as-deployed.js';
import { loadAverageNow, writeResults } from './results-file.js';
import { BackendCpu, copyBaseline } from './copy-baseline.js';
import { Session } from 'node:inspector/promises';
import { mkdirSync } from 'node:fs';
import { restClient } from '../test/watch-fixtures.js';

const loadAtStart = loadAverageNow();
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 1_000_000);
const SUBJECTS = Number(args.get('subjects') ?? 100_000);
const RUNS = Number(args.get('runs') ?? 1);
const TOGETHER = Number(args.get('together') ?? 1);
const COMPRESSIONS = args.get('compression')?.split(',');
const ENTRIES = args.get('entries')?.split(',').map((e) => (e === 'current' ? undefined : resolve(e)));
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');
const COPY = args.get('copy') ?? 'on';
if (COPY !== 'on' && COPY !== 'off') throw new Error('--copy on|off');
const PROFILE = args.has('profile') ? resolve(args.get('profile')!) : undefined;
if (PROFILE) mkdirSync(PROFILE, { recursive: true });

/** A sidecar's memory from its `/metrics`: RSS, and V8's heap in use plus its external memory. */
async function memoryOf(url: string): Promise<{ rss: number; heap: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
  return { rss: metric('process_resident_memory_bytes'), heap: metric('nodejs_heap_size_used_bytes') + metric('nodejs_external_memory_bytes') };
}

/** Minor page faults of a process so far: each is a page touched for the first time (4 KiB here). */
function minorFaults(pid: number | undefined): number {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[7]);
  } catch {
    return NaN;
  }
}

// `--snapshot-cache keep|off`: whether the control plane keeps the snapshot for the next runs
// (SERVICE_WATCH_SNAPSHOT_CACHE_BYTES 1 GiB, above the default 128 MiB the 279 MiB snapshot passes;
// default keep: run 1 reads PostgreSQL, the later runs
// are served the kept snapshot and its changes). `off` makes every run a cold read.
const CACHE = args.get('snapshot-cache') ?? 'keep';
if (CACHE !== 'keep' && CACHE !== 'off') throw new Error('--snapshot-cache keep|off');
// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
// `--lean-watch off`: the sidecars' Watch calls served by connect-node instead of the lean path.
const LEAN = args.get('lean-watch') ?? 'on';
if (LEAN !== 'on' && LEAN !== 'off') throw new Error('--lean-watch on|off');
const cp = await startTestControlPlane('postgres', { SERVICE_WATCH_SNAPSHOT_CACHE_BYTES: CACHE === 'off' ? '0' : String(1024 * 1024 * 1024) }, { leanWatch: LEAN === 'on' });
try {
  const { tenantId, scopeId: scope } = await insertBigTenant(cp, { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS });

  // BENCH_SIDECAR_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) reaches the sidecar's `node`.
  // BENCH_SIDECAR_ENV: `NAME=value …` for the sidecar's environment. In both, sets separated by
  // `|` alternate over the runs, like --entries.
  const envSets = (process.env.BENCH_SIDECAR_ENV ?? '').split('|').map((set) => Object.fromEntries(set.split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])));
  const nodeArgSets = (process.env.BENCH_SIDECAR_NODE_ARGS ?? '').split('|').map((set) => set.split(' ').filter(Boolean));
  const sidecarEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SIDECAR_'))) as Record<string, string>;
  // A sidecar of an empty tenant: what a sidecar holds before any entity (the runs' per-entity figures are above it).
  const empty = await (async () => {
    const tenant = await restClient(cp.url, TEST_BOOTSTRAP_KEY)('POST', '/tenants', { name: 'empty' });
    const sc = await startProcess('sidecar', { ...sidecarEnv, SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: TEST_BOOTSTRAP_KEY, SIDECAR_TENANT_ID: tenant.id as string, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info' }, { built: true });
    try {
      await waitFor200(`${sc.url}/readyz`, 60_000);
      return await memoryOf(sc.url);
    } finally {
      await sc.stop('SIGTERM');
    }
  })();
  const entities = RESOURCES + GRANTS + SUBJECTS;
  console.log(`empty sidecar: RSS ${(empty.rss / 1048576).toFixed(0)} MiB, heap + external ${(empty.heap / 1048576).toFixed(0)} MiB`);
  const results: Record<string, unknown>[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const compression = COMPRESSIONS?.[(run - 1) % COMPRESSIONS.length];
    const entry = ENTRIES?.[(run - 1) % ENTRIES.length];
    const copy = COPY === 'on' ? await copyBaseline(cp.db, process.env.DATABASE_URL, tenantId) : undefined;
    const nodeArgs = [...nodeArgSets[(run - 1) % nodeArgSets.length], ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}/sidecar.${run}`] : [])];
    const session = PROFILE ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const started = Date.now();
    const backends = new BackendCpu(cp.db);
    await backends.start();
    const cpu0 = { own: process.cpuUsage(), faults: minorFaults(process.pid) };
    const stats0 = cp.watch.snapshots.stats();
    const sidecars = await Promise.all(Array.from({ length: TOGETHER }, () => startProcess('sidecar', {
      ...sidecarEnv, ...envSets[(run - 1) % envSets.length], ...(compression ? { SIDECAR_WATCH_COMPRESSION: compression } : {}), SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: TEST_BOOTSTRAP_KEY, SIDECAR_TENANT_ID: tenantId, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    }, { built: true, entry, nodeArgs })));
    try {
      const readyMs = await Promise.all(sidecars.map(async (sidecar) => {
        await waitFor200(`${sidecar.url}/readyz`, Number(args.get('timeout-ms') ?? 900_000)).catch((err) => {
          throw new Error(`${(err as Error).message}; sidecar said:\n${sidecar.output.join('\n')}`);
        });
        return Date.now() - started;
      }));
      // CPU to the last ready of each process (the reads race a little with the sidecars' idle ticks).
      const own = process.cpuUsage(cpu0.own);
      if (session) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(`${PROFILE}/control-plane.${run}.cpuprofile`, JSON.stringify(profile));
        session.disconnect();
      }
      const cpu = { controlPlane: (own.user + own.system) / 1000, sidecar: sidecars.map((sc) => cpuMs(sc.child.pid) ?? NaN), postgres: await backends.stop() };
      const sidecar = sidecars[0];
      const faults = minorFaults(sidecar.child.pid);
      const ownFaults = minorFaults(process.pid) - cpu0.faults;
      const rss = await rssOf(sidecar.url);
      const memory = await memoryOf(sidecar.url);
      const perEntity = { rss: Math.round((memory.rss - empty.rss) / entities), heap: Math.round((memory.heap - empty.heap) / entities) };
      // Subject k owns resource k (grant k: subject k % S + 1, resource k % R + 1).
      const k = Math.min(SUBJECTS, RESOURCES) - 1;
      const body = (s: number) => JSON.stringify({ actor: { subjectId: `subject_0192f3a4-0000-7000-8000-${String(s).padStart(12, '0')}` }, scopeId: scope, action: 'edit', resource: { resourceId: `resource_0192f3a4-0000-7000-8000-${String(k).padStart(12, '0')}` } });
      for (const sc of sidecars) {
        const owner = (await (await fetch(`${sc.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(k) })).json()) as { allowed: boolean; reason: string };
        if (!owner.allowed || owner.reason !== 'ownership') throw new Error(`decision wrong: ${JSON.stringify(owner)}`);
      }
      const stats = cp.watch.snapshots.stats();
      const served = { read: stats.misses - stats0.misses, followed: (stats.joined ?? 0) - (stats0.joined ?? 0), kept: stats.hits - stats0.hits };
      const source = TOGETHER > 1
        ? `${served.read} read from PostgreSQL, ${served.followed} followed, ${served.kept} kept`
        : served.kept > 0 ? 'kept snapshot' : 'read from PostgreSQL';
      const s1 = (ms: number) => (ms / 1000).toFixed(1);
      const x = (ms: number) => (copy ? ms / copy.ms : NaN);
      const ratios = copy ? { ready: x(Math.max(...readyMs)), controlPlaneCpu: x(cpu.controlPlane), sidecarCpu: x(Math.max(...cpu.sidecar)), postgresCpu: x(cpu.postgres) } : undefined;
      results.push({
        run, source, readyMs, rssMiB: Math.round(rss / 1048576), cpuMs: { controlPlane: Math.round(cpu.controlPlane), sidecar: cpu.sidecar, postgres: cpu.postgres },
        copy: copy && { ms: Math.round(copy.ms) }, overCopy: ratios && Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, Number(v.toFixed(2))])),
        bytesPerEntity: perEntity, emptySidecar: { rssMiB: Math.round(empty.rss / 1048576), heapMiB: Math.round(empty.heap / 1048576) },
      });
      console.log(`run ${run}: ${RESOURCES} resources + ${GRANTS} grants + ${SUBJECTS} subjects (${source}; compression ${compression ?? sidecarEnv.SIDECAR_WATCH_COMPRESSION ?? 'default'}${entry ? `, ${entry}` : ''}${nodeArgSets.length > 1 ? `, node ${nodeArgSets[(run - 1) % nodeArgSets.length].join(' ') || '(no flags)'}` : ''}${envSets.length > 1 ? `, env ${JSON.stringify(envSets[(run - 1) % envSets.length])}` : ''}): ` +
        `${TOGETHER > 1 ? `${TOGETHER} sidecars ready in ${readyMs.join(', ')} ms` : `sidecar ready in ${readyMs[0]} ms`}, RSS ${(rss / 1048576).toFixed(0)} MiB; CPU to ready: control plane ${s1(cpu.controlPlane)} s, ` +
        `sidecar ${cpu.sidecar.map(s1).join(', ')} s, PostgreSQL ${s1(cpu.postgres)} s; page faults: sidecar ${faults} (${((faults * 4096) / 1048576).toFixed(0)} MiB first touched), control plane ${ownFaults}`);
      if (copy && ratios) {
        const r = (v: number) => `${v.toFixed(2)}×`;
        console.log(`  COPY of the same rows (psql to /dev/null): ${copy.ms.toFixed(0)} ms; ready ÷ COPY ${r(ratios.ready)}; CPU ÷ COPY: control plane ${r(ratios.controlPlaneCpu)}, sidecar ${r(ratios.sidecarCpu)}, PostgreSQL ${r(ratios.postgresCpu)}`);
      }
      console.log(`  sidecar bytes per entity (${entities} entities, above an empty sidecar): RSS ${perEntity.rss}, heap + external ${perEntity.heap}`);
    } finally {
      await Promise.all(sidecars.map((sc) => sc.stop('SIGTERM')));
      if (process.env.BENCH_SIDECAR_OUTPUT) writeFileSync(`${process.env.BENCH_SIDECAR_OUTPUT}.${run}`, sidecars.map((sc) => sc.output.join('')).join('\n---\n'));
    }
  }
  if (args.has('save')) {
    const controlPlaneNode = process.execArgv.filter((a) => a.startsWith('--') && !a.startsWith('--import') && !a.startsWith('--require'));
    const command = ['npm run build && DATABASE_URL=… tsx bench/watch-sidecar.ts', ...process.argv.slice(2)].join(' ');
    const saved = { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS, snapshotCache: CACHE, leanWatch: LEAN, controlPlaneNode, targetMs: 10_000, runs: results };
    console.log(`wrote ${writeResults('watch-sidecar', { command, results: saved, loadAtStart })}`);
  }
} finally {
  await cp.close();
}
