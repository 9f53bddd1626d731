/**
 * PlanResources on a control-plane process and a sidecar process following it: the same plan
 * over REST and gRPC at both (roles by pattern, an ownership grant, a collection's deny policy
 * on an attribute), its SQL run on a PostgreSQL table of the tenant's resources selects exactly
 * what Evaluate allows; bad requests are refused naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { toJson } from '@bufbuild/protobuf';
import pg from 'pg';
import { DecisionService, PlanResourcesResponseSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { createScratchDatabase } from '../databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { restClient, revisionOf } from '../rest-client.js';

const BOOTSTRAP = 'azk_e2e_plan_0123456789abcdefghijklmnopqr';
const { call, ok } = restClient(BOOTSTRAP);

describe.skipIf(!process.env.DATABASE_URL)('PlanResources on a control plane and a sidecar, as real processes', () => {
  let scratch: { url: string; drop: () => Promise<void> };
  const processes: RunningProcess[] = [];
  const w = {} as { cp: string; sidecar: string; scopeId: string; tenantId: string; alice: string; serviceKey: string; revision: number; resources: Record<string, unknown>[] };

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_e2e_plan');
    const cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
      SERVICE_RESOURCE_SCOPE_GATE: 'strict',
    });
    processes.push(cp);
    w.cp = cp.url;
    const tenant = await ok(call(cp.url, 'POST', '/tenants', { name: 'acme' }));
    w.tenantId = tenant.body.id;
    w.scopeId = tenant.body.scopeId;
    w.alice = (await ok(call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }))).body.id;
    const reader = await ok(call(cp.url, 'POST', '/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' }));
    const owner = await ok(call(cp.url, 'POST', '/roles', { scopeId: w.scopeId, key: 'owner', name: 'Owner' }));
    const readR1 = await ok(call(cp.url, 'POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: 'r1' }));
    const readAll = await ok(call(cp.url, 'POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }));
    await ok(call(cp.url, 'POST', '/role-permissions', { roleId: reader.body.id, permissionId: readR1.body.id }));
    await ok(call(cp.url, 'POST', '/role-permissions', { roleId: owner.body.id, permissionId: readAll.body.id }));
    const membership = await ok(call(cp.url, 'POST', '/memberships', { subjectId: w.alice, scopeId: w.scopeId }));
    await ok(call(cp.url, 'POST', '/role-assignments', { membershipId: membership.body.id, roleId: reader.body.id }));
    const doc = (await ok(call(cp.url, 'POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: w.scopeId }))).body.id;
    const items = Array.from({ length: 12 }, (_, i) => ({
      resourceTypeId: doc, ownerScopeId: w.scopeId, externalResourceId: `r${i}`, attributes: { tier: i % 3 === 0 ? 'secret' : 'open', size: i },
    }));
    const created = (await ok(call(cp.url, 'POST', '/resources/batch', items))).body as { id: string }[];
    await ok(call(cp.url, 'POST', '/ownership-grants', { subjectId: w.alice, resourceId: created[4].id, roleId: owner.body.id }));
    await ok(call(cp.url, 'POST', '/ownership-grants', { subjectId: w.alice, resourceId: created[6].id, roleId: owner.body.id }));
    const secret = await ok(call(cp.url, 'POST', '/resource-collections', { scopeId: w.scopeId, resourceTypeId: doc, name: 'secret', match: { fields: { 'attributes.tier': 'secret' } } }));
    const policy = await ok(call(cp.url, 'POST', '/resource-policies', { scopeId: w.scopeId, target: { kind: 'collection', collectionId: secret.body.id }, actions: ['read'], effect: 'deny' }));
    w.revision = revisionOf(policy);
    w.resources = (await Promise.all(created.map((c) => ok(call(cp.url, 'GET', `/resources/${c.id}`))))).map((r) => r.body);
    w.serviceKey = (await ok(call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }))).body.secretKey;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0',
      SIDECAR_MIN_REVISION_WAIT_MS: '5000', SIDECAR_LOG_LEVEL: 'info',
    });
    processes.push(sidecar);
    w.sidecar = sidecar.url;
    await waitFor200(`${sidecar.url}/readyz`);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await scratch?.drop();
  });

  const request = () => ({ actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', resourceType: 'doc', consistency: { minRevision: w.revision } });

  it('gives the same plan over REST and gRPC at both processes, and its SQL selects exactly what Evaluate allows', async () => {
    const rest: Record<string, unknown>[] = [];
    const grpc: Record<string, unknown>[] = [];
    for (const base of [w.cp, w.sidecar]) {
      const r = await ok(call(base, 'POST', '/plan/resources', request(), w.serviceKey));
      expect(r.body.kind).toBe('PLAN_KIND_CONDITIONAL');
      expect(r.body.hasResidual ?? false).toBe(false);
      rest.push(r.body);
      const client = createClient(DecisionService, createGrpcTransport({ baseUrl: base }));
      const g = await client.planResources({ ...request(), consistency: { minRevision: BigInt(w.revision) } }, { headers: { 'x-api-key': w.serviceKey } });
      grpc.push(toJson(PlanResourcesResponseSchema, g) as Record<string, unknown>);
    }
    expect(rest[1], 'REST: sidecar and control plane').toEqual(rest[0]);
    expect(grpc[1], 'gRPC: sidecar and control plane').toEqual(grpc[0]);
    // REST writes int64 as a number and default values, proto JSON a string and none: the rest is the same.
    expect({ hasResidual: false, ...grpc[0], revision: Number(grpc[0].revision) }, 'gRPC and REST').toEqual({ hasResidual: false, ...rest[0] });
    const plan = rest[0] as { sql: string; sqlParams: unknown[] };

    const allowed: string[] = [];
    for (const r of w.resources) {
      const d = await ok(call(w.cp, 'POST', '/evaluate', { actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', resource: { resourceId: r.id } }, w.serviceKey));
      if (d.body.allowed) allowed.push(r.id as string);
    }
    // r1 by its pattern, the two granted ones, minus the secret ones (0, 3, 6, 9).
    expect(allowed.length).toBe(2);
    const db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
    try {
      await db.query(`create table app_docs (id text primary key, external_resource_id text, owner_scope_id text, resource_type text,
        attributes jsonb, display_name text, created_at timestamptz, created_by text)`);
      for (const r of w.resources) {
        await db.query('insert into app_docs values ($1, $2, $3, $4, $5, $6, $7, $8)', [r.id, r.externalResourceId, r.ownerScopeId, 'doc', JSON.stringify(r.attributes ?? null), r.displayName ?? null, r.createdAt, r.createdBy ?? null]);
      }
      const selected = await db.query(`select id from app_docs where ${plan.sql} order by id`, plan.sqlParams);
      expect(selected.rows.map((x: { id: string }) => x.id)).toEqual([...allowed].sort());
    } finally {
      await db.end();
    }
  });

  it('refuses a missing type, a bad column name and an unknown scope; an unknown type key is always_denied', async () => {
    for (const base of [w.cp, w.sidecar]) {
      const missing = await call(base, 'POST', '/plan/resources', { ...request(), resourceType: '' }, w.serviceKey);
      expect([missing.status, missing.body.code, missing.body.message]).toEqual([400, 'invalid_argument', expect.stringContaining('resourceType')]);
      const column = await call(base, 'POST', '/plan/resources', { ...request(), columns: { attributes: 'attrs; drop table x' } }, w.serviceKey);
      expect([column.status, column.body.details?.[0]?.field]).toEqual([400, 'columns.attributes']);
      const scope = await call(base, 'POST', '/plan/resources', { ...request(), scopeId: 'scope_nope' }, w.serviceKey);
      expect(scope.status).toBeOneOf([403, 404]);
      const none = await ok(call(base, 'POST', '/plan/resources', { ...request(), resourceType: 'nope' }, w.serviceKey));
      expect([none.body.kind, none.body.sql]).toEqual(['PLAN_KIND_ALWAYS_DENIED', 'false']);
    }
  });
});
