/**
 * The control plane's side of a whole-tenant read, in process, without a transport: a tenant of
 * `--resources` resources, `--grants` ownership grants and `--subjects` subjects (defaults
 * 1,000,000 / 1,000,000 / 100,000, inserted with generate_series into a scratch database) is
 * read `--passes` times as a Watch snapshot with row blocks (each chunk serialized and
 * enveloped as connect-node does, so its Buffers count), then `--loads` times as the control
 * plane's own decision index (`TenantIndexes`, cold each time). Reported per pass: wall time,
 * CPU (all threads: V8's GC helpers included), bytes, and garbage collections (minor, major, and
 * main-thread GC time).
 *
 * Usage: DATABASE_URL=postgres://… tsx bench/snapshot-encode.ts [--passes 3 --loads 1 --resources 1000000 …]
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { create, toBinary } from '@bufbuild/protobuf';
import { WatchResponseSchema } from '../gen/authz/v1/snapshot_service_pb.js';
import { snapshotChunks } from '../services/control-plane/watch/snapshot.js';
import { DEFAULT_LIMITS } from '../services/control-plane/watch/stream.js';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import { startTestControlPlane } from '../test/harness.js';
import { insertBigTenant } from './big-tenant.js';
import { runAsDeployed } from './as-deployed.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 1_000_000);
const SUBJECTS = Number(args.get('subjects') ?? 100_000);
const PASSES = Number(args.get('passes') ?? 3);
const LOADS = Number(args.get('loads') ?? 1);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');

let gcs = { minor: 0, major: 0, ms: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    // node:perf_hooks constants: NODE_PERFORMANCE_GC_MINOR 1, _MAJOR 4 (a full mark-compact);
    // incremental marking steps (2) and weak callbacks (8) only add to the time.
    const kind = (e as unknown as { detail: { kind: number } }).detail.kind;
    if (kind === 1) gcs.minor++;
    else if (kind === 4) gcs.major++;
    gcs.ms += e.duration;
  }
}).observe({ entryTypes: ['gc'] });

/** Runs `work`, then prints its wall time, CPU and collections under `label`. */
async function measure(label: string, work: () => Promise<string>): Promise<void> {
  gcs = { minor: 0, major: 0, ms: 0 };
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const extra = await work();
  const c = process.cpuUsage(cpu);
  console.log(`${label}: wall ${(performance.now() - t0).toFixed(0)} ms, CPU ${((c.user + c.system) / 1000).toFixed(0)} ms${extra}, ` +
    `GC minor ${gcs.minor} major ${gcs.major} (${gcs.ms.toFixed(0)} ms on the main thread)`);
}

// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
const cp = await startTestControlPlane('postgres');
try {
  const { tenantId } = await insertBigTenant(cp, { resources: RESOURCES, grants: GRANTS, subjects: SUBJECTS });

  for (let pass = 1; pass <= PASSES; pass++) {
    await measure(`snapshot pass ${pass}`, async () => {
      let bytes = 0;
      let chunks = 0;
      const opts = { batchRows: DEFAULT_LIMITS.batchRows, chunkBytes: DEFAULT_LIMITS.chunkBytes, gate: 'off', rowBlocks: true };
      for await (const chunk of snapshotChunks(cp.db, tenantId, opts)) {
        // As connect-node sends it: the message serialized, then copied into its envelope.
        const bin = toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: chunk } }));
        const envelope = new Uint8Array(bin.length + 5);
        envelope.set(bin, 5);
        bytes += envelope.length;
        chunks++;
      }
      return `, ${chunks} chunks, ${(bytes / 1048576).toFixed(1)} MiB`;
    });
  }
  for (let load = 1; load <= LOADS; load++) {
    await measure(`index load ${load}`, async () => {
      const indexes = new TenantIndexes(cp.db, { minRevisionWaitMs: 1000, maxRows: 10_000_000 });
      await indexes.get(tenantId);
      return `, heap ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MiB`;
    });
  }
} finally {
  await cp.close();
}
