/**
 * LookupSubjects in process, on an index built with the engine's builder: a tenant of 100,000
 * subjects of whom 10,000 may read one resource through memberships (a role whose permission
 * covers every doc), the others holding nothing there. Reports, side by side in one run: one
 * check, the first page of 100, the whole set streamed in pages of 1,000 (subjects listed per
 * second and subjects visited per second), a page of 100 with `explain`, and the first listing's
 * sort of the subjects; then the whole set over the wire (REST and gRPC), served by connect-node
 * and by the lean path (services/decision/lean.ts, as the sidecar and the control plane serve it).
 * Target: the whole set at >= 100,000 subjects/s (wall time; the CPU time of the same run is
 * given too, as it moves less on a shared machine).
 *
 *   npm run bench:lookup-subjects [-- --subjects N --readers N]
 */
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { decisionService } from '../services/decision/connect.js';
import { leanDecisions } from '../services/decision/lean.js';
import type { DecisionSource } from '../services/decision/decide.js';
import { createLogger, createRegistry, rpcMetrics } from '../services/transport/observability.js';
import { evaluate, lookupSubjects, TenantIndex, type LookupSubjectsQuery } from '../services/engine/mod.js';
import { startServer } from '../services/transport/server.js';
import { loadAverageNow, writeResults } from './results-file.js';

const LOAD_AT_START = loadAverageNow();
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SUBJECTS = arg('subjects', 100_000);
const READERS = arg('readers', 10_000);
const T0 = '2025-01-01T00:00:00.000Z';

function build(): TenantIndex {
  const b = TenantIndex.builder(1);
  b.add('scope', { id: 'scope_root', tenantId: 'tenant_1', typeId: 'scope_type_t', name: 'root', parentId: null });
  b.add('resource_type', { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' });
  b.add('role', { id: 'role_reader', scopeId: 'scope_root', key: 'reader', name: 'Reader' });
  b.add('role', { id: 'role_other', scopeId: 'scope_root', key: 'other', name: 'Other' });
  b.add('permission', { id: 'permission_read', scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' });
  b.add('permission', { id: 'permission_write', scopeId: 'scope_root', action: 'write', resourceType: 'doc', resourcePattern: '*', key: 'doc:write:*' });
  b.add('role_permission', { id: 'role_permission_1', roleId: 'role_reader', permissionId: 'permission_read' });
  b.add('role_permission', { id: 'role_permission_2', roleId: 'role_other', permissionId: 'permission_write' });
  b.add('resource', { id: 'resource_doc', tenantId: 'tenant_1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_root', externalResourceId: 'doc', createdAt: T0, createdBy: 'subject_0' });
  // Readers spread evenly through the id order; every other subject holds a role that does not read.
  const every = Math.max(1, Math.floor(SUBJECTS / READERS));
  for (let i = 0; i < SUBJECTS; i++) {
    const id = `subject_${String(i).padStart(7, '0')}`;
    b.add('subject', { id, type: 'user', externalId: `u${i}`, metadata: {} });
    b.add('membership', { id: `membership_${i}`, subjectId: id, scopeId: 'scope_root' });
    b.add('role_assignment', { id: `role_assignment_${i}`, membershipId: `membership_${i}`, roleId: i % every === 0 ? 'role_reader' : 'role_other' });
  }
  return b.build(1);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * The whole listing over the wire, paged by 1,000: REST with the `x-next-cursor` header, and gRPC;
 * `lean`: the lean path answers (else connect-node and the REST gateway).
 */
async function overTheWire(index: TenantIndex, lean: boolean): Promise<{ restMs: number; grpcMs: number; restCpuMs: number; grpcCpuMs: number; listed: number }> {
  const source: DecisionSource<undefined> = { gate: () => 'strict', indexFor: () => index };
  const logger = createLogger({ logLevel: 'silent' });
  const registry = createRegistry();
  const server = await startServer({
    host: '127.0.0.1', port: 0, name: 'bench', logger, registry,
    routes: (router) => router.service(DecisionService, decisionService(source, () => undefined)),
    services: [DecisionService],
    leanPath: lean ? leanDecisions({ source, caller: () => undefined, maxBodyBytes: 4 * 1024 * 1024, logger, metrics: rpcMetrics(registry) }) : undefined,
  });
  try {
    const body = { scopeId: 'scope_root', action: 'read', resource: { resourceId: 'resource_doc' }, pageSize: 1000 };
    const rest = async () => {
      let cursor = '';
      let listed = 0;
      do {
        const r = await fetch(`${server.url}/lookup/subjects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, cursor }) });
        if (r.status !== 200) throw new Error(`REST ${r.status}: ${await r.text()}`);
        listed += ((await r.json()) as { subjects: unknown[] }).subjects.length;
        cursor = r.headers.get('x-next-cursor') ?? '';
      } while (cursor);
      return listed;
    };
    const client = createClient(DecisionService, createGrpcTransport({ baseUrl: server.url }));
    const grpc = async () => {
      let cursor = '';
      let listed = 0;
      do {
        const page = await client.lookupSubjects({ ...body, cursor });
        listed += page.subjects.length;
        cursor = page.nextCursor;
      } while (cursor);
      return listed;
    };
    const timed = async (f: () => Promise<number>) => {
      // Wall time, and the CPU time of the process (server and client: it moves less on a shared machine).
      const runs: { ms: number; cpuMs: number; listed: number }[] = [];
      for (let i = 0; i < 5; i++) {
        const cpu = process.cpuUsage();
        const t = performance.now();
        const listed = await f();
        const used = process.cpuUsage(cpu);
        runs.push({ ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000, listed });
      }
      return runs.sort((a, b) => a.ms - b.ms)[2];
    };
    const r = await timed(rest);
    const g = await timed(grpc);
    if (r.listed !== g.listed) throw new Error(`REST listed ${r.listed}, gRPC ${g.listed}`);
    return { restMs: r.ms, grpcMs: g.ms, restCpuMs: r.cpuMs, grpcCpuMs: g.cpuMs, listed: r.listed };
  } finally {
    await server.close();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const index = build();
  const buildMs = performance.now() - started;
  const options = { now: new Date(T0), gate: 'strict' as const };
  const query: Omit<LookupSubjectsQuery, 'after'> = { scopeId: 'scope_root', action: 'read', resource: { resourceId: 'resource_doc' }, pageSize: 100 };

  let t = performance.now();
  index.subjectsInIdOrder();
  const sortMs = performance.now() - t;

  // One check (median of 10,000, readers and others alike).
  const checks: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const subjectId = `subject_${String((i * 7919) % SUBJECTS).padStart(7, '0')}`;
    t = performance.now();
    evaluate(index, { actor: { subjectId }, scopeId: 'scope_root', action: 'read', resource: { resourceId: 'resource_doc' } }, options);
    checks.push(performance.now() - t);
  }
  const checkUs = median(checks) * 1000;

  const firstPages: number[] = [];
  for (let i = 0; i < 50; i++) {
    t = performance.now();
    lookupSubjects(index, query, options);
    firstPages.push(performance.now() - t);
  }
  const firstPageMs = median(firstPages);

  // Wall time and this thread's CPU time: on a shared machine the second moves less.
  const streams: { ms: number; cpuMs: number; listed: number; pages: number }[] = [];
  for (let run = 0; run < 5; run++) {
    const cpu = process.cpuUsage();
    t = performance.now();
    let after: string | undefined;
    let listed = 0;
    let pages = 0;
    do {
      const page = lookupSubjects(index, { ...query, pageSize: 1000, after }, options);
      listed += page.subjects.length;
      pages++;
      after = page.last;
    } while (after !== undefined);
    const ms = performance.now() - t;
    const used = process.cpuUsage(cpu);
    streams.push({ ms, cpuMs: (used.user + used.system) / 1000, listed, pages });
  }
  const stream = streams.sort((a, b) => a.ms - b.ms)[Math.floor(streams.length / 2)];
  if (stream.listed !== READERS && SUBJECTS % READERS === 0) throw new Error(`listed ${stream.listed}, expected ${READERS}`);

  const explained: number[] = [];
  for (let i = 0; i < 20; i++) {
    t = performance.now();
    lookupSubjects(index, { ...query, explain: true }, options);
    explained.push(performance.now() - t);
  }

  const wire = await overTheWire(index, false);
  const leanWire = await overTheWire(index, true);

  const results = {
    subjects: SUBJECTS,
    readers: stream.listed,
    buildMs: Math.round(buildMs),
    firstListingSortMs: +sortMs.toFixed(1),
    checkMedianUs: +checkUs.toFixed(2),
    firstPageOf100Ms: +firstPageMs.toFixed(2),
    firstPageOverCheck: Math.round((firstPageMs * 1000) / checkUs),
    wholeSetMs: Math.round(stream.ms),
    wholeSetPages: stream.pages,
    subjectsListedPerSecond: Math.round(stream.listed / (stream.ms / 1000)),
    subjectsVisitedPerSecond: Math.round(SUBJECTS / (stream.ms / 1000)),
    wholeSetCpuMs: Math.round(stream.cpuMs),
    subjectsListedPerCpuSecond: Math.round(stream.listed / (stream.cpuMs / 1000)),
    explainedPageOf100Ms: +median(explained).toFixed(2),
    restWholeSetMs: Math.round(wire.restMs),
    restWholeSetCpuMs: Math.round(wire.restCpuMs),
    restSubjectsPerSecond: Math.round(wire.listed / (wire.restMs / 1000)),
    grpcWholeSetMs: Math.round(wire.grpcMs),
    grpcWholeSetCpuMs: Math.round(wire.grpcCpuMs),
    grpcSubjectsPerSecond: Math.round(wire.listed / (wire.grpcMs / 1000)),
    leanRestWholeSetMs: Math.round(leanWire.restMs),
    leanRestWholeSetCpuMs: Math.round(leanWire.restCpuMs),
    leanRestSubjectsPerSecond: Math.round(leanWire.listed / (leanWire.restMs / 1000)),
    leanGrpcWholeSetMs: Math.round(leanWire.grpcMs),
    leanGrpcWholeSetCpuMs: Math.round(leanWire.grpcCpuMs),
    leanGrpcSubjectsPerSecond: Math.round(leanWire.listed / (leanWire.grpcMs / 1000)),
    targetSubjectsPerSecond: 100_000,
    targetMetInProcess: stream.listed / (stream.ms / 1000) >= 100_000,
    targetMetOverTheWire: leanWire.listed / (Math.max(leanWire.restMs, leanWire.grpcMs) / 1000) >= 100_000,
  };
  console.table(results);
  console.log(`wrote ${writeResults('lookup-subjects', { command: 'npm run bench:lookup-subjects', results, loadAtStart: LOAD_AT_START })}`);
}

await main();
