/**
 * Decisions by the caller's own subject ids (`actor.externalId`, `subjectExternalId`) on a
 * control-plane process and a sidecar process following it: REST (the lean path), gRPC and
 * gRPC-Web answer as the subject id does, subjects created and deleted later are found and lost
 * through the index's incremental updates, and an id subjects of two types share needs a type.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema } from '../../gen/authz/v1/error_reason_pb.js';
import { createScratchDatabase } from '../databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { restClient, revisionOf } from '../rest-client.js';

const BOOTSTRAP = 'azk_e2e_external_subject_0123456789abcdefghij';

const { call, ok } = restClient(BOOTSTRAP);

describe.skipIf(!process.env.DATABASE_URL)('decisions by external id on a control plane and a sidecar, as real processes', () => {
  let scratch: { url: string; drop: () => Promise<void> };
  const processes: RunningProcess[] = [];
  const w = {} as { scopeId: string; tenantId: string; alice: string; bob: string; serviceKey: string; revision: number };
  /** Each process: its base URL and the key it takes. */
  const targets: [string, () => { base: string; key: string }][] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_e2e_external_subject');
    const cp = await startProcess('control-plane', {
      DATABASE_URL: scratch.url, SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
    });
    processes.push(cp);
    const tenant = await ok(call(cp.url, 'POST', '/tenants', { name: 'acme' }));
    w.tenantId = tenant.body.id;
    w.scopeId = tenant.body.scopeId;
    w.alice = (await ok(call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }))).body.id;
    w.bob = (await ok(call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'bob' }))).body.id;
    const role = await ok(call(cp.url, 'POST', '/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' }));
    const perm = await ok(call(cp.url, 'POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }));
    await ok(call(cp.url, 'POST', '/role-permissions', { roleId: role.body.id, permissionId: perm.body.id }));
    const membership = await ok(call(cp.url, 'POST', '/memberships', { subjectId: w.alice, scopeId: w.scopeId }));
    const assigned = await ok(call(cp.url, 'POST', '/role-assignments', { membershipId: membership.body.id, roleId: role.body.id }));
    w.revision = revisionOf(assigned);
    w.serviceKey = (await ok(call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }))).body.secretKey;
    const sidecar = await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0',
      SIDECAR_MIN_REVISION_WAIT_MS: '5000', SIDECAR_LOG_LEVEL: 'info',
    });
    processes.push(sidecar);
    await waitFor200(`${sidecar.url}/readyz`);
    targets.push(['control plane', () => ({ base: cp.url, key: BOOTSTRAP })], ['sidecar', () => ({ base: sidecar.url, key: w.serviceKey })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await scratch?.drop();
  });

  const ask = (actor: Record<string, string>, extra: Record<string, unknown> = {}) => ({
    actor, scopeId: w.scopeId, action: 'read', consistency: { minRevision: w.revision }, ...extra,
  });

  it.each(['control plane', 'sidecar'])('%s: REST answers by external id as by id, and says which subject it resolved', async (name) => {
    const { base, key } = targets.find(([n]) => n === name)![1]();
    for (const [ext, id, allowed, reason] of [['alice', w.alice, true, 'role'], ['bob', w.bob, false, 'no_match']] as const) {
      const byId = await ok(call(base, 'POST', '/evaluate', ask({ subjectId: id }), key));
      const byExt = await ok(call(base, 'POST', '/evaluate', ask({ externalId: ext }), key));
      expect(byExt.body).toEqual(byId.body);
      expect([byExt.body.allowed, byExt.body.reason]).toEqual([allowed, reason]);
    }
    const explained = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice', subjectType: 'user' }, { explain: true }), key));
    expect(explained.body.trace.find((s: { step: string }) => s.step === 'subject')).toEqual({
      step: 'subject', result: 'info', message: `subject ${w.alice} (user) from external id "alice"`, details: { subjectId: w.alice },
    });
    const unknown = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'carol' }), key));
    expect([unknown.status, unknown.body.allowed, unknown.body.reason]).toEqual([200, false, 'subject_not_found']);
    const otherType = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice', subjectType: 'agent' }), key));
    expect(otherType.body.reason).toBe('subject_not_found');
    const batch = await ok(call(base, 'POST', '/evaluate/batch', { requests: [ask({ subjectId: w.alice }), ask({ externalId: 'alice' }), ask({ externalId: 'carol' })] }, key));
    expect(batch.body.results.map((r: { reason: string }) => r.reason)).toEqual(['role', 'role', 'subject_not_found']);
    const both = await call(base, 'POST', '/evaluate/batch', { requests: [ask({ externalId: 'alice' }), ask({ subjectId: w.alice, externalId: 'alice' })] }, key);
    expect([both.status, both.body.details?.[0]?.field]).toEqual([400, 'requests[1].actor.externalId']);
    const neither = await call(base, 'POST', '/evaluate', ask({ subjectType: 'user' }), key);
    expect([neither.status, neither.body.details?.[0]?.field]).toEqual([400, 'actor.subjectId']);
    // Effective permissions, on the REST gateway's query parameters.
    const q = `scopeId=${w.scopeId}&consistency.minRevision=${w.revision}`;
    const byId = await ok(call(base, 'GET', `/effective-permissions?subjectId=${w.alice}&${q}`, undefined, key));
    const byExt = await ok(call(base, 'GET', `/effective-permissions?subjectExternalId=alice&subjectType=user&${q}`, undefined, key));
    expect(byExt.body).toEqual(byId.body);
    expect(byExt.body.map((p: { key: string }) => p.key)).toEqual(['doc:read:*']);
    expect((await ok(call(base, 'GET', `/effective-permissions?subjectExternalId=carol&${q}`, undefined, key))).body).toEqual([]);
  });

  it.each(['control plane', 'sidecar'])('%s: gRPC and gRPC-Web answer by external id as by id', async (name) => {
    const { base, key } = targets.find(([n]) => n === name)![1]();
    const transports: Transport[] = [createGrpcTransport({ baseUrl: base }), createGrpcWebTransport({ baseUrl: base, httpVersion: '1.1' })];
    for (const transport of transports) {
      const client = createClient(DecisionService, transport);
      const headers = { 'x-api-key': key };
      const consistency = { minRevision: BigInt(w.revision) };
      const byId = await client.evaluate({ actor: { subjectId: w.alice }, scopeId: w.scopeId, action: 'read', consistency }, { headers });
      const byExt = await client.evaluate({ actor: { externalId: 'alice' }, scopeId: w.scopeId, action: 'read', consistency }, { headers });
      expect([byExt.allowed, byExt.reason, byExt.revision]).toEqual([byId.allowed, byId.reason, byId.revision]);
      const batch = await client.evaluateBatch({ requests: [{ actor: { externalId: 'bob' }, scopeId: w.scopeId, action: 'read', consistency }] }, { headers });
      expect(batch.results.map((r) => r.reason)).toEqual(['no_match']);
      const eff = await client.getEffectivePermissions({ subjectExternalId: 'alice', scopeId: w.scopeId, consistency }, { headers });
      expect(eff.permissions.map((p) => p.key)).toEqual(['doc:read:*']);
    }
  });

  it('follows creates and deletes, and needs a type once two subjects of different types share an id', async () => {
    const [cp, sidecar] = targets.map(([, t]) => t());
    const created = await ok(call(cp.base, 'POST', '/subjects', { tenantId: w.tenantId, type: 'agent', externalId: 'alice' }));
    const revision = revisionOf(created);
    for (const { base, key } of [cp, sidecar]) {
      const consistency = { minRevision: revision };
      const refused = await call(base, 'POST', '/evaluate/batch', { requests: [ask({ subjectId: w.alice }, { consistency }), ask({ externalId: 'alice' }, { consistency })] }, key);
      expect([refused.status, refused.body.code, refused.body.details?.[0]?.field]).toEqual([400, 'invalid_argument', 'requests[1].actor.subjectType']);
      expect(refused.body.message).toContain('types agent, user');
      const effective = await call(base, 'GET', `/effective-permissions?subjectExternalId=alice&scopeId=${w.scopeId}&consistency.minRevision=${revision}`, undefined, key);
      expect([effective.status, effective.body.details?.[0]?.field]).toEqual([400, 'subjectType']);
      const grpc = await createClient(DecisionService, createGrpcTransport({ baseUrl: base }))
        .evaluate({ actor: { externalId: 'alice' }, scopeId: w.scopeId, action: 'read', consistency: { minRevision: BigInt(revision) } }, { headers: { 'x-api-key': key } })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(grpc?.findDetails(ErrorInfoSchema)[0]?.field).toBe('actor.subjectType');
      const user = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice', subjectType: 'user' }, { consistency }), key));
      const agent = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice', subjectType: 'agent' }, { consistency }), key));
      expect([user.body.reason, agent.body.reason]).toEqual(['role', 'no_match']);
    }
    const deleted = await ok(call(cp.base, 'DELETE', `/subjects/${w.alice}`));
    for (const { base, key } of [cp, sidecar]) {
      const d = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice', subjectType: 'user' }, { consistency: { minRevision: revisionOf(deleted) } }), key));
      expect(d.body.reason).toBe('subject_not_found');
      // The agent is the only "alice" left: no type needed.
      const left = await ok(call(base, 'POST', '/evaluate', ask({ externalId: 'alice' }, { consistency: { minRevision: revisionOf(deleted) }, explain: true }), key));
      expect(left.body.trace.find((s: { step: string }) => s.step === 'subject').details).toEqual({ subjectId: created.body.id });
    }
  });
});
