/**
 * Snapshot scale, part of `npm run bench:sidecar`: the sidecar (from `dist/`, as containers run
 * it) loads a tenant of `--resources` resources, `--grants` ownership grants and `--subjects`
 * subjects (defaults: 1,000,000 / 1,000,000 / 100,000, ids as long as the control plane's) from
 * a scripted Watch endpoint in this process that sends chunks encoded beforehand (so the figure
 * is the sidecar's; the control plane's own snapshot speed is measured by
 * bench/watch-snapshot.ts). Reported:
 * time from spawn to ready, resident memory once ready (and of a sidecar holding a ten-row tenant,
 * the baseline), bytes per entity above that baseline, and that ownership decisions answer.
 * Targets: ready ≤ 10 s, resident memory ≤ 1 GiB. Results go to bench/results/snapshot-scale.json.
 *
 * The sidecar runs with `SIDECAR_WATCH_THREAD=on` (the stream received on a worker thread, what
 * `auto` picks with two CPUs), and then, side by side, `off` (the default, and what `auto` picks
 * on one CPU); the ratio of the two is printed and saved. `--watch-thread on|off|auto` runs that
 * mode alone.
 *
 * `--format entities` sends each row as a JSON Entity (what a client that does not ask for row
 * blocks gets) instead of in row blocks.
 *
 * `--entry` loads another build's `dist/cmd/sidecar/main.js` instead (e.g. the code before a change, for
 * alternating runs); its result is printed, not saved.
 *
 * Usage: npm run build && tsx bench/snapshot-scale.ts [-- --resources 1000000 --grants 1000000 --subjects 100000 --entry /path/dist/cmd/sidecar/main.js --watch-thread on]
 */
import { resolve } from 'node:path';
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import { WatchResponseSchema } from '../gen/authz/v1/snapshot_service_pb.js';
import { ROOT_SCOPE, TENANT, id, snapshotMessages } from './scale-tenant.js';
import { cpuMs, rssOf, startProcess, waitFor200 } from '../test/processes.js';
import { loadAverageNow, writeResults } from './results-file.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 1_000_000);
const SUBJECTS = Number(args.get('subjects') ?? 100_000);
const ENTRY = args.get('entry') ? resolve(args.get('entry') as string) : undefined;
/** How the scripted endpoint sends rows: row blocks (what the control plane sends a sidecar) or one JSON Entity each. */
const FORMAT = (args.get('format') ?? 'blocks') as 'blocks' | 'entities';
const MODES = args.get('watch-thread') ? [args.get('watch-thread') as string] : ['on', 'off'];

// BENCH_SIDECAR_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the loaded sidecar.
const NODE_ARGS = (process.env.BENCH_SIDECAR_NODE_ARGS ?? '').split(' ').filter(Boolean);
/**
 * The tenant's snapshot as gRPC frames, encoded before the sidecar starts, so that the time to
 * ready is the sidecar's (receiving, parsing, indexing), not this process's encoding.
 */
function encodedSnapshot(small: boolean): Buffer[] {
  const counts = small ? { subjects: 2, resources: 2, grants: 2 } : { subjects: SUBJECTS, resources: RESOURCES, grants: GRANTS };
  return snapshotMessages(counts, FORMAT).map(grpcFrame);
}

function grpcFrame(msg: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  frame.set(msg, 5);
  return frame;
}

/**
 * A Watch endpoint on a bare HTTP/2 server (gRPC framing by hand, no compression): the
 * pre-encoded snapshot as fast as the sidecar takes it, then a heartbeat every 500 ms.
 */
async function scriptedControlPlane(frames: Buffer[]): Promise<{ url: string; close(): Promise<void> }> {
  const server = http2.createServer();
  const heartbeat = grpcFrame(toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'heartbeat', value: { tenantId: TENANT, revision: 1n, resourceScopeGate: 'off' } } })));
  server.on('stream', (stream, headers) => {
    if (headers[':path'] !== '/authz.v1.SnapshotService/Watch') {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '12' }));
      stream.end();
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' });
    stream.on('error', () => undefined);
    void (async () => {
      for (const f of frames) {
        if (stream.destroyed) return;
        if (!stream.write(f)) await new Promise((r) => stream.once('drain', r));
      }
      const timer = setInterval(() => (stream.destroyed ? clearInterval(timer) : stream.write(heartbeat)), 500);
      stream.on('close', () => clearInterval(timer));
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      setTimeout(r, 500).unref();
    }),
  };
}

async function load(small: boolean, watchThread: string) {
  const cp = await scriptedControlPlane(encodedSnapshot(small));
  const started = Date.now();
  const sidecar = await startProcess('sidecar', {
    SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: 'azk_bench', SIDECAR_TENANT_ID: TENANT, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
    SIDECAR_WATCH_THREAD: watchThread,
  }, { built: true, nodeArgs: small ? [] : NODE_ARGS, entry: ENTRY });
  try {
    await waitFor200(`${sidecar.url}/readyz`, 300_000);
    const readyMs = Date.now() - started;
    const cpuMsAtReady = cpuMs(sidecar.child.pid);
    const rssAtReady = await rssOf(sidecar.url);
    await new Promise((r) => setTimeout(r, 3000));
    const rssSettled = await rssOf(sidecar.url);
    // An ownership grant decides (subject i owns resource i), another subject's does not.
    const n = small ? 1 : Math.floor(RESOURCES / 2);
    const ask = async (subject: number) => (await (await fetch(`${sidecar.url}/evaluate`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ actor: { subjectId: id('subject', subject % (small ? 2 : SUBJECTS)) }, scopeId: ROOT_SCOPE, action: 'edit', resource: { resourceId: id('resource', n) } }),
    })).json()) as { allowed: boolean; reason: string };
    const owner = await ask(n);
    const other = await ask(n + 1);
    if (!owner.allowed || owner.reason !== 'ownership' || other.allowed) throw new Error(`decisions wrong: ${JSON.stringify({ owner, other })}`);
    return { readyMs, cpuMsAtReady, rssAtReady, rssSettled };
  } finally {
    await sidecar.stop('SIGTERM');
    await cp.close();
  }
}

/** One mode: an empty sidecar's memory (the baseline), then the full tenant's load. */
async function measure(watchThread: string) {
  const baseline = await load(true, watchThread);
  const full = await load(false, watchThread);
  const entities = RESOURCES + GRANTS + SUBJECTS;
  const mib = (x: number) => (x / 1024 / 1024).toFixed(0);
  const result = {
    watchThread, readyMs: full.readyMs, cpuMsAtReady: full.cpuMsAtReady, rssBytes: full.rssSettled, rssAtReadyBytes: full.rssAtReady, baselineRssBytes: baseline.rssSettled,
    bytesPerEntity: Math.round((full.rssSettled - baseline.rssSettled) / entities),
  };
  console.log(`snapshot scale (SIDECAR_WATCH_THREAD=${watchThread}): ${RESOURCES} resources + ${GRANTS} grants + ${SUBJECTS} subjects: ready in ${full.readyMs} ms (target ≤ 10000; ${full.cpuMsAtReady?.toFixed(0)} ms of CPU by then), ` +
    `RSS ${mib(full.rssSettled)} MiB (at ready ${mib(full.rssAtReady)}; target ≤ 1024), baseline ${mib(baseline.rssSettled)} MiB, ${result.bytesPerEntity} bytes per entity above it`);
  return result;
}

async function main() {
  const loadAtStart = loadAverageNow();
  const runs = [];
  for (const mode of MODES) runs.push(await measure(mode));
  const [on, off] = runs;
  const ratio = off ? { readyOnOverOff: +(on.readyMs / off.readyMs).toFixed(2), rssOnOverOff: +(on.rssBytes / off.rssBytes).toFixed(2) } : undefined;
  if (ratio) console.log(`worker thread against main thread: ready ${ratio.readyOnOverOff}×, RSS ${ratio.rssOnOverOff}× (one run each, side by side)`);
  if (ENTRY) return;
  const command = ['npm run build && tsx bench/snapshot-scale.ts', ...process.argv.slice(2)].join(' ');
  const results = { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS, runs, ...ratio };
  console.log(`wrote ${writeResults('snapshot-scale', { command, results, loadAtStart })}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
