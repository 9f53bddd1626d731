/**
 * The sidecar's snapshot path in one process, without a transport: the chunks of
 * bench/snapshot-scale.ts's tenant, encoded beforehand, handed to a Follower as the gRPC
 * transport would (decoded with protobuf-es, then `receive`). Prints CPU and wall time, heap and
 * RSS once built; for profiling one part of the load (`node --cpu-prof --import tsx`).
 *
 * Usage: node --expose-gc --import tsx bench/snapshot-apply.ts [--resources 1000000 --grants 1000000 --subjects 100000] [--profile out.cpuprofile]
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { EntitySchema, WatchResponseSchema, type Entity } from '../gen/authz/v1/snapshot_service_pb.js';
import { Follower } from '../sidecar/follower.js';
import { sidecarMetrics } from '../sidecar/metrics.js';
import { RAW_SNAPSHOT_SERVICE, decodeWatchResponse } from '../sidecar/snapshot-wire.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const GRANTS = Number(args.get('grants') ?? 1_000_000);
const SUBJECTS = Number(args.get('subjects') ?? 100_000);
const TENANT = 'tenant_scale';
const ROOT_SCOPE = 'scope_0192f3a4-0000-7000-8000-000000000000';
const CHUNK_BYTES = 4 * 1024 * 1024 - 64 * 1024;
const b = { tenantId: TENANT, createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'subject_0192f3a4-0000-7000-8000-00000000bench' };
const id = (prefix: string, n: number) => `${prefix}_0192f3a4-${(n >>> 16).toString(16).padStart(4, '0')}-7${(n & 0xfff).toString(16).padStart(3, '0')}-8000-${n.toString(16).padStart(12, '0')}`;

function* rows(): Generator<[string, Record<string, unknown>]> {
  const role = id('role', 1);
  yield ['scope', { ...b, id: ROOT_SCOPE, name: 'root', typeId: 'scope_type_tenant', parentId: '' }];
  yield ['role', { ...b, id: role, scopeId: ROOT_SCOPE, key: 'owner', name: 'Owner', description: '' }];
  yield ['permission', { ...b, id: id('permission', 1), scopeId: ROOT_SCOPE, action: 'edit', resourceType: 'doc', resourcePattern: '*', key: 'doc:edit:*', name: '', description: '' }];
  yield ['role_permission', { ...b, id: id('role_permission', 1), roleId: role, permissionId: id('permission', 1) }];
  yield ['resource_type', { ...b, id: id('resource_type', 1), name: 'Doc', key: 'doc', scopeId: ROOT_SCOPE }];
  for (let i = 0; i < SUBJECTS; i++) yield ['subject', { ...b, id: id('subject', i), type: 'user', externalId: `user-${i}@example.com`, metadata: {} }];
  for (let i = 0; i < RESOURCES; i++) {
    yield ['resource', { ...b, id: id('resource', i), resourceTypeId: id('resource_type', 1), ownerScopeId: ROOT_SCOPE, scopeId: ROOT_SCOPE, externalResourceId: `doc-${i}`, displayName: '', attributes: {} }];
  }
  for (let i = 0; i < GRANTS; i++) {
    yield ['ownership_grant', { ...b, id: id('ownership_grant', i), subjectId: id('subject', i % SUBJECTS), resourceId: id('resource', i % RESOURCES), roleId: role }];
  }
}

function encoded(): Uint8Array[] {
  const out: Uint8Array[] = [];
  let entities: Entity[] = [];
  let bytes = 0;
  const flush = (last: boolean) => {
    out.push(toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: { tenantId: TENANT, revision: 1n, index: out.length, last, entities, resourceScopeGate: 'off' } } })));
    entities = [];
    bytes = 0;
  };
  for (const [kind, row] of rows()) {
    const json = JSON.stringify(row);
    if (bytes + json.length + 128 > CHUNK_BYTES) flush(false);
    entities.push(create(EntitySchema, { kind, id: row.id as string, json }));
    bytes += json.length + 128;
  }
  flush(true);
  return out;
}

async function main() {
  const chunks = encoded();
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
}

void main();
