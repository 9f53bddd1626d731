import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getOption, hasOption } from '@bufbuild/protobuf';
import { http } from '../../gen/google/api/annotations_pb.js';
import { access, AccessTier } from '../../gen/authz/v1/options_pb.js';
import { SERVICES } from '../../services/control-plane/services.js';
import { startControlPlane, type ControlPlane } from '../../services/control-plane/app.js';
import { loadConfig } from '../../services/control-plane/config.js';
import { createLogger } from '../../services/transport/observability.js';
import { describeEachBackend, openTestDatabase } from '../harness.js';
import { callUnary, loadGrpcJsClient } from '../interop/grpc-js-client.js';

const BOOTSTRAP = 'azk_e2e_bootstrap_secret_0123456789abcdefghij';

/** A PostgreSQL URL for a fresh database (the harness creates it), or none for embedded. */
async function databaseUrlFor(backend: 'postgres' | 'embedded') {
  if (backend === 'embedded') return { url: undefined, done: async () => {} };
  const db = await openTestDatabase('postgres');
  const url = (db.orm.config.get('clientUrl') as string);
  await db.orm.close(true); // keep the database, drop it at the end through db.close
  return { url, done: () => db.close() };
}

describeEachBackend('control plane end to end on %s', (backend) => {
  let cp: ControlPlane;
  let base: string;
  let done: () => Promise<void>;

  async function rest(method: string, path: string, body?: unknown, key: string | null = BOOTSTRAP) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key) headers['x-api-key'] = key;
    const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }

  beforeAll(async () => {
    const db = await databaseUrlFor(backend);
    done = db.done;
    const env: Record<string, string> = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_DATA_DIR: 'memory://' };
    if (db.url) env.DATABASE_URL = db.url;
    cp = await startControlPlane(loadConfig(env, []), createLogger({ logLevel: 'silent' }));
    base = cp.server.url;
  });
  afterAll(async () => {
    await cp?.close();
    await done?.();
  });

  it('answers the README example: tenant, scope, role, decision', async () => {
    const tenant = await rest('POST', '/tenants', { name: 'acme' });
    expect(tenant.status).toBe(200);
    const tenantId = tenant.body.id;
    expect(typeof tenant.body.revision).toBe('number');
    const team = await rest('POST', '/scope-types', { name: 'team' });
    const scope = await rest('POST', '/scopes', { tenantId, name: 'eng', typeId: team.body.id });
    expect(scope.status).toBe(200);
    expect(Number(scope.headers.get('x-revision'))).toBeGreaterThan(0);
    const subject = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'alice' });
    const role = await rest('POST', '/roles', { scopeId: scope.body.id, key: 'editor', name: 'Editor' });
    const perm = await rest('POST', '/permissions', { scopeId: scope.body.id, action: 'edit', resourceType: 'doc', resourcePattern: '*' });
    expect(perm.body.key).toBe('doc:edit:*');
    await rest('POST', '/role-permissions', { roleId: role.body.id, permissionId: perm.body.id });
    const m = await rest('POST', '/memberships', { subjectId: subject.body.id, scopeId: scope.body.id });
    await rest('POST', '/role-assignments', { membershipId: m.body.id, roleId: role.body.id });
    const type = await rest('POST', '/resource-types', { name: 'Document', key: 'doc', scopeId: scope.body.id });
    const res = await rest('POST', '/resources', { resourceTypeId: type.body.id, ownerScopeId: scope.body.id, externalResourceId: 'readme' });
    expect(res.body.scopeId).toBe(scope.body.id);
    const ask = { actor: { subjectId: subject.body.id }, scopeId: scope.body.id, action: 'edit', resource: { resourceId: res.body.id } };
    const yes = await rest('POST', '/evaluate', ask);
    expect(yes.status).toBe(200);
    expect(yes.body).toMatchObject({ allowed: true, reason: 'role', decidedByPolicy: false });
    expect(typeof yes.body.revision).toBe('number');
    const no = await rest('POST', '/evaluate', { ...ask, action: 'delete' });
    expect(no.status).toBe(200);
    expect(no.body.allowed).toBe(false);

    // Tiers with real keys: a service key decides in its tenant, a user key does not.
    const svc = await rest('POST', '/api-keys', { name: 'svc', kind: 'service', tenantId });
    expect(svc.body.secretKey).toMatch(/^azk_/);
    expect(svc.body.lastFour).toBe(svc.body.secretKey.slice(-4));
    expect((await rest('POST', '/evaluate', ask, svc.body.secretKey)).status).toBe(200);
    expect((await rest('POST', '/scopes', { tenantId, name: 'x', typeId: team.body.id }, svc.body.secretKey)).status).toBe(403);
    const usr = await rest('POST', '/api-keys', { name: 'usr', tenantId });
    expect(usr.body.kind).toBe('user');
    expect((await rest('POST', '/evaluate', ask, usr.body.secretKey)).status).toBe(403);
    expect((await rest('GET', `/tenants/${tenantId}`, undefined, usr.body.secretKey)).status).toBe(200);
    expect((await rest('POST', '/evaluate', ask, 'azk_not_a_key_at_all_000000000000000000')).status).toBe(401);
    await rest('DELETE', `/api-keys/${svc.body.id}`);
    expect((await rest('POST', '/evaluate', ask, svc.body.secretKey)).status).toBe(401);

    // gRPC from a client built only from the .proto files.
    const client = loadGrpcJsClient('authz.v1.DecisionService', base);
    try {
      const { response, } = await callUnary<{ allowed: boolean; reason: string }>(client, 'Evaluate', {
        actor: { subjectId: subject.body.id }, scopeId: scope.body.id, action: 'edit', resource: { resourceId: res.body.id },
      }, { 'x-api-key': BOOTSTRAP });
      expect([response.allowed, response.reason]).toEqual([true, 'role']);
    } finally {
      client.close();
    }
  });

  it('refuses every RPC without credentials (401) and below its tier (403), from the descriptors', async () => {
    const tenant = await rest('POST', '/tenants', { name: 'tiers' });
    const usr = (await rest('POST', '/api-keys', { name: 'u', tenantId: tenant.body.id })).body.secretKey;
    const svc = (await rest('POST', '/api-keys', { name: 's', kind: 'service', tenantId: tenant.body.id })).body.secretKey;
    let checked = 0;
    for (const service of SERVICES) {
      for (const method of service.methods) {
        if (method.methodKind !== 'unary') continue;
        expect(hasOption(method, http), `${method.name} has no http binding`).toBe(true);
        const rule = getOption(method, http);
        const tier = getOption(method, access);
        expect(tier, `${method.name} has no access tier`).not.toBe(AccessTier.UNSPECIFIED);
        const verb = rule.pattern.case as string;
        const path = (rule.pattern.value as string).replace(/\{[^}]+\}/g, 'x_unknown');
        const body = rule.body === 'items' ? [] : rule.body ? {} : undefined;
        const anon = await rest(verb.toUpperCase(), path, body, null);
        expect(anon.status, `${verb} ${path} without credentials`).toBe(401);
        if (tier === AccessTier.PLATFORM) {
          expect((await rest(verb.toUpperCase(), path, body, usr)).status, `${path} with a user key`).toBe(403);
          expect((await rest(verb.toUpperCase(), path, body, svc)).status, `${path} with a service key`).toBe(403);
        } else if (tier === AccessTier.DECISION) {
          expect((await rest(verb.toUpperCase(), path, body, usr)).status, `${path} with a user key`).toBe(403);
        } else {
          expect((await rest(verb.toUpperCase(), path, body, svc)).status, `${path} with a service key`).toBe(403);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('serves health, readiness and metrics without credentials', async () => {
    expect((await fetch(base + '/healthz')).status).toBe(200);
    expect((await fetch(base + '/readyz')).status).toBe(200);
    const metrics = await (await fetch(base + '/metrics')).text();
    expect(metrics).toContain('authz_rpc_requests_total');
    // The README flow above asked for a decision: its tenant's index is held.
    expect(Number(/^authz_tenant_indexes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(Number(/^authz_tenant_index_rows (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(metrics).toMatch(/^authz_tenant_index_evictions_total 0$/m);
    // The database pool: read from knex's pool at scrape time, acquires timed as they happen.
    expect(Number(/^authz_db_pool_max_connections (\d+)$/m.exec(metrics)?.[1])).toBe(backend === 'postgres' ? 10 : 1);
    const used = Number(/^authz_db_pool_connections\{state="used"\} (\d+)$/m.exec(metrics)?.[1]);
    const free = Number(/^authz_db_pool_connections\{state="free"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(used).toBeGreaterThanOrEqual(0);
    expect(free).toBeGreaterThanOrEqual(1); // the README flow's queries left connections open
    expect(metrics).toMatch(/^authz_db_pool_pending_acquires 0$/m);
    expect(metrics).toMatch(/^authz_db_pool_pending_creates \d+$/m);
    expect(Number(/^authz_db_pool_acquire_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(10);
  });

  it('answers REST errors with {code, message, details} and writes nothing', async () => {
    const before = await rest('GET', '/tenants');
    const bad = await rest('POST', '/tenants/batch', [{ name: 'ok' }, { name: '' }]);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_argument');
    expect(bad.body.message).toContain('items[1].name');
    const after = await rest('GET', '/tenants');
    expect(after.body.length).toBe(before.body.length);
    const missing = await rest('GET', '/scopes/scope_missing');
    expect([missing.status, missing.body.code]).toEqual([404, 'not_found']);
  });
});
