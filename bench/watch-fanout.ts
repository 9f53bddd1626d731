/**
 * Many Watch streams of one tenant on one control plane (a sidecar per pod of a deployment): a
 * control plane in this process on a scratch PostgreSQL database, `--streams` Watch clients of
 * one tenant over gRPC (in this process too), then `--writes` writes one after another, each
 * waited for until every stream has it. Reported: change-log reads made and shared, the time
 * from a write's answer to the last stream holding it (p50/p99), and CPU per write of this
 * process and of PostgreSQL.
 *
 * The clients accept nothing compressed, as sidecars by default, so the control plane serves them
 * on its lean Watch path; `--lean-watch off` leaves them to connect-node (the general path).
 *
 * Usage: DATABASE_URL=postgres://… tsx bench/watch-fanout.ts [--streams 100 --writes 300 --lean-watch on|off]
 */
import { setMaxListeners } from 'node:events';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { SnapshotService } from '../gen/authz/v1/snapshot_service_pb.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { postgresCpuMs } from '../test/processes.js';
import { populate, restClient } from '../test/watch-fixtures.js';
import { runAsDeployed } from './as-deployed.js';
import { loadAverageNow, writeResults } from './results-file.js';

const loadAtStart = loadAverageNow();
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const STREAMS = Number(args.get('streams') ?? 100);
const WRITES = Number(args.get('writes') ?? 300);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
const LEAN = args.get('lean-watch') ?? 'on';
if (LEAN !== 'on' && LEAN !== 'off') throw new Error('--lean-watch on|off');
const cp = await startTestControlPlane('postgres', { SERVICE_WATCH_HEARTBEAT_MS: '1000' }, { leanWatch: LEAN === 'on' });
const ac = new AbortController();
setMaxListeners(0, ac.signal);
try {
  const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
  const t = await populate(rest, 'fanout');
  const client = createClient(SnapshotService, createGrpcTransport({ baseUrl: cp.url, acceptCompression: [] }));
  const held = new Array<number>(STREAMS).fill(0);
  let waiting: (() => void) | undefined;
  let want = Number.POSITIVE_INFINITY;
  const check = () => {
    if (waiting && held.every((h) => h >= want)) waiting();
  };
  for (let s = 0; s < STREAMS; s++) {
    void (async () => {
      for await (const m of client.watch({ tenantId: t.tenantId }, { signal: ac.signal, headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
        if (m.event.case === 'snapshot' && m.event.value.last) held[s] = Number(m.event.value.revision);
        else if (m.event.case === 'changes') held[s] = Number(m.event.value.revision);
        else continue;
        check();
      }
    })().catch(() => undefined);
  }
  const reach = (revision: number) => new Promise<void>((resolve) => {
    want = revision;
    waiting = resolve;
    check();
  });
  const start = Number(((await cp.db.orm.em.fork().execute('select revision from tenants where id = ?', [t.tenantId])) as { revision: string }[])[0].revision);
  await reach(start);
  // `reads` is absent from a checkout without shared reads (a comparison run against an older commit).
  const reads0 = { db: cp.watch.reads?.databaseReads ?? NaN, shared: cp.watch.reads?.sharedReads ?? NaN };
  const cpu0 = { own: process.cpuUsage(), pg: postgresCpuMs() };
  const spread: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < WRITES; i++) {
    await rest('PATCH', `/resources/${t.resourceIds[i % t.resourceIds.length]}`, { attributes: { i } });
    const answered = performance.now();
    await reach(start + i + 1);
    spread.push(performance.now() - answered);
  }
  const wall = performance.now() - t0;
  const own = process.cpuUsage(cpu0.own);
  const pg = postgresCpuMs() - cpu0.pg;
  spread.sort((a, b) => a - b);
  const q = (p: number) => spread[Math.min(spread.length - 1, Math.floor(p * spread.length))].toFixed(2);
  console.log(`lean Watch ${LEAN}: ${STREAMS} streams, ${WRITES} writes in ${(wall / 1000).toFixed(1)} s: change-log reads ${(cp.watch.reads?.databaseReads ?? NaN) - reads0.db} from the database, ` +
    `${(cp.watch.reads?.sharedReads ?? NaN) - reads0.shared} shared; write answered → every stream holds it: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms; ` +
    `CPU per write: this process ${((own.user + own.system) / 1000 / WRITES).toFixed(2)} ms, PostgreSQL ${(pg / WRITES).toFixed(2)} ms`);
  const results = {
    streams: STREAMS, writes: WRITES, leanWatch: LEAN, wallSec: Number((wall / 1000).toFixed(1)),
    logReads: { database: (cp.watch.reads?.databaseReads ?? NaN) - reads0.db, shared: (cp.watch.reads?.sharedReads ?? NaN) - reads0.shared },
    writeToEveryStreamMs: { p50: Number(q(0.5)), p99: Number(q(0.99)) },
    cpuMsPerWrite: { thisProcess: Number(((own.user + own.system) / 1000 / WRITES).toFixed(2)), postgres: Number((pg / WRITES).toFixed(2)) },
  };
  const command = ['DATABASE_URL=… tsx bench/watch-fanout.ts', ...process.argv.slice(2)].join(' ');
  console.log(`wrote ${writeResults('watch-fanout', { command, results, loadAtStart })}`);
} finally {
  ac.abort();
  await cp.close();
}
