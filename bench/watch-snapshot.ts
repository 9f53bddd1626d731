/**
 * `node --expose-gc --import tsx bench/watch-snapshot.ts [resources]` (DATABASE_URL required): a
 * tenant of N resources (default 1,000,000, inserted straight into the table) streamed by Watch
 * to an in-process client that decodes and drops every chunk; prints the live heap (after a full
 * collection, at every chunk) before and at its peak during the snapshot. It must not grow with
 * N: the server holds one page of rows and about two chunks.
 */
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { SnapshotService } from '../gen/authz/v1/snapshot_service_pb.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../test/harness.js';
import { restClient } from '../test/watch-fixtures.js';
import { runAsDeployed } from './as-deployed.js';

const n = Number(process.argv[2] ?? 1_000_000);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL');
// The control plane in this process runs with its deployed V8 flags.
runAsDeployed();
const cp = await startTestControlPlane('postgres');
try {
  const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
  const tenant = await rest('POST', '/tenants', { name: 'big' });
  const type = await rest('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: tenant.scopeId });
  await cp.db.orm.em.fork().execute(
    `insert into resources (id, tenant_id, created_at, created_by, resource_type_id, owner_scope_id, external_resource_id, display_name, attributes)
     select 'resource_' || g, ?, now(), 'bench', ?, ?, 'doc-' || g, 'Document ' || g, jsonb_build_object('n', g, 'team', 'eng')
     from generate_series(1, ?) g`,
    [tenant.id, type.id, tenant.scopeId, n],
  );
  // As autovacuum would: without statistics the planner sorts the whole table for every page.
  await cp.db.orm.em.fork().execute('analyze resources');
  // Live memory, not garbage: a full collection before each sample (run with --expose-gc).
  const live = () => (globalThis.gc?.(), process.memoryUsage().heapUsed);
  const before = live();
  let peak = before;
  const t0 = Date.now();
  let chunks = 0;
  let entities = 0;
  const client = createClient(SnapshotService, createGrpcTransport({ baseUrl: cp.url }));
  for await (const m of client.watch({ tenantId: tenant.id }, { headers: { 'x-api-key': TEST_BOOTSTRAP_KEY } })) {
    if (m.event.case !== 'snapshot') continue;
    chunks++;
    entities += m.event.value.entities.length;
    peak = Math.max(peak, live());
    if (m.event.value.last) break;
  }
  const mb = (b: number) => (b / 1048576).toFixed(1);
  console.log(`${entities} entities in ${chunks} chunks in ${Date.now() - t0} ms; heap before ${mb(before)} MiB, peak ${mb(peak)} MiB (+${mb(peak - before)} MiB live, client and server together)`);
} finally {
  await cp.close();
}
