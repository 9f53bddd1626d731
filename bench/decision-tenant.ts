/**
 * The decision benchmarks' tenant (bench/sidecar.ts, bench/instructions.ts): a role granting
 * `read` on docs to `subject_alice` at the root scope, and `resources` docs, served by a scripted
 * Watch endpoint in the bench's process (the snapshot, then heartbeats), so that a
 * sidecar's figures are its own whatever the control plane costs.
 */
import { create } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { SnapshotService, WatchResponseSchema } from '../gen/authz/v1/snapshot_service_pb.js';
import { createRegistry } from '../services/transport/observability.js';
import { startServer } from '../services/transport/server.js';

export const TENANT = 'tenant_bench';
export const ROOT_SCOPE = 'scope_bench_root';
/** The decision every load asks: allowed by the role. */
export const EVALUATE = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT_SCOPE, action: 'read', resource: { resourceId: 'resource_42' } };

/** The tenant as Watch entities. */
function entities(resources: number) {
  const b = { tenantId: TENANT, createdAt: '2026-01-01T00:00:00Z', createdBy: 'bench' };
  const rows: [string, Record<string, unknown>][] = [
    ['scope', { ...b, id: ROOT_SCOPE, name: 'root', typeId: 'scope_type_tenant', parentId: '' }],
    ['subject', { ...b, id: 'subject_alice', type: 'user', externalId: 'alice' }],
    ['role', { ...b, id: 'role_reader', scopeId: ROOT_SCOPE, key: 'reader', name: 'reader', description: '' }],
    ['permission', { ...b, id: 'permission_read', scopeId: ROOT_SCOPE, action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }],
    ['role_permission', { ...b, id: 'role_permission_1', roleId: 'role_reader', permissionId: 'permission_read' }],
    ['membership', { ...b, id: 'membership_alice', subjectId: 'subject_alice', scopeId: ROOT_SCOPE }],
    ['role_assignment', { ...b, id: 'role_assignment_alice', membershipId: 'membership_alice', roleId: 'role_reader' }],
    ['resource_type', { ...b, id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: ROOT_SCOPE }],
  ];
  for (let i = 0; i < resources; i++) {
    rows.push(['resource', { ...b, id: `resource_${i}`, resourceTypeId: 'resource_type_doc', ownerScopeId: ROOT_SCOPE, scopeId: ROOT_SCOPE, externalResourceId: `doc-${i}` }]);
  }
  return rows.map(([kind, row]) => ({ kind, id: row.id as string, json: JSON.stringify(row) }));
}

/** A Watch server that streams the tenant, then a heartbeat every `heartbeatMs`. */
export async function scriptedControlPlane(resources: number, heartbeatMs = 500) {
  return scriptedWatch(TENANT, entities(resources), heartbeatMs);
}

/** The same endpoint for any tenant's entities (JSON rows), e.g. bench/realistic-tenant.ts's. */
export async function scriptedWatch(tenantId: string, all: { kind: string; id: string; json: string }[], heartbeatMs = 500) {
  return startServer({
    port: 0,
    name: 'bench control plane',
    logger: pino({ level: 'silent' }),
    registry: createRegistry({ defaultMetrics: false }),
    routes: (router) =>
      router.service(SnapshotService, {
        async *watch(_req, ctx) {
          for (let i = 0; i < all.length; i += 5000) {
            yield create(WatchResponseSchema, { event: { case: 'snapshot', value: { tenantId, revision: 1n, index: i / 5000, last: i + 5000 >= all.length, entities: all.slice(i, i + 5000), resourceScopeGate: 'off' } } });
          }
          while (!ctx.signal.aborted) {
            await new Promise((r) => setTimeout(r, heartbeatMs));
            yield create(WatchResponseSchema, { event: { case: 'heartbeat', value: { tenantId, revision: 1n, resourceScopeGate: 'off' } } });
          }
        },
      }),
  });
}
