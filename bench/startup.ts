/**
 * Start-up: from spawn to `/readyz` 200, for the control plane (on PostgreSQL, and on the embedded
 * database) and the sidecar (following a control plane that holds a small tenant), each run three
 * ways:
 *
 * - `tsx` (cold): the TypeScript sources through tsx with its compile cache off: a first
 *   `npm start`, or a container running the sources with nowhere to keep the cache;
 * - `tsx` (warm): the same with tsx's cache filled, a developer's second `npm start`;
 * - `dist`: the compiled JavaScript of `npm run build`, what the image runs.
 *
 * The three are interleaved `--runs` times, in a rotating order, so that a loaded machine slows
 * them alike and none always goes first. Each start reports wall time and the CPU time the
 * process used until ready (from /proc); medians are printed and written to
 * bench/results/startup.json with the load average around the run.
 *
 * Usage: DATABASE_URL=postgres://… npm run bench:startup [-- --runs 7]
 */
import { loadavg } from 'node:os';
import { cpuMs, startProcess, waitFor200, type ProcessKind } from '../test/processes.js';
import { createScratchDatabase } from '../test/databases.js';
import { loadAverageNow, writeResults } from './results-file.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RUNS = Number(args.get('runs') ?? 7);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a positive integer, got ${args.get('runs')}`);
const KEY = 'azk_bench_bootstrap_key_0123456789abcdefghijkl';
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

type Variant = 'tsxCold' | 'tsxWarm' | 'dist';
const VARIANTS: Variant[] = ['tsxCold', 'tsxWarm', 'dist'];

/**
 * Milliseconds from spawn to /readyz 200, and the CPU time the process had used by then (which
 * the load of a shared machine does not inflate as much); the process is stopped afterwards.
 */
async function timeToReady(kind: ProcessKind, env: Record<string, string>, variant: Variant): Promise<{ ms: number; cpuMs: number }> {
  const started = performance.now();
  const p = await startProcess(kind, variant === 'tsxCold' ? { ...env, TSX_DISABLE_CACHE: '1' } : env, { built: variant === 'dist' });
  try {
    await waitFor200(`${p.url}/readyz`, 120_000);
    const ms = performance.now() - started;
    return { ms, cpuMs: cpuMs(p.child.pid) ?? Number.NaN };
  } finally {
    await p.stop('SIGTERM');
  }
}

const loadAtStart = loadAverageNow();
const load = [loadavg()[0]];
const scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_bench_startup');
try {
  const cpEnv = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, DATABASE_URL: scratch.url, SERVICE_LOG_LEVEL: 'info' };
  // The database is migrated once before timing, as a restarted replica finds it.
  const cp = await startProcess('control-plane', cpEnv, { built: true });
  const call = async (path: string, body: unknown) => {
    const r = await fetch(cp.url + path, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Record<string, string>;
  };
  const tenant = await call('/tenants', { name: 'startup' });
  const key = await call('/api-keys', { name: 'sidecar', kind: 'service', tenantId: tenant.id });
  const sidecarEnv = { SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: key.secretKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info' };
  const embeddedEnv = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, SERVICE_DATA_DIR: 'memory://', SERVICE_LOG_LEVEL: 'info' };

  const cases: [string, ProcessKind, Record<string, string>][] = [
    ['control plane (PostgreSQL)', 'control-plane', cpEnv],
    ['control plane (embedded)', 'control-plane', embeddedEnv],
    ['sidecar', 'sidecar', sidecarEnv],
  ];
  // Fills tsx's cache once, so that "warm" is warm from its first sample.
  for (const [, kind, env] of cases) await timeToReady(kind, env, 'tsxWarm');

  const times: Record<string, Record<Variant, number[]>> = {};
  const cpu: Record<string, Record<Variant, number[]>> = {};
  for (let r = 0; r < RUNS; r++) {
    for (const [name, kind, env] of cases) {
      times[name] ??= { tsxCold: [], tsxWarm: [], dist: [] };
      cpu[name] ??= { tsxCold: [], tsxWarm: [], dist: [] };
      for (let i = 0; i < VARIANTS.length; i++) {
        const variant = VARIANTS[(r + i) % VARIANTS.length];
        const t = await timeToReady(kind, env, variant);
        times[name][variant].push(Math.round(t.ms));
        cpu[name][variant].push(Math.round(t.cpuMs));
      }
    }
    load.push(loadavg()[0]);
  }
  await cp.stop('SIGTERM');

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : Math.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2);
  };
  const result: Record<string, Record<`${Variant}Ms` | `${Variant}CpuMs`, number>> = {};
  for (const [name, t] of Object.entries(times)) {
    const c = cpu[name];
    result[name] = {
      tsxColdMs: median(t.tsxCold), tsxWarmMs: median(t.tsxWarm), distMs: median(t.dist),
      tsxColdCpuMs: median(c.tsxCold), tsxWarmCpuMs: median(c.tsxWarm), distCpuMs: median(c.dist),
    };
    const r = result[name];
    console.log(
      `${name}: spawn to ready ${r.tsxColdMs} ms from sources (tsx, cold cache), ${r.tsxWarmMs} ms (tsx, warm cache), ` +
        `${r.distMs} ms compiled (dist/); CPU to ready ${r.tsxColdCpuMs} / ${r.tsxWarmCpuMs} / ${r.distCpuMs} ms; medians of ${RUNS}`,
    );
  }
  const loadAverage = { min: Math.min(...load), max: Math.max(...load) };
  console.log(`load average (1 min) during the run: ${loadAverage.min.toFixed(1)}–${loadAverage.max.toFixed(1)}`);
  const command = ['npm run bench:startup --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
  console.log(`wrote ${writeResults('startup', { command, results: { runs: RUNS, loadAverage, result, samples: times, cpuSamples: cpu }, loadAtStart })}`);
} finally {
  await scratch.drop();
}
