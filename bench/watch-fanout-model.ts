/**
 * Many sidecars across many tenants, served by several control-plane replicas: what cannot run on
 * one machine, modelled with the costs `watch-fanout-processes.ts` measured (its results file) and
 * a simulation of one replica's event loop.
 *
 * Tenants: `--tenants` of Zipf-distributed sizes (exponent `--zipf`) summing to `--sidecars`, a
 * sidecar per pod; writes: `--writes-per-sec` in all, each tenant's share growing with the square
 * root of its size, at most `--max-tenant-rate` per tenant. Sidecars connect through a Service
 * that balances connections, so each of R replicas holds about 1/R of every tenant's streams.
 *
 * Per replica, from the measured costs: each commit of a tenant with n streams here costs
 * `fixed + perStream × n` of CPU (fitted on the 100 / 400 / 1,000-stream runs), each stream
 * `idle` per second (heartbeats, key checks) at the measured heartbeat interval, scaled to
 * `--heartbeat-ms`; RSS grows by the measured bytes per stream. PostgreSQL: every replica holds
 * one LISTEN connection (every commit costs each of them the measured CPU) and its pool; a commit
 * is read from the change log once by each replica that holds a stream of its tenant.
 *
 * The fan-out runs on a replica's event loop, one thread (its socket writes and their kernel time
 * too): more cores per replica do not raise it. The replicas needed are the fewest that keep that
 * thread under `--utilization` and meet `--target-p99-ms`, from a simulation of one replica's
 * event loop for `--seconds`: Poisson commits of every tenant, each a job of its fan-out CPU,
 * served one at a time by the thread, slowed by the replica's background work (heartbeats); the
 * time from a commit to its last stream here written, p50 / p99 / max, for all commits and for
 * the largest tenant's (client and network time not included).
 *
 * Usage: tsx bench/watch-fanout-model.ts [--sidecars 100000 --tenants 2000 --zipf 1
 *   --writes-per-sec 300 --max-tenant-rate 20 --utilization 0.6 --target-p99-ms 100
 *   --heartbeat-ms 1000 --seconds 120 --results watch-fanout-processes]
 */
import { readResults } from './results-file.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const num = (name: string, fallback: number) => Number(args.get(name) ?? fallback);
const SIDECARS = num('sidecars', 100_000);
const TENANTS = num('tenants', 2_000);
const ZIPF = num('zipf', 1);
const WRITES_PER_SEC = num('writes-per-sec', 300);
const MAX_TENANT_RATE = num('max-tenant-rate', 20);
const UTILIZATION = num('utilization', 0.6);
const TARGET_P99_MS = num('target-p99-ms', 100);
const HEARTBEAT_MS = num('heartbeat-ms', 1_000);
const SECONDS = num('seconds', 120);
const POOL_CONNECTIONS = 10;

interface Phase {
  streams: number;
  controlPlaneRssMiB: number;
  idle: { perStreamUsPerSec: number };
  serial: { controlPlaneCpuMsPerWrite: number; writeAloneCpuMs: number };
}
const measured = readResults(args.get('results') ?? 'watch-fanout-processes');
const results = measured.results as { phases: Phase[]; database: { logReadUs: number; listenerUsPerWrite: number } };
const phases = results.phases.filter((p) => p.streams > 0).sort((a, b) => a.streams - b.streams);

// Fan-out CPU of one commit against the streams here: least squares over the measured phases.
const xs = phases.map((p) => p.streams);
const ys = phases.map((p) => (p.serial.controlPlaneCpuMsPerWrite - p.serial.writeAloneCpuMs) * 1000);
const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
const my = ys.reduce((a, b) => a + b, 0) / ys.length;
const perStreamUs = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
const fixedUs = Math.max(0, my - perStreamUs * mx);
const largest = phases[phases.length - 1];
// The measured runs used the default heartbeat (1 s); heartbeats are most of the idle cost.
const idleUsPerStreamPerSec = (largest.idle.perStreamUsPerSec * 1_000) / HEARTBEAT_MS;
const rssPerStreamKiB = phases.length > 1 ? ((largest.controlPlaneRssMiB - phases[0].controlPlaneRssMiB) * 1024) / (largest.streams - phases[0].streams) : 40;
const baseRssMiB = phases[0].controlPlaneRssMiB - (phases[0].streams * rssPerStreamKiB) / 1024;

// Tenants, largest first, and their commit rates.
const weights = Array.from({ length: TENANTS }, (_, i) => 1 / (i + 1) ** ZIPF);
const wsum = weights.reduce((a, b) => a + b, 0);
const sizes = weights.map((w) => Math.max(1, Math.round((w / wsum) * SIDECARS)));
const roots = sizes.map(Math.sqrt);
const rsum = roots.reduce((a, b) => a + b, 0);
const rates = roots.map((r) => Math.min(MAX_TENANT_RATE, (r / rsum) * WRITES_PER_SEC));
const totalRate = rates.reduce((a, b) => a + b, 0);
const streamWritesPerSec = sizes.reduce((a, s, i) => a + s * rates[i], 0);

/** What R replicas cost, each holding 1/R of every tenant's streams. */
function replicaLoad(replicas: number) {
  let fanoutUsPerSec = 0;
  let logReadsPerSec = 0;
  for (let t = 0; t < TENANTS; t++) {
    const here = sizes[t] / replicas;
    // Chance a replica holds at least one of the tenant's streams (connections land at random).
    const holds = 1 - (1 - 1 / replicas) ** sizes[t];
    fanoutUsPerSec += rates[t] * (holds * fixedUs + perStreamUs * here);
    logReadsPerSec += rates[t] * holds * replicas;
  }
  const idleUsPerSec = (SIDECARS / replicas) * idleUsPerStreamPerSec;
  const cpu = (fanoutUsPerSec + idleUsPerSec) / 1e6;
  return { cpu, fanout: fanoutUsPerSec / 1e6, idle: idleUsPerSec / 1e6, logReadsPerSec };
}

let replicas = 1;
let load = replicaLoad(replicas);
let sim = simulate(replicas, load);
for (; replicas < 10_000; replicas++) {
  load = replicaLoad(replicas);
  if (load.cpu > UTILIZATION) continue;
  sim = simulate(replicas, load);
  if (sim.all[1] <= TARGET_P99_MS && sim.top[1] <= TARGET_P99_MS) break;
}
const streamsPerReplica = SIDECARS / replicas;
const pgListenCpu = (totalRate * replicas * results.database.listenerUsPerWrite) / 1e6;
const pgReadCpu = (load.logReadsPerSec * results.database.logReadUs) / 1e6;

/** A small seeded generator, so that runs agree. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One replica's event loop: commits of every tenant arrive at random (Poisson), each is one
 * job of its fan-out CPU on this replica, served in arrival order by one thread whose core is
 * shared with the replica's background work (heartbeats, the writes it serves itself).
 */
function simulate(replicas: number, load: ReturnType<typeof replicaLoad>, seed = 1) {
  const rnd = random(seed);
  const events: { at: number; tenant: number }[] = [];
  for (let t = 0; t < TENANTS; t++) {
    for (let at = 0; ; ) {
      at += -Math.log(1 - rnd()) / rates[t];
      if (at > SECONDS) break;
      events.push({ at, tenant: t });
    }
  }
  events.sort((a, b) => a.at - b.at);
  // The thread gets what the background leaves of one core.
  const speed = Math.max(0.05, 1 - load.idle);
  let free = 0;
  const all: number[] = [];
  const top: number[] = [];
  for (const e of events) {
    const here = sizes[e.tenant] / replicas;
    const holds = 1 - (1 - 1 / replicas) ** sizes[e.tenant];
    if (rnd() > holds) continue;
    const service = (fixedUs + perStreamUs * Math.max(1, Math.round(here))) / 1e6 / speed;
    const start = Math.max(free, e.at);
    free = start + service;
    const ms = (free - e.at) * 1000;
    all.push(ms);
    if (e.tenant === 0) top.push(ms);
  }
  const q = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))];
  };
  return { commits: all.length, all: [q(all, 0.5), q(all, 0.99), q(all, 1)], top: [q(top, 0.5), q(top, 0.99), q(top, 1)] };
}

const f = (x: number, d = 1) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`measured (${measured.commit?.slice(0, 7) ?? 'no commit'}, ${measured.date?.slice(0, 10)}): a commit's fan-out ${f(fixedUs, 0)} µs + ${f(perStreamUs)} µs per stream; ` +
  `idle ${f(idleUsPerStreamPerSec)} µs per stream per s at a ${HEARTBEAT_MS} ms heartbeat; RSS ${f(baseRssMiB, 0)} MiB + ${f(rssPerStreamKiB, 0)} KiB per stream; ` +
  `PostgreSQL ${f(results.database.logReadUs)} µs per log read, ${f(results.database.listenerUsPerWrite)} µs per LISTEN connection per commit`);
console.log(`${f(SIDECARS, 0)} sidecars in ${f(TENANTS, 0)} tenants (largest ${f(sizes[0], 0)}, 10th ${f(sizes[9], 0)}, 100th ${f(sizes[99], 0)}, median ${f(sizes[Math.floor(TENANTS / 2)], 0)}); ` +
  `${f(totalRate)} commits/s (largest tenant ${f(rates[0])}/s): ${f(streamWritesPerSec, 0)} stream-writes/s`);
console.log(`replicas, each event loop at most ${UTILIZATION * 100}% busy and p99 ≤ ${TARGET_P99_MS} ms: ${replicas}, each ${f(streamsPerReplica, 0)} streams, ` +
  `its event loop ${f(load.cpu * 100, 0)}% busy (fan-out ${f(load.fanout * 100, 0)}%, heartbeats ${f(load.idle * 100, 0)}%), RSS ≈ ${f(baseRssMiB + (streamsPerReplica * rssPerStreamKiB) / 1024, 0)} MiB`);
console.log(`PostgreSQL: ${replicas * (POOL_CONNECTIONS + 1)} connections at most (${replicas} LISTEN), ${f(load.logReadsPerSec / totalRate, 1)} change-log reads per commit ` +
  `(${f(load.logReadsPerSec, 0)}/s, ${f(pgReadCpu, 2)} cores), notifications ${f(totalRate * replicas, 0)}/s delivered (${f(pgListenCpu, 2)} cores)`);
console.log(`one replica simulated for ${SECONDS} s (${f(sim.commits, 0)} commits with streams here): commit → its last stream here written ` +
  `p50 / p99 / max ${sim.all.map((x) => f(x, 1)).join(' / ')} ms; the largest tenant's ${sim.top.map((x) => f(x, 1)).join(' / ')} ms`);
