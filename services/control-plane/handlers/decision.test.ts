import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError } from '@connectrpc/connect';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, serviceOf, type TestApp } from '../../../test/harness.js';
import { runWrite } from '../../store/write.js';
import type { KindName, Row } from '../../store/kinds.js';

/** Writes rows through the store (so they reach the change log) and returns the new revision. */
async function put(app: TestApp, tenantId: string, rows: [KindName, Row][]): Promise<number> {
  const { revision } = await runWrite(app.db, async (tx) => {
    await tx.useTenant(tenantId);
    for (const [kind, row] of rows) {
      await tx.insert(kind, [{ tenantId, createdAt: new Date(), createdBy: 'test', ...row }]);
    }
  });
  return revision!;
}

const code = (e: unknown) => ConnectError.from(e).code;

describeEachBackend('DecisionService on %s', (backend) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp(backend);
    // Listening, as the server is from start-up: a cached index then answers without asking the
    // database anything (TenantIndexes.readyFor), the path where a decision is cheapest and
    // where the reach checks must hold as well.
    await app.db.notifications.start();
    await seedTenant(app.db, 'tenant_d');
    await seedTenant(app.db, 'tenant_other');
    await put(app, 'tenant_d', [
      ['scope', { id: 'scope_team', name: 'team', typeId: 'scope_type_tenant', parentId: 'scope_tenant_d' }],
      ['subject', { id: 'subject_alice', type: 'user', externalId: 'alice', metadata: { dept: 'eng' } }],
      ['subject', { id: 'subject_bob', type: 'user', externalId: 'bob' }],
      ['role', { id: 'role_reader', scopeId: 'scope_tenant_d', key: 'reader', name: 'Reader', description: '' }],
      ['permission', { id: 'permission_read', scopeId: 'scope_tenant_d', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }],
      ['rolePermission', { id: 'role_permission_1', roleId: 'role_reader', permissionId: 'permission_read' }],
      ['membership', { id: 'membership_alice', subjectId: 'subject_alice', scopeId: 'scope_tenant_d' }],
      ['roleAssignment', { id: 'role_assignment_1', membershipId: 'membership_alice', roleId: 'role_reader' }],
      ['resourceType', { id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_d' }],
      ['resource', { id: 'resource_d1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_team', externalResourceId: 'd1' }],
    ]);
  });
  afterAll(() => app?.close());

  const ask = (subjectId: string, extra: Record<string, unknown> = {}) => ({
    actor: { subjectId }, scopeId: 'scope_team', action: 'read', resource: { resourceId: 'resource_d1' }, ...extra,
  });

  it('allows through a role inherited from an ancestor scope, and denies others', async () => {
    const c = app.client(DecisionService);
    const yes = await c.evaluate(ask('subject_alice'));
    expect([yes.allowed, yes.reason]).toEqual([true, 'role']);
    const no = await c.evaluate(ask('subject_bob'));
    expect([no.allowed, no.reason]).toEqual([false, 'no_match']);
    expect(no.revision).toBe(yes.revision);
  });

  it('sees a write at once, applied incrementally, and reports its revision', async () => {
    const c = app.client(DecisionService);
    const rev = await put(app, 'tenant_d', [
      ['policy', { id: 'policy_deny_bob', scopeId: 'scope_team', target: { kind: 'resource', resourceId: 'resource_d1' }, targetId: 'resource_d1', actions: ['*'], effect: 'deny', priority: 5 }],
    ]);
    const res = await c.evaluate(ask('subject_alice', { explain: true }));
    expect([res.allowed, res.reason, res.decidedByPolicy, res.evaluatedPolicy?.id]).toEqual([false, 'policy_deny', true, 'policy_deny_bob']);
    expect(Number(res.revision)).toBe(rev);
    expect(res.trace.length).toBeGreaterThan(0);
  });

  it('waits for a minRevision ahead of the store, then is unavailable', async () => {
    const c = app.client(DecisionService);
    const err = await c.evaluate(ask('subject_alice', { consistency: { minRevision: 1_000_000n } })).catch((e) => e);
    expect(code(err)).toBe(Code.Unavailable);
  });

  it('ends a wait for minRevision at the caller\'s deadline, with deadline_exceeded', async () => {
    const c = app.client(DecisionService);
    const started = Date.now();
    const err = await c.evaluate(ask('subject_alice', { consistency: { minRevision: 1_000_000n } }), { timeoutMs: 40 }).catch((e) => e);
    expect(code(err)).toBe(Code.DeadlineExceeded);
    // The wait (200 ms in these tests) was cut short by the 40 ms deadline.
    expect(Date.now() - started).toBeLessThan(190);
  });

  it('answers not_found for an unknown scope and permission_denied across tenants', async () => {
    const c = app.client(DecisionService);
    expect(code(await c.evaluate({ ...ask('subject_alice'), scopeId: 'scope_nope' }).catch((e) => e))).toBe(Code.NotFound);
    const other = app.client(DecisionService, serviceOf('tenant_other'));
    expect(code(await other.evaluate(ask('subject_alice')).catch((e) => e))).toBe(Code.PermissionDenied);
    const mine = app.client(DecisionService, serviceOf('tenant_d'));
    expect((await mine.evaluate(ask('subject_bob'))).allowed).toBe(false);
  });

  it('refuses another tenant\'s key once the tenant\'s index is cached and current', async () => {
    await app.client(DecisionService).evaluate(ask('subject_alice'));
    expect(app.deps.decision.indexes.readyFor('scope_team', 0)).toBeDefined();
    const err = await app.client(DecisionService, serviceOf('tenant_other')).evaluate(ask('subject_alice')).catch((e) => e);
    expect([code(err), ConnectError.from(err).rawMessage]).toEqual([Code.PermissionDenied, 'the API key does not reach the tenant of scopeId']);
  });

  it('names the missing field of a malformed request', async () => {
    const c = app.client(DecisionService);
    const err = await c.evaluateBatch({ requests: [ask('subject_alice'), { ...ask('subject_alice'), action: '' }] }).catch((e) => e);
    expect(code(err)).toBe(Code.InvalidArgument);
    expect(ConnectError.from(err).rawMessage).toContain('requests[1].action');
  });

  it('lists effective permissions consistent with evaluate', async () => {
    const c = app.client(DecisionService);
    const res = await c.getEffectivePermissions({ subjectId: 'subject_alice', scopeId: 'scope_team' });
    expect(res.permissions.map((p) => [p.key, p.source, p.roleId])).toEqual([['doc:read:*', 'role', 'role_reader']]);
  });
});

describeEachBackend('tenant indexes past SERVICE_INDEX_MAX_ROWS on %s', (backend) => {
  let app: TestApp;
  // Ids are unique across tenants: each tenant's subjects carry its name.
  const subjectRows = (t: string, n: number): [KindName, Row][] =>
    Array.from({ length: n }, (_, i) => ['subject', { id: `subject_${t}_${i}`, type: 'user', externalId: `u${i}` }] as [KindName, Row]);
  beforeAll(async () => {
    // Room for one of the two tenants (each holds a root scope and 20 subjects) at a time.
    app = await createTestApp(backend, { indexMaxRows: 30 });
    for (const t of ['tenant_e1', 'tenant_e2']) {
      await seedTenant(app.db, t);
      await put(app, t, subjectRows(t, 20));
    }
  });
  afterAll(() => app?.close());

  const askIn = (tenantId: string, n: number) => ({ actor: { subjectId: `subject_${tenantId}_${n}` }, scopeId: `scope_${tenantId}`, action: 'read' });

  it('drops the least recently used tenant, keeps the one answering, and rebuilds on the next question', async () => {
    const c = app.client(DecisionService);
    const indexes = app.deps.decision.indexes;
    await c.evaluate(askIn('tenant_e1', 1));
    const first = await indexes.get('tenant_e1');
    expect(indexes.stats()).toEqual({ tenants: 1, rows: 21 });
    await c.evaluate(askIn('tenant_e2', 1));
    expect(indexes.stats()).toEqual({ tenants: 1, rows: 21 });
    expect(indexes.evictions).toBe(1);

    // A write to the dropped tenant is seen when it is asked about again (from a new snapshot).
    await put(app, 'tenant_e1', [
      ['role', { id: 'role_r', scopeId: 'scope_tenant_e1', key: 'r', name: 'R', description: '' }],
      ['permission', { id: 'permission_r', scopeId: 'scope_tenant_e1', action: 'read', resourceType: '*', resourcePattern: '*', key: '*:read:*', name: '', description: '' }],
      ['rolePermission', { id: 'role_permission_r', roleId: 'role_r', permissionId: 'permission_r' }],
      ['membership', { id: 'membership_1', subjectId: 'subject_tenant_e1_1', scopeId: 'scope_tenant_e1' }],
      ['roleAssignment', { id: 'role_assignment_r', membershipId: 'membership_1', roleId: 'role_r' }],
    ]);
    const res = await c.evaluate(askIn('tenant_e1', 1));
    expect([res.allowed, res.reason]).toEqual([true, 'role']);
    // Dropped means released: the tenant was rebuilt, not served from a kept index.
    expect(await indexes.get('tenant_e1')).not.toBe(first);
    expect(indexes.evictions).toBe(2);
    expect(indexes.stats().tenants).toBe(1);
  });

  it('keeps a tenant larger than the budget while it answers', async () => {
    const big = await createTestApp(backend, { indexMaxRows: 5 });
    try {
      await seedTenant(big.db, 'tenant_big');
      await put(big, 'tenant_big', subjectRows('tenant_big', 20));
      const c = big.client(DecisionService);
      for (let i = 0; i < 3; i++) {
        const res = await c.evaluate(askIn('tenant_big', 3));
        expect(res.reason).toBe('no_match');
      }
      expect(big.deps.decision.indexes.stats()).toEqual({ tenants: 1, rows: 21 });
      expect(big.deps.decision.indexes.evictions).toBe(0);
    } finally {
      await big.close();
    }
  });
});
