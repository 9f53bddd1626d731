/**
 * Many sidecars of one tenant on one control-plane replica, with every process apart: the control
 * plane as its own process on a scratch PostgreSQL database (DATABASE_URL, an admin URL), the
 * Watch clients spread over `--client-processes` children (watch-fanout-clients.ts, light raw
 * HTTP/2 clients, one connection per stream as separate sidecars have), so that the control
 * plane's CPU, read from /proc for its process alone, is its own.
 *
 * For each count of `--streams`: the clients open their streams and wait for the snapshot;
 * `--idle-sec` seconds with no write price the heartbeats and key checks; `--writes` writes one
 * after another, each waited for until every stream holds it (write answered → every stream holds
 * it, p50/p99), in blocks of 10 alternating with 10 writes to a tenant no stream follows, which
 * price a write itself under the same conditions: the control plane's CPU per write beyond that,
 * divided by the streams, is the fan-out's cost per stream and write. At the largest count, also
 * `--rate` writes per second for `--sustained-sec` seconds, sent on a clock whether or not the
 * last one has reached every stream. Streams dropped (ended by the server) are counted in every
 * phase; a dropped stream resumes from its revision, as a sidecar does.
 *
 * Targets: ≤ 20 µs of control-plane CPU per stream per write; at 1,000 streams and 10 writes/s,
 * p99 ≤ 100 ms and no stream dropped. Results: bench/results/watch-fanout-processes.json.
 *
 * Usage: DATABASE_URL=postgres://… npm run bench:watch-fanout [-- --streams 100,400,1000
 *   --writes 200 --client-processes 4 --per-connection 1 --rate 10 --sustained-sec 60
 *   --idle-sec 5 --built --cpu-prof DIR --control-plane DIR --out NAME]
 *
 * `--control-plane DIR` runs another checkout's control plane from its sources (a "before"), and
 * `--out NAME` writes bench/results/NAME.json instead. `--nice N` (e.g. -10, as root) runs the
 * control plane and the clients at that scheduling priority: on a machine shared with other work
 * the latencies are then those of the processes measured, as on nodes where they have their own
 * CPU; the CPU figures do not depend on it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import pg from 'pg';
import { resolve } from 'node:path';
import { createScratchDatabase } from '../test/databases.js';
import { cpuMs, postgresCpuMs, rssOf, startProcess, threadCpuMs, type RunningProcess } from '../test/processes.js';
import { populate, restClient } from '../test/watch-fixtures.js';
import { benchArgs } from './args.js';
import { loadAverageNow, writeResults } from './results-file.js';
import type { ClientConfig, ClientReport } from './watch-fanout-clients.js';

const args = benchArgs();
const STREAMS = (args.get('streams') ?? '100,400,1000').split(',').map(Number);
const WRITES = Number(args.get('writes') ?? 200);
const CLIENT_PROCESSES = Number(args.get('client-processes') ?? 4);
const PER_CONNECTION = Number(args.get('per-connection') ?? 1);
const RATE = Number(args.get('rate') ?? 10);
const SUSTAINED_SEC = Number(args.get('sustained-sec') ?? 60);
const IDLE_SEC = Number(args.get('idle-sec') ?? 5);
const BUILT = args.get('built') === 'true';
const CPU_PROF = args.get('cpu-prof');
const OTHER = args.get('control-plane');
const NICE = args.get('nice') === undefined ? undefined : Number(args.get('nice'));
const OUT = args.get('out') ?? 'watch-fanout-processes';
const KEY = 'azk_bench_watch_fanout_bootstrap_0123456789';

const f2 = (x: number) => Math.round(x * 100) / 100;
const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : f2(s[Math.min(s.length - 1, Math.floor(q * s.length))]);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

/** The client processes of one phase and what they reported. */
class Clients {
  readonly children: ChildProcess[] = [];
  private readonly ready: Promise<number[]>;
  /** Per revision: processes whose every stream holds it, and the last of their times. */
  private readonly held = new Map<number, { count: number; at: number }>();
  private readonly waiting = new Map<number, (at: number) => void>();
  dropped: { status: string; message: string }[] = [];
  private stats: ((r: Extract<ClientReport, { type: 'stats' }>) => void)[] = [];

  constructor(url: string, key: string, tenantId: string, streams: number) {
    const n = Math.min(CLIENT_PROCESSES, streams);
    const readies: Promise<number>[] = [];
    for (let i = 0; i < n; i++) {
      const share = Math.floor(streams / n) + (i < streams % n ? 1 : 0);
      const config: ClientConfig = { url, key, tenantId, streams: share, perConnection: PER_CONNECTION };
      const child = fork(resolve(import.meta.dirname, 'watch-fanout-clients.ts'), [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      this.children.push(child);
      if (NICE !== undefined) setPriority(child.pid!, NICE);
      readies.push(new Promise((ok) => child.on('message', (r: ClientReport) => {
        if (r.type === 'ready') ok(r.minHeld);
        else if (r.type === 'held') this.onHeld(r.revision, r.at);
        else if (r.type === 'dropped') this.dropped.push({ status: r.status, message: r.message });
        else if (r.type === 'stats') this.stats.shift()?.(r);
      })));
    }
    this.ready = Promise.all(readies);
  }

  whenReady(): Promise<number[]> {
    return this.ready;
  }

  private onHeld(revision: number, at: number): void {
    const h = this.held.get(revision) ?? { count: 0, at: 0 };
    h.count++;
    h.at = Math.max(h.at, at);
    this.held.set(revision, h);
    if (h.count === this.children.length) {
      this.held.delete(revision);
      const w = this.waiting.get(revision);
      this.waiting.delete(revision);
      if (w) w(h.at);
      else this.done.set(revision, h.at);
    }
  }

  /** Revisions every stream held before anyone asked. */
  private readonly done = new Map<number, number>();

  /** When every stream held `revision` (wall-clock ms). */
  heldAt(revision: number): Promise<number> {
    const at = this.done.get(revision);
    if (at !== undefined) {
      this.done.delete(revision);
      return Promise.resolve(at);
    }
    return new Promise((ok) => this.waiting.set(revision, ok));
  }

  cpuMs(): number {
    return this.children.reduce((sum, c) => sum + (cpuMs(c.pid) ?? 0), 0);
  }

  async received(): Promise<{ heartbeats: number; messages: number; bytes: number; open: number }> {
    const all = await Promise.all(this.children.map((c) => new Promise<Extract<ClientReport, { type: 'stats' }>>((ok) => {
      this.stats.push(ok);
      c.send({ type: 'stats' });
    })));
    return all.reduce((a, r) => ({ heartbeats: a.heartbeats + r.heartbeats, messages: a.messages + r.messages, bytes: a.bytes + r.bytes, open: a.open + r.open }), { heartbeats: 0, messages: 0, bytes: 0, open: 0 });
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => new Promise<void>((done) => {
      if (c.exitCode !== null) return done();
      c.once('exit', () => done());
      c.send({ type: 'stop' });
    })));
  }
}

/** User and system CPU ms of a process so far (/proc, clock ticks of 10 ms): how much of its cost is the kernel's. */
function userSystemMs(pid: number | undefined): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

/**
 * What a replica costs PostgreSQL, measured on the backends' own CPU (/proc): a change-log read of
 * one revision (a tenant's feed makes one per commit on each replica holding its streams), and a
 * LISTEN connection per write (each replica has one, and every commit notifies them all).
 */
async function databaseCosts(url: string, tenantId: string, write: () => Promise<unknown>): Promise<{ logReadUs: number; listenerUsPerWrite: number }> {
  const connect = async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const pid = Number((await c.query('select pg_backend_pid() as pid')).rows[0].pid);
    return { c, pid };
  };
  const reader = await connect();
  const head = Number((await reader.c.query('select revision from tenants where id = $1', [tenantId])).rows[0].revision);
  const read = () => reader.c.query('select * from change_log where tenant_id = $1 and revision > $2 order by revision, seq limit 2000', [tenantId, head - 1]);
  for (let k = 0; k < 100; k++) await read();
  const r0 = threadCpuMs(reader.pid)!;
  const READS = 2_000;
  for (let k = 0; k < READS; k++) await read();
  const logReadUs = ((threadCpuMs(reader.pid)! - r0) * 1000) / READS;
  await reader.c.end();
  const listeners = await Promise.all(Array.from({ length: 8 }, connect));
  for (const l of listeners) await l.c.query('listen authz_changes');
  await sleep(200);
  const l0 = listeners.reduce((a, l) => a + threadCpuMs(l.pid)!, 0);
  const WRITES = 300;
  for (let k = 0; k < WRITES; k++) await write();
  await sleep(200);
  const listenerUsPerWrite = ((listeners.reduce((a, l) => a + threadCpuMs(l.pid)!, 0) - l0) * 1000) / (listeners.length * WRITES);
  for (const l of listeners) await l.c.end();
  return { logReadUs: f2(logReadUs), listenerUsPerWrite: f2(listenerUsPerWrite) };
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? NaN);
}

async function logReads(url: string): Promise<{ database: number; shared: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const get = (source: string) => Number(new RegExp(`^authz_watch_log_reads_total\\{source="${source}"\\} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? NaN);
  return { database: get('database'), shared: get('shared') };
}

async function main() {
  if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL (an admin URL: a scratch database is created and dropped)');
  const loadAtStart = loadAverageNow();
  const scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_bench_fanout');
  let cp: RunningProcess | undefined;
  let clients: Clients | undefined;
  try {
    cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: KEY, SERVICE_LOG_LEVEL: 'info',
    }, {
      built: BUILT,
      nodeArgs: [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), ...(OTHER ? ['--import', 'tsx'] : [])],
      entry: OTHER ? resolve(OTHER, 'cmd/control-plane/main.ts') : undefined,
    });
    const url = cp.url;
    const pid = cp.child.pid;
    if (NICE !== undefined) {
      // Every thread of the control plane (libuv's pool and V8's helpers are threads of their own).
      for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), NICE);
    }
    const rest = restClient(url, KEY);
    const t = await populate(rest, 'fanout');
    // The sidecars of one app share one service key (one Kubernetes secret).
    const serviceKey = (await rest('POST', '/api-keys', { name: 'sidecars', kind: 'service', tenantId: t.tenantId })).secretKey as string;
    // A second tenant with no stream: its writes, interleaved with the watched tenant's, price a
    // write itself under the same conditions, so the difference is the fan-out's.
    const quiet = await populate(rest, 'quiet');
    let i = 0;
    const write = async (tenant = t): Promise<{ revision: number; sent: number; answered: number }> => {
      const sent = now();
      const res = await fetch(`${url}/resources/${tenant.resourceIds[i % tenant.resourceIds.length]}`, {
        method: 'PATCH', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: JSON.stringify({ attributes: { i: i++ } }),
      });
      await res.text();
      if (res.status !== 200) throw new Error(`write: ${res.status}`);
      return { revision: Number(res.headers.get('x-revision')), sent, answered: now() };
    };
    /** What the control plane, its kernel share, PostgreSQL and the clients have used so far. */
    const counters = (c?: Clients) => ({ cp: threadCpuMs(pid)!, ...userSystemMs(pid), pg: postgresCpuMs(), clients: c?.cpuMs() ?? 0 });
    type Counters = ReturnType<typeof counters>;
    const add = (sum: Counters, a: Counters, b: Counters) => {
      for (const k of Object.keys(sum) as (keyof Counters)[]) sum[k] += b[k] - a[k];
    };
    const zero = (): Counters => ({ cp: 0, user: 0, system: 0, pg: 0, clients: 0 });

    // Warm the write path up.
    for (let w = 0; w < 50; w++) await write(w % 2 === 0 ? t : quiet);
    let writeAloneMs = NaN;

    const phases = [];
    for (const streams of STREAMS) {
      clients = new Clients(url, serviceKey, t.tenantId, streams);
      const readyStart = now();
      await clients.whenReady();
      const readyMs = now() - readyStart;
      await sleep(1000);
      const open = await metric(url, 'authz_watch_streams');
      const rssMiB = (await rssOf(url)) / 2 ** 20;

      // Idle: heartbeats and key checks only.
      const idle0 = threadCpuMs(pid)!;
      const idleWall0 = now();
      await sleep(IDLE_SEC * 1000);
      const idleMsPerSec = (threadCpuMs(pid)! - idle0) / ((now() - idleWall0) / 1000);

      // One write at a time, each waited for on every stream (a few first to warm the path up), in
      // blocks of 10 alternating with 10 writes to the quiet tenant.
      for (let w = 0; w < 20; w++) await clients.heldAt((await write()).revision);
      const reads0 = await logReads(url);
      const drop0 = clients.dropped.length;
      const watched = zero();
      const alone = zero();
      const wall0 = now();
      const sinceAnswer: number[] = [];
      const sinceSent: number[] = [];
      for (let w = 0; w < WRITES; w += 10) {
        const a = counters(clients);
        for (let k = 0; k < 10; k++) {
          const r = await write();
          const at = await clients.heldAt(r.revision);
          sinceAnswer.push(at - r.answered);
          sinceSent.push(at - r.sent);
        }
        const b = counters(clients);
        add(watched, a, b);
        for (let k = 0; k < 10; k++) await write(quiet);
        add(alone, b, counters(clients));
      }
      const wallSec = (now() - wall0) / 1000;
      const writes = sinceAnswer.length;
      const cpuPerWrite = watched.cp / writes;
      writeAloneMs = alone.cp / writes;
      const systemShare = watched.system / Math.max(1, watched.user + watched.system);
      const pgPerWrite = watched.pg / writes;
      const clientsPerWrite = watched.clients / writes;
      const reads1 = await logReads(url);
      const perStreamUs = ((cpuPerWrite - writeAloneMs) * 1000) / streams;
      const serial = {
        writes, wallSec: f2(wallSec),
        writeAnsweredToEveryStreamMs: { p50: pct(sinceAnswer, 0.5), p99: pct(sinceAnswer, 0.99), max: pct(sinceAnswer, 1) },
        writeSentToEveryStreamMs: { p50: pct(sinceSent, 0.5), p99: pct(sinceSent, 0.99) },
        controlPlaneCpuMsPerWrite: f2(cpuPerWrite),
        writeAloneCpuMs: f2(writeAloneMs),
        controlPlaneCpuUsPerStreamPerWrite: f2(perStreamUs),
        controlPlaneSystemShare: f2(systemShare),
        postgresCpuMsPerWrite: f2(pgPerWrite),
        clientsCpuMsPerWrite: f2(clientsPerWrite),
        logReads: { database: reads1.database - reads0.database, shared: reads1.shared - reads0.shared },
        dropped: clients.dropped.length - drop0,
      };
      console.log(`${streams} streams (${open} open at the control plane, ready in ${(readyMs / 1000).toFixed(1)} s, RSS ${Math.round(rssMiB)} MiB): idle ${idleMsPerSec.toFixed(1)} ms CPU/s; ` +
        `${writes} writes one at a time: every stream holds it p50 ${serial.writeAnsweredToEveryStreamMs.p50} ms, p99 ${serial.writeAnsweredToEveryStreamMs.p99} ms; ` +
        `control plane ${serial.controlPlaneCpuMsPerWrite} ms CPU per write (${Math.round(systemShare * 100)}% in the kernel; a write alone ${serial.writeAloneCpuMs} ms), ${serial.controlPlaneCpuUsPerStreamPerWrite} µs per stream per write; ` +
        `clients ${serial.clientsCpuMsPerWrite} ms, PostgreSQL ${serial.postgresCpuMsPerWrite} ms; log reads ${serial.logReads.database} + ${serial.logReads.shared} shared; dropped ${serial.dropped}`);

      let sustained;
      if (streams === Math.max(...STREAMS) && SUSTAINED_SEC > 0) {
        const count = Math.round(RATE * SUSTAINED_SEC);
        const drop1 = clients.dropped.length;
        const s0 = threadCpuMs(pid)!;
        const sw0 = now();
        const lat: number[] = [];
        const latSent: number[] = [];
        const pending: Promise<void>[] = [];
        for (let w = 0; w < count; w++) {
          const due = sw0 + (w * 1000) / RATE;
          const wait = due - now();
          if (wait > 0) await sleep(wait);
          pending.push(write().then(async (r) => {
            const at = await clients!.heldAt(r.revision);
            lat.push(at - r.answered);
            latSent.push(at - r.sent);
          }));
        }
        await Promise.all(pending);
        const sWall = (now() - sw0) / 1000;
        const sCpu = threadCpuMs(pid)! - s0;
        const recv = await clients.received();
        sustained = {
          rate: RATE, seconds: SUSTAINED_SEC, writes: count, wallSec: f2(sWall),
          writeAnsweredToEveryStreamMs: { p50: pct(lat, 0.5), p99: pct(lat, 0.99), max: pct(lat, 1) },
          writeSentToEveryStreamMs: { p50: pct(latSent, 0.5), p99: pct(latSent, 0.99) },
          controlPlaneCpuShare: f2(sCpu / 1000 / sWall),
          controlPlaneCpuUsPerStreamPerWrite: f2(((sCpu / count - writeAloneMs) * 1000) / streams),
          dropped: clients.dropped.length - drop1,
          streamsOpenAtEnd: recv.open,
        };
        console.log(`${streams} streams, ${RATE} writes/s for ${SUSTAINED_SEC} s: every stream holds it p50 ${sustained.writeAnsweredToEveryStreamMs.p50} ms, ` +
          `p99 ${sustained.writeAnsweredToEveryStreamMs.p99} ms, max ${sustained.writeAnsweredToEveryStreamMs.max} ms; control plane ${(sustained.controlPlaneCpuShare * 100).toFixed(0)}% of a core, ` +
          `${sustained.controlPlaneCpuUsPerStreamPerWrite} µs per stream per write; dropped ${sustained.dropped}`);
      }
      const recv = await clients.received();
      phases.push({
        streams, clientProcesses: clients.children.length, streamsPerConnection: PER_CONNECTION, readySec: f2(readyMs / 1000), controlPlaneRssMiB: Math.round(rssMiB),
        idle: { seconds: IDLE_SEC, controlPlaneCpuMsPerSec: f2(idleMsPerSec), perStreamUsPerSec: f2((idleMsPerSec * 1000) / streams) },
        serial, sustained: sustained ?? null,
        received: recv,
        droppedReasons: [...new Set(clients.dropped.map((d) => `${d.status} ${d.message}`))].slice(0, 5),
      });
      await clients.stop();
      clients = undefined;
      // Wait for the control plane to see the streams end before the next phase.
      for (let w = 0; w < 100 && (await metric(url, 'authz_watch_streams')) > 0; w++) await sleep(100);
    }

    const database = await databaseCosts(scratch.url, t.tenantId, () => write(quiet));
    console.log(`PostgreSQL: ${database.logReadUs} µs of a backend's CPU per change-log read of one revision, ${database.listenerUsPerWrite} µs per LISTEN connection per write`);
    const results = { database, nice: NICE ?? null, controlPlane: OTHER ? `another checkout's sources (tsx)` : BUILT ? 'dist/' : 'sources (tsx)', phases };
    const command = ['DATABASE_URL=… npm run bench:watch-fanout', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
    if (!CPU_PROF) console.log(`wrote ${writeResults(OUT, { command, results, loadAtStart })}`);
  } finally {
    await clients?.stop();
    await cp?.stop('SIGTERM');
    await scratch.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
