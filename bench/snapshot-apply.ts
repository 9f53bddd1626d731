/**
 * The sidecar's snapshot path in one process, without a transport: the chunks of
 * bench/snapshot-scale.ts's tenant, encoded beforehand, handed to a Follower as the gRPC
 * transport would (decoded with protobuf-es, then `receive`). Prints CPU and wall time, heap and
 * RSS once built; for profiling one part of the load (`node --cpu-prof --import tsx`).
 *
 * `--format entities` encodes each row as a JSON Entity instead of in row blocks (what the control plane
 * sends a client that does not ask for them).
 *
 * `--heap-summary N`: once built, a heap snapshot summed by kind of object (heap-summary.ts), the
 * N largest kinds with their bytes per entity (use a reduced tenant: the snapshot is large).
 *
 * Usage: node --expose-gc --import tsx bench/snapshot-apply.ts [--resources 1000000 --grants 1000000 --subjects 100000] [--format blocks|entities] [--profile out.cpuprofile] [--heap-summary 25]
 */
import { fromBinary } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { WatchResponseSchema } from '../gen/authz/v1/snapshot_service_pb.js';
import { TENANT, snapshotMessages } from './scale-tenant.js';
import { Follower } from '../sidecar/follower.js';
import { sidecarMetrics } from '../sidecar/metrics.js';
import { RAW_SNAPSHOT_SERVICE, decodeWatchResponse } from '../sidecar/snapshot-wire.js';
import { heapByKind } from './heap-summary.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 1_000_000);
const SUBJECTS = Number(args.get('subjects') ?? 100_000);
async function main() {
  const chunks = snapshotMessages({ subjects: SUBJECTS, resources: RESOURCES, grants: GRANTS }, (args.get('format') ?? 'blocks') as 'blocks' | 'entities');
  const metrics = sidecarMetrics(new Registry(), () => undefined);
  const follower = new Follower({ controlPlaneUrl: 'http://127.0.0.1:1', apiKey: 'k', tenantId: TENANT, maxStalenessMs: 30_000, logger: pino({ level: 'silent' }), metrics });
  const receive = (follower as unknown as { receive(m: unknown): void }).receive.bind(follower);
  global.gc?.();
  const profile = args.get('profile');
  const session = profile ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const heap0 = process.memoryUsage();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const c of chunks) {
    // Each chunk a fresh copy, as the transport gives it.
    receive(decodeWatchResponse(fromBinary(RAW_SNAPSHOT_SERVICE.method.watch.output, c.slice())));
    await new Promise((r) => setImmediate(r));
  }
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (session) writeFileSync(profile as string, JSON.stringify((await session.post('Profiler.stop')).profile));
  if (follower.revision !== 1) throw new Error('not loaded');
  chunks.length = 0;
  global.gc?.();
  const m = process.memoryUsage();
  const mib = (x: number) => (x / 1048576).toFixed(0);
  console.log(`apply: ${wall.toFixed(0)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU; heap ${mib(m.heapUsed - heap0.heapUsed)} MiB + external ${mib(m.external + m.arrayBuffers - heap0.external - heap0.arrayBuffers)} MiB, RSS ${mib(m.rss)} MiB`);
  const top = Number(args.get('heap-summary') ?? 0);
  if (top > 0) {
    const entities = RESOURCES + GRANTS + SUBJECTS;
    const kinds = await heapByKind();
    const total = kinds.reduce((n, k) => n + k.bytes, 0);
    console.log(`heap snapshot: ${mib(total)} MiB in all, ${(total / entities).toFixed(0)} bytes per entity; by kind (count, MiB, bytes per entity):`);
    for (const k of kinds.slice(0, top)) console.log(`  ${k.kind.padEnd(60)} ${String(k.count).padStart(9)} ${mib(k.bytes).padStart(6)} ${(k.bytes / entities).toFixed(1).padStart(7)}`);
    // Typed arrays' and Buffers' bytes are outside the heap: the snapshot counts only their headers.
    console.log(`  (outside the heap: ArrayBuffers ${mib(m.arrayBuffers)} MiB, ${(m.arrayBuffers / entities).toFixed(1)} bytes per entity)`);
  }
}

void main();
