/**
 * Bounded cost through the real handlers: the reported condition and regex are refused before
 * anything is written, and a condition that passes the write-time checks but meets the largest
 * array a request context can carry (16 KiB of JSON) answers quickly and fails closed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import type { JsonObject } from '@bufbuild/protobuf';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema, ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { BATCH_MAX_OPERATIONS } from '../../engine/budget.js';
import { describeEachBackend, countRows, createTestApp, expectCode, seedRows, seedTenant, type TestApp } from '../../../test/harness.js';

/** The reported `contextCondition`: three nested `some` over 330-element literal arrays (~2 KB). */
const reportedCondition = (): JsonObject => {
  const arr = () => Array.from({ length: 330 }, () => 0);
  return { some: [arr(), { some: [arr(), { some: [arr(), { '==': [{ var: '' }, 1] }] }] }] };
};
/** The reported pattern (5.4 KB, ~1.2M instructions). */
const reportedPattern = 'a{0,1000}'.repeat(600);
/** Passes every write-time check; its cost depends on the length of `xs` in the request context. */
const scan: JsonObject = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };

describeEachBackend('bounded cost of conditions and patterns on %s', (backend) => {
  let app: TestApp;
  let policies: Client<typeof PolicyService>;
  let decisions: Client<typeof DecisionService>;
  const revision = async () =>
    Number(((await app.db.orm.em.fork().execute(`select revision from tenants where id = 'tenant_budget'`)) as { revision: string }[])[0].revision);

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_budget');
    const t = 'tenant_budget';
    await seedRows(app.db, t, 'subject', [{ id: 'subject_admin', type: 'user', externalId: 'admin' }]);
    await seedRows(app.db, t, 'role', [{ id: 'role_reader', scopeId: 'scope_tenant_budget', key: 'reader', name: 'Reader', description: '' }]);
    await seedRows(app.db, t, 'permission', [{ id: 'permission_read', scopeId: 'scope_tenant_budget', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }]);
    await seedRows(app.db, t, 'rolePermission', [{ id: 'role_permission_read', roleId: 'role_reader', permissionId: 'permission_read' }]);
    await seedRows(app.db, t, 'membership', [{ id: 'membership_admin', subjectId: 'subject_admin', scopeId: 'scope_tenant_budget' }]);
    await seedRows(app.db, t, 'roleAssignment', [{ id: 'role_assignment_admin', membershipId: 'membership_admin', roleId: 'role_reader' }]);
    await seedRows(app.db, t, 'resourceType', [{ id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_budget' }]);
    await seedRows(app.db, t, 'resource', [
      { id: 'resource_plain', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_budget', externalResourceId: 'plain' },
      { id: 'resource_guarded', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_budget', externalResourceId: 'guarded' },
    ]);
    policies = app.client(PolicyService);
    decisions = app.client(DecisionService);
  });
  afterAll(() => app?.close());

  const policy = (extra: Record<string, unknown>) => ({
    scopeId: 'scope_tenant_budget', target: { kind: 'resource', resourceId: 'resource_plain' }, actions: ['read'], effect: 'deny', ...extra,
  });
  const collection = (match: JsonObject) => ({ scopeId: 'scope_tenant_budget', resourceTypeId: 'resource_type_doc', name: 'C', match });

  it('refuses the reported 2 KB condition with invalid_argument naming its path, writing nothing', async () => {
    const before = await revision();
    const err = await expectCode(policies.createResourcePolicy(policy({ id: 'policy_cubic', contextCondition: reportedCondition() })), Code.InvalidArgument, 'contextCondition.some[1]: costs up to 545492 operations');
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: ErrorReason.INVALID_FIELD, field: 'contextCondition.some[1]' });
    await expectCode(
      policies.batchCreateResourcePolicies({ items: [policy({ id: 'policy_fine' }), policy({ id: 'policy_cubic', subjectCondition: reportedCondition() })] }),
      Code.InvalidArgument,
      'items[1].subjectCondition.some[1]',
    );
    expect(await revision()).toBe(before);
    expect(await countRows(app.db, 'resource_policies', 'tenant_id', 'tenant_budget')).toBe(0);
  });

  it('refuses the reported regular expression with invalid_argument naming its path, fast, writing nothing', async () => {
    const before = await revision();
    const t0 = performance.now();
    const err = await expectCode(policies.createResourceCollection(collection({ patterns: { displayName: reportedPattern } })), Code.InvalidArgument, 'match.patterns.displayName: regular expression too large');
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: ErrorReason.INVALID_FIELD, field: 'match.patterns.displayName' });
    await expectCode(policies.createResourceCollection(collection({ fields: { displayName: { regex: reportedPattern } } })), Code.InvalidArgument, 'match.fields.displayName.regex');
    expect(await revision()).toBe(before);
    expect(await countRows(app.db, 'resource_collections', 'tenant_id', 'tenant_budget')).toBe(0);
  });

  it('answers quickly and fails closed when an accepted condition meets a long array in the context', async () => {
    await policies.createResourcePolicy(policy({ id: 'policy_scan', target: { kind: 'resource', resourceId: 'resource_guarded' }, contextCondition: scan }));
    const ask = (xs: number[]) => ({
      actor: { subjectId: 'subject_admin' }, scopeId: 'scope_tenant_budget', action: 'read', resource: { resourceId: 'resource_guarded' }, context: { xs }, explain: true,
    });
    // A short array: the deny's condition is false, the role decides.
    expect((await decisions.evaluate(ask([1, 2, 3]))).reason).toBe('role');
    // 8,000 elements (16 KiB of JSON, the most a context holds): 32,003 operations to scan.
    const xs = Array.from({ length: 8_000 }, () => 0);
    const t0 = performance.now();
    const res = await decisions.evaluate(ask(xs));
    expect(performance.now() - t0).toBeLessThan(1_000); // milliseconds here; loose so a loaded CI machine passes (the defect took seconds)
    expect([res.allowed, res.reason, res.evaluatedPolicy?.id]).toEqual([false, 'policy_deny', 'policy_scan']);
    const step = res.trace.find((s) => (s.details as { policyId?: string } | undefined)?.policyId === 'policy_scan');
    expect(step?.details).toMatchObject({ contextConditionError: 'evaluation budget exhausted: the condition took more than 10000 operations' });
  });

  it('one evaluate/batch call shares one budget across its requests', async () => {
    // Scanning 2,000 elements costs 3 + 4 × 2,000 operations (see jsonlogic.test.ts): the
    // requests that fit in the batch's budget decide by role, the rest fail closed.
    const n = 2_000;
    const fit = Math.floor(BATCH_MAX_OPERATIONS / (3 + 4 * n));
    const ask = { actor: { subjectId: 'subject_admin' }, scopeId: 'scope_tenant_budget', action: 'read', resource: { resourceId: 'resource_guarded' }, context: { xs: Array.from({ length: n }, () => 0) } };
    const { results } = await decisions.evaluateBatch({ requests: Array.from({ length: fit + 3 }, (_, i) => ({ ...ask, explain: i === fit + 2 })) });
    expect(results.map((r) => r.reason)).toEqual([...Array.from({ length: fit }, () => 'role'), 'policy_deny', 'policy_deny', 'policy_deny']);
    const step = results[fit + 2].trace.find((s) => (s.details as { policyId?: string } | undefined)?.policyId === 'policy_scan');
    expect(step?.details).toMatchObject({ contextConditionError: `evaluation budget exhausted: the batch's ${BATCH_MAX_OPERATIONS} operations are spent` });
    // Single calls each have a decision's budget of their own.
    for (let i = 0; i < 3; i++) expect((await decisions.evaluate(ask)).reason).toBe('role');
  });
});
