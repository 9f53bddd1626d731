/**
 * Many tenants on one control plane (issue 30, target 3): `--tenants` tenants of about
 * `--entities` rows each (bench/many-tenants-seed.ts, written with set-based SQL into a scratch
 * PostgreSQL database), one real control-plane process whose SERVICE_INDEX_MAX_ROWS holds
 * `--cache` of them, and a decision client in a process of its own (many-tenants-client.ts,
 * REST `/evaluate` with the bootstrap key, a platform key that may decide for every tenant).
 *
 * Phases, every figure from the same run:
 * 1. cold tenants one call at a time (`--cold` of them, never asked): the first caller's latency,
 *    the control plane's CPU, PostgreSQL's CPU and transactions per build; then the same tenants
 *    again (cached) for the ratio;
 * 2. `--seconds` of decisions with tenants drawn by a Zipf law (`--zipf` s) over all tenants,
 *    `--concurrency` in flight, the control plane's /metrics read every second: RSS, heap,
 *    indexes and rows held, evictions, event-loop delay; latency of calls whose tenant was cached
 *    and of those that built an index (the client keeps the cache's LRU rule beside it and the
 *    prediction is checked against the control plane's count of builds);
 * 3. head of line, `--rounds` interleaved pairs: calls on a hot set of tenants (cached) alone,
 *    then the same with `--cold-concurrency` more calls each building a tenant's index: the hot
 *    calls' p50/p99/max with and without builds around them.
 *
 * Usage: DATABASE_URL=postgres://… npm run bench:many-tenants [-- --tenants 10000 --entities 1000
 *   --cache 0.15 --zipf 1.1 --concurrency 32 --seconds 60 --cold 50 --rounds 3 --built
 *   --max-builds N --trace-gc --out NAME]
 * `--max-builds N` sets SERVICE_INDEX_MAX_BUILDS (builds running at once) for a before/after;
 * `--trace-gc` runs the control plane with V8's `--trace-gc` and reports its longest pauses.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import pg from 'pg';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import { openDatabase } from '../services/store/db.js';
import { createScratchDatabase } from '../test/databases.js';
import { postgresCpuMs, startProcess, threadCpuMs, type RunningProcess } from '../test/processes.js';
import type { ClientConfig, Phase, PhaseReport } from './many-tenants-client.js';
import { idOf, rowsOf, seedTenants, shapeOf, tenantOfRank } from './many-tenants-seed.js';
import { benchArgs } from './args.js';
import { loadAverageNow, writeResults } from './results-file.js';

const args = benchArgs();
const num = (name: string, d: number) => Number(args.get(name) ?? d);
const TENANTS = num('tenants', 10_000);
const ENTITIES = num('entities', 1_000);
const CACHE = num('cache', 0.15);
const ZIPF = num('zipf', 1.1);
const CONCURRENCY = num('concurrency', 32);
const SECONDS = num('seconds', 60);
const COLD = num('cold', 50);
const ROUNDS = num('rounds', 3);
const ROUND_SECONDS = num('round-seconds', 8);
const HOT = num('hot', 50);
const HOT_CONCURRENCY = num('hot-concurrency', 8);
const COLD_CONCURRENCY = num('cold-concurrency', 16);
const MAX_BUILDS = args.get('max-builds');
const TRACE_GC = args.get('trace-gc') === 'true';
const BUILT = args.get('built') === 'true';
const OUT = args.get('out') ?? 'many-tenants';
const KEY = 'azk_bench_many_tenants_bootstrap_0123456789';

const f2 = (x: number) => Math.round(x * 100) / 100;
const pct = (xs: number[] | undefined, q: number) => {
  if (!xs || xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return f2(s[Math.min(s.length - 1, Math.floor(q * s.length))]);
};
const summary = (xs: number[] | undefined) => ({ calls: xs?.length ?? 0, p50Ms: pct(xs, 0.5), p99Ms: pct(xs, 0.99), maxMs: pct(xs, 1) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = (b: number) => f2(b / 1048576);

/** The figures of the control plane's /metrics this benchmark follows. */
async function metrics(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const get = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return {
    rss: get('process_resident_memory_bytes'),
    heapUsed: get('nodejs_heap_size_used_bytes'),
    indexes: get('authz_tenant_indexes'),
    rows: get('authz_tenant_index_rows'),
    evictions: get('authz_tenant_index_evictions_total'),
    // prom-client resets the event-loop histogram at each scrape: these are since the last one.
    lagP99Ms: get('nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMaxMs: get('nodejs_eventloop_lag_max_seconds') * 1000,
    poolPending: get('authz_db_pool_pending_acquires'),
  };
}
type Metrics = Awaited<ReturnType<typeof metrics>>;

/** Reads /metrics every second while `run` runs. */
async function sampled<T>(url: string, run: Promise<T>): Promise<{ value: T; samples: (Metrics & { at: number })[] }> {
  const samples: (Metrics & { at: number })[] = [];
  const t0 = Date.now();
  let done = false;
  const poll = (async () => {
    while (!done) {
      await sleep(1000);
      if (!done) samples.push({ at: (Date.now() - t0) / 1000, ...(await metrics(url)) });
    }
  })();
  const value = await run;
  done = true;
  await poll;
  return { value, samples };
}

/**
 * What an index of these tenants holds, in this process with `gc()` (node --expose-gc): the heap
 * kept by `count` tenants' indexes (the control plane's own class and reads) ÷ their rows, and
 * what one build costs, one at a time (CPU of this process, wall time).
 */
async function heapPerRow(url: string, count: number): Promise<{ tenants: number; rows: number; bytesPerRow: number; buildCpuMs: number; buildWallMs: number } | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return undefined;
  const db = await openDatabase({ databaseUrl: url, dataDir: 'memory://' });
  try {
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: 0, maxRows: 1e12 });
    await indexes.get(idOf('tenant', 1, 0)); // the code and caches of a first build
    gc();
    const before = process.memoryUsage().heapUsed;
    const rows0 = indexes.stats().rows;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    for (let t = 2; t <= count + 1; t++) await indexes.get(idOf('tenant', t, 0));
    const wallMs = performance.now() - wall0;
    const cpu = process.cpuUsage(cpu0);
    gc();
    const rows = indexes.stats().rows - rows0;
    return {
      tenants: count,
      rows,
      bytesPerRow: Math.round((process.memoryUsage().heapUsed - before) / rows),
      // One build at a time, nothing else running: a build's own cost (PostgreSQL's not counted).
      buildCpuMs: Math.round(((cpu.user + cpu.system) / 1000 / count) * 100) / 100,
      buildWallMs: Math.round((wallMs / count) * 100) / 100,
    };
  } finally {
    await db.close();
  }
}

function append(to: number[], from: readonly number[]): void {
  for (const x of from) to.push(x);
}

class Client {
  private readonly child: ChildProcess;
  private pending?: (r: PhaseReport) => void;
  readonly ready: Promise<void>;
  constructor(config: ClientConfig) {
    this.child = fork(resolve(import.meta.dirname, 'many-tenants-client.ts'), [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.ready = new Promise((ok) => {
      this.child.on('message', (m: PhaseReport | { type: 'ready' }) => {
        if (m.type === 'ready') ok();
        else this.pending?.(m);
      });
    });
  }
  run(p: Phase): Promise<PhaseReport> {
    return new Promise((ok) => {
      this.pending = ok;
      this.child.send(p);
    });
  }
  stop(): void {
    this.child.kill();
  }
}

async function main() {
  if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL (an admin URL: a scratch database is created and dropped)');
  const loadAtStart = loadAverageNow();
  const shape = shapeOf(ENTITIES);
  const rowsPerTenant = rowsOf(shape);
  const maxRows = Math.round(TENANTS * CACHE * rowsPerTenant);
  const capacity = Math.floor(maxRows / rowsPerTenant);
  console.log(`${TENANTS} tenants of ${rowsPerTenant} rows; SERVICE_INDEX_MAX_ROWS=${maxRows} (${capacity} tenants)`);
  const scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_bench_tenants');
  const dbName = new URL(scratch.url).pathname.slice(1);
  let cp: RunningProcess | undefined;
  let client: Client | undefined;
  const stat = new pg.Client({ connectionString: scratch.url });
  try {
    cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, SERVICE_LOG_LEVEL: 'info',
      SERVICE_INDEX_MAX_ROWS: String(maxRows), SERVICE_CONSOLE: 'false',
      ...(MAX_BUILDS ? { SERVICE_INDEX_MAX_BUILDS: MAX_BUILDS } : {}),
    }, { built: BUILT, nodeArgs: TRACE_GC ? ['--trace-gc'] : [] });
    const url = cp.url;
    const pid = cp.child.pid;
    await stat.connect();

    const s0 = Date.now();
    await seedTenants(scratch.url, TENANTS, shape, {
      progress: (n) => process.stdout.write(`\rseeded ${n}/${TENANTS} tenants in ${((Date.now() - s0) / 1000).toFixed(0)} s`),
    });
    const seedSec = (Date.now() - s0) / 1000;
    const dbBytes = Number((await stat.query('select pg_database_size($1) as b', [dbName])).rows[0].b);
    console.log(`\nseeded ${TENANTS} tenants × ${rowsPerTenant} rows (${TENANTS * rowsPerTenant} rows, ${MiB(dbBytes)} MiB) in ${seedSec.toFixed(1)} s`);

    const heap = await heapPerRow(scratch.url, Math.min(200, TENANTS - 1));
    if (heap) console.log(`an index holds ${heap.bytesPerRow} bytes of heap a row (${heap.tenants} tenants, ${heap.rows} rows, in this process); a build, one at a time: ${heap.buildCpuMs} ms CPU, ${heap.buildWallMs} ms`);

    client = new Client({ url, key: KEY, tenants: TENANTS, shape, capacity });
    await client.ready;
    await sleep(2000);
    const idle = await metrics(url);
    console.log(`idle control plane: RSS ${MiB(idle.rss)} MiB, heap ${MiB(idle.heapUsed)} MiB`);

    // 1. Cold tenants, one call at a time: tenants at the tail of the Zipf ranks (no other phase
    // asks them first).
    const pgStat = async () => {
      // An idle backend publishes its counters up to 10 s late (PGSTAT_IDLE_INTERVAL).
      await sleep(11_000);
      const r = (await stat.query('select xact_commit + xact_rollback as x, tup_returned as t from pg_stat_database where datname = $1', [dbName])).rows[0];
      return { xacts: Number(r.x), tuples: Number(r.t) };
    };
    const coldList = Array.from({ length: COLD }, (_, i) => tenantOfRank(TENANTS - 1 - i, TENANTS));
    const serial = async (label: string) => {
      const stats = await pgStat();
      const before = { cp: threadCpuMs(pid)!, pg: postgresCpuMs(), ...stats };
      const r = await client!.run({ type: 'serial', list: coldList, label });
      // CPU read at once, the counters after their delay.
      const cpuAfter = { cp: threadCpuMs(pid)!, pg: postgresCpuMs() };
      const after = { ...cpuAfter, ...(await pgStat()) };
      // The stat reads themselves are transactions too (two a measurement).
      const per = (x: number) => f2(x / COLD);
      return {
        ...summary(r.samples[label]),
        controlPlaneCpuMsPerCall: per(after.cp - before.cp),
        postgresCpuMsPerCall: per(after.pg - before.pg),
        postgresTransactionsPerCall: per(after.xacts - before.xacts - 2),
        postgresTuplesReadPerCall: per(after.tuples - before.tuples),
        errors: r.errors,
      };
    };
    const cold = { first: await serial('first'), again: await serial('again') };
    console.log(`cold tenant, first call: p50 ${cold.first.p50Ms} ms, p99 ${cold.first.p99Ms} ms, control plane ${cold.first.controlPlaneCpuMsPerCall} ms CPU, PostgreSQL ${cold.first.postgresCpuMsPerCall} ms CPU, ${cold.first.postgresTransactionsPerCall} transactions, ${cold.first.postgresTuplesReadPerCall} tuples`);
    console.log(`same tenants again:      p50 ${cold.again.p50Ms} ms, p99 ${cold.again.p99Ms} ms, control plane ${cold.again.controlPlaneCpuMsPerCall} ms CPU, ${cold.again.postgresTransactionsPerCall} transactions`);

    // 2. Zipf over every tenant, the cache churning.
    const m0 = await metrics(url);
    const cpu0 = threadCpuMs(pid)!;
    const { value: z, samples } = await sampled(url, client.run({ type: 'zipf', s: ZIPF, seconds: SECONDS, concurrency: CONCURRENCY, seed: 7 }));
    const cpu1 = threadCpuMs(pid)!;
    const m1 = await metrics(url);
    const builds = m1.indexes + m1.evictions - (m0.indexes + m0.evictions);
    const predicted = (z.samples.cold?.length ?? 0) + (z.samples.evicted?.length ?? 0);
    const maxOf = (k: keyof Metrics) => Math.max(...samples.map((s) => s[k] as number));
    const zipf = {
      s: ZIPF,
      concurrency: CONCURRENCY,
      seconds: f2(z.seconds),
      callsPerSec: Math.round(z.calls / z.seconds),
      allowedShare: f2(z.allowed / Math.max(1, z.calls)),
      hit: summary(z.samples.hit),
      evicted: summary(z.samples.evicted),
      cold: summary(z.samples.cold),
      joined: summary(z.samples.joined),
      hitShare: f2((z.samples.hit?.length ?? 0) / Math.max(1, z.calls)),
      buildsCounted: builds,
      buildsPredicted: predicted,
      controlPlaneCpuMsPerCall: f2((cpu1 - cpu0) / Math.max(1, z.calls)),
      rssMiB: { idle: MiB(idle.rss), max: MiB(maxOf('rss')), end: MiB(m1.rss) },
      heapUsedMiB: { idle: MiB(idle.heapUsed), max: MiB(maxOf('heapUsed')), end: MiB(m1.heapUsed) },
      rowsHeldMax: maxOf('rows'),
      indexesHeldMax: maxOf('indexes'),
      eventLoopLagMaxMs: f2(maxOf('lagMaxMs')),
      eventLoopLagP99MsMedian: pct(samples.map((s) => s.lagP99Ms), 0.5),
      poolPendingMax: maxOf('poolPending'),
      timeline: samples.map((s) => ({ at: f2(s.at), rssMiB: MiB(s.rss), heapMiB: MiB(s.heapUsed), indexes: s.indexes, rows: s.rows, evictions: s.evictions, lagMaxMs: f2(s.lagMaxMs) })),
      errors: z.errors,
    };
    const heldHeapPerRow = (m1.heapUsed - idle.heapUsed) / Math.max(1, m1.rows);
    const rssPerRow = (maxOf('rss') - idle.rss) / Math.max(1, maxRows);
    console.log(`zipf s=${ZIPF}, ${CONCURRENCY} in flight, ${zipf.seconds} s: ${zipf.callsPerSec} calls/s, ${zipf.hitShare} cached, builds ${builds} (predicted ${predicted}), ${zipf.controlPlaneCpuMsPerCall} ms CPU a call`);
    console.log(`  cached: p50 ${zipf.hit.p50Ms} ms p99 ${zipf.hit.p99Ms} ms; evicted (rebuilt): p50 ${zipf.evicted.p50Ms} p99 ${zipf.evicted.p99Ms}; cold: p50 ${zipf.cold.p50Ms} p99 ${zipf.cold.p99Ms}; joined a build under way: ${zipf.joined.calls} calls, p50 ${zipf.joined.p50Ms} p99 ${zipf.joined.p99Ms}`);
    console.log(`  RSS idle ${zipf.rssMiB.idle} MiB, max ${zipf.rssMiB.max} MiB; rows held max ${zipf.rowsHeldMax} of ${maxRows}; heap ${f2(heldHeapPerRow)} B/row held, RSS ${f2(rssPerRow)} B/row of budget; event-loop delay max ${zipf.eventLoopLagMaxMs} ms`);
    if (z.errors.length) console.log('  errors:', z.errors);

    // 3. Head of line: hot calls alone, then with builds around them, interleaved.
    const hot = Array.from({ length: HOT }, (_, r) => tenantOfRank(r, TENANTS));
    const hotSet = new Set(hot);
    // Builds use every tenant but the hot ones, from the middle ranks on and round again: a
    // round longer than the cache holds, so each is a build (cold, or evicted since).
    let coldAt = Math.floor(TENANTS / 3);
    const coldPool = () => {
      const out: number[] = [];
      for (let i = 0; out.length < 20_000 && i < 2 * TENANTS; i++) {
        const t = tenantOfRank(HOT + (coldAt++ % (TENANTS - HOT)), TENANTS);
        if (!hotSet.has(t)) out.push(t);
      }
      return out;
    };
    const hol: { alone: number[]; withBuilds: number[]; builds: number; buildMs: number[]; lagAlone: number[]; lagWith: number[]; cpuAlone: number; cpuWith: number; callsAlone: number; callsWith: number } = { alone: [], withBuilds: [], builds: 0, buildMs: [], lagAlone: [], lagWith: [], cpuAlone: 0, cpuWith: 0, callsAlone: 0, callsWith: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      for (const withBuilds of [false, true]) {
        const list = withBuilds ? coldPool() : [];
        const c0 = threadCpuMs(pid)!;
        const { value: r, samples: s } = await sampled(url, client.run({ type: 'mixed', hot, cold: list, hotConcurrency: HOT_CONCURRENCY, coldConcurrency: withBuilds ? COLD_CONCURRENCY : 0, seconds: ROUND_SECONDS, seed: 100 + round }));
        const cpu = threadCpuMs(pid)! - c0;
        // Tenants handed out but not used go back (they are still uncached).
        if (withBuilds) coldAt -= list.length - (r.coldUsed ?? 0);
        // Appended one by one: a quiet machine makes more samples than a spread's arguments may be.
        append(withBuilds ? hol.withBuilds : hol.alone, r.samples.hot ?? []);
        append(withBuilds ? hol.lagWith : hol.lagAlone, s.map((x) => x.lagMaxMs));
        if (withBuilds) {
          hol.builds += r.samples.build?.length ?? 0;
          append(hol.buildMs, r.samples.build ?? []);
          hol.cpuWith += cpu;
          hol.callsWith += r.calls;
        } else {
          hol.cpuAlone += cpu;
          hol.callsAlone += r.calls;
        }
        if (r.errors.length) console.log('  errors:', r.errors);
      }
    }
    const headOfLine = {
      hotTenants: HOT,
      hotConcurrency: HOT_CONCURRENCY,
      coldConcurrency: COLD_CONCURRENCY,
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      hotAlone: summary(hol.alone),
      hotWithBuilds: summary(hol.withBuilds),
      builds: summary(hol.buildMs),
      buildsPerSec: f2(hol.builds / (ROUNDS * ROUND_SECONDS)),
      p99Ratio: f2((pct(hol.withBuilds, 0.99) ?? 0) / (pct(hol.alone, 0.99) ?? 1)),
      eventLoopLagMaxMs: { alone: f2(Math.max(...hol.lagAlone)), withBuilds: f2(Math.max(...hol.lagWith)) },
      controlPlaneCpuMsPerCall: { alone: f2(hol.cpuAlone / Math.max(1, hol.callsAlone)), withBuilds: f2(hol.cpuWith / Math.max(1, hol.callsWith)) },
    };
    console.log(`head of line: hot calls alone p50 ${headOfLine.hotAlone.p50Ms} ms p99 ${headOfLine.hotAlone.p99Ms} ms max ${headOfLine.hotAlone.maxMs}; with ${COLD_CONCURRENCY} builds in flight (${headOfLine.buildsPerSec}/s, each p50 ${headOfLine.builds.p50Ms} ms p99 ${headOfLine.builds.p99Ms} ms): p50 ${headOfLine.hotWithBuilds.p50Ms} p99 ${headOfLine.hotWithBuilds.p99Ms} max ${headOfLine.hotWithBuilds.maxMs}; event-loop delay max ${headOfLine.eventLoopLagMaxMs.alone} / ${headOfLine.eventLoopLagMaxMs.withBuilds} ms`);

    // V8's lines: "… Mark-Compact 1000.1 (1100.2) -> 600.3 (700.1) MB, pooled: 0 MB, 150.2 / 0.0 ms …".
    const gcPauses: Record<string, { count: number; maxMs: number; totalMs: number }> = {};
    for (const line of cp.output) {
      const m = /: (Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Sweep)[^,]*,.*?([\d.]+) \/ [\d.]+ ms/.exec(line);
      if (!m) continue;
      const g = (gcPauses[m[1]] ??= { count: 0, maxMs: 0, totalMs: 0 });
      g.count++;
      g.maxMs = Math.max(g.maxMs, Number(m[2]));
      g.totalMs = f2(g.totalMs + Number(m[2]));
    }
    if (TRACE_GC) console.log('GC pauses of the control plane:', gcPauses);

    const results = {
      tenants: TENANTS,
      rowsPerTenant,
      rows: TENANTS * rowsPerTenant,
      indexMaxRows: maxRows,
      cacheTenants: capacity,
      maxBuilds: MAX_BUILDS ? Number(MAX_BUILDS) : null,
      seed: { seconds: f2(seedSec), databaseMiB: MiB(dbBytes), rowsPerSec: Math.round((TENANTS * rowsPerTenant) / seedSec) },
      memory: { indexHeapBytesPerRow: heap?.bytesPerRow ?? null, idleRssMiB: MiB(idle.rss), controlPlaneHeapBytesPerRowHeld: Math.round(heldHeapPerRow), controlPlaneRssBytesPerRowOfBudget: Math.round(rssPerRow) },
      buildInProcess: heap ? { cpuMs: heap.buildCpuMs, wallMs: heap.buildWallMs } : null,
      cold,
      zipf,
      headOfLine,
      gcPauses: TRACE_GC ? gcPauses : null,
    };
    const command = `DATABASE_URL=… npm run bench:many-tenants -- ${process.argv.slice(2).join(' ')}`.trimEnd();
    console.log(`wrote ${writeResults(OUT, { command, results, loadAtStart })}`);
  } finally {
    client?.stop();
    await cp?.stop();
    await stat.end().catch(() => undefined);
    await scratch.drop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
