/**
 * The evaluation budget on the decision path: a condition, a decision and a batch of decisions
 * each have a bound; past it the rule errors and the engine fails closed, saying why.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_MAX_OPERATIONS, CONDITION_MAX_OPERATIONS, DECISION_MAX_OPERATIONS, EvaluationBudget } from './budget.js';
import { evaluate, type Decision, type EvaluateRequest } from './evaluate.js';
import { TenantIndex } from './tenant-index/mod.js';
import type { JsonValue, Policy, TenantSnapshot } from './model.js';

const opts = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

/** One scope; subject_admin reads every doc through a role; resource_doc carries the policies given. */
function tenant(policies: Partial<Policy>[], collections: { id: string; matchDefinition: JsonValue }[] = [], rowOrder: 'as given' | 'reversed' = 'as given'): TenantIndex {
  const snapshot = {
    revision: 1,
    rows: {
      scope: [{ id: 'scope_root', tenantId: 't', parentId: null, typeId: 'scope_type_project', name: 'root' }],
      subject: [
        { id: 'subject_admin', type: 'user', externalId: 'admin' },
        { id: 'subject_nobody', type: 'user', externalId: 'nobody' },
      ],
      role: [{ id: 'role_reader', scopeId: 'scope_root', key: 'reader', name: 'reader' }],
      permission: [
        { id: 'permission_doc', scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' },
        { id: 'permission_note', scopeId: 'scope_root', action: 'read', resourceType: 'note', resourcePattern: '*', key: 'note:read:*' },
      ],
      role_permission: [
        { id: 'rp_doc', roleId: 'role_reader', permissionId: 'permission_doc' },
        { id: 'rp_note', roleId: 'role_reader', permissionId: 'permission_note' },
      ],
      membership: [{ id: 'membership_admin', subjectId: 'subject_admin', scopeId: 'scope_root' }],
      role_assignment: [{ id: 'ra_admin', membershipId: 'membership_admin', roleId: 'role_reader' }],
      resource_type: [
        { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'doc' },
        { id: 'resource_type_note', key: 'note', scopeId: 'scope_root', name: 'note' },
      ],
      resource: [
        { id: 'resource_doc', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_root', externalResourceId: 'doc', displayName: 'doc', attributes: { text: 'ab'.repeat(8_000) }, createdAt: '2025-01-01T00:00:00Z', createdBy: 's' },
        { id: 'resource_note', resourceTypeId: 'resource_type_note', ownerScopeId: 'scope_root', externalResourceId: 'note', createdAt: '2025-01-01T00:00:00Z', createdBy: 's' },
      ],
      collection: collections.map((c) => ({ ...c, scopeId: 'scope_root', resourceTypeId: 'resource_type_doc', name: c.id })),
      policy: policies.map((p, i) => ({
        id: `policy_${String(i).padStart(2, '0')}`,
        scopeId: 'scope_root',
        target: { kind: 'resource', resourceId: 'resource_doc' },
        actions: ['read'],
        effect: 'allow',
        priority: 0,
        ...p,
      })),
    },
  } as unknown as TenantSnapshot;
  if (rowOrder === 'reversed') for (const kind of ['collection', 'policy'] as const) (snapshot.rows[kind] as unknown[]).reverse();
  return TenantIndex.fromSnapshot(snapshot);
}

const ask = (subjectId: string, extra: Partial<EvaluateRequest> = {}): EvaluateRequest => ({
  actor: { subjectId },
  scopeId: 'scope_root',
  action: 'read',
  resource: { resourceId: 'resource_doc' },
  ...extra,
});

/** Visits every element of `xs` (never true): 4 operations an element (`==`, `var`, its argument, `-1`). */
const scan: JsonValue = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
const huge = { xs: Array.from({ length: 100_000 }, (_, i) => i) };
const traceText = (d: Decision) => JSON.stringify(d.trace);
const details = (d: Decision) => (d.trace ?? []).filter((s) => s.leg === 'policy' && s.detail?.policyId).map((s) => s.detail as Record<string, unknown>);

describe('a condition past its budget errors and fails closed', () => {
  it('a deny whose condition runs out applies, saying why', () => {
    const index = tenant([{ effect: 'deny', contextCondition: scan }]);
    const d = evaluate(index, ask('subject_admin', { context: huge, explain: true }), opts);
    expect(d).toMatchObject({ allowed: false, reason: 'policy_deny', evaluatedPolicy: { id: 'policy_00' } });
    expect(details(d)[0].contextConditionError).toBe(`evaluation budget exhausted: the condition took more than ${CONDITION_MAX_OPERATIONS} operations`);
    expect(traceText(d)).toContain('contextCondition errored (evaluation budget exhausted: the condition took more than 10000 operations): counted as matching, so this deny policy is applied to fail closed');
  });

  it('an allow whose condition runs out does not apply; roles still decide', () => {
    const index = tenant([{ effect: 'allow', subjectCondition: true, contextCondition: scan }]);
    const nobody = evaluate(index, ask('subject_nobody', { context: huge, explain: true }), opts);
    expect(nobody).toMatchObject({ allowed: false, reason: 'no_match' });
    expect(traceText(nobody)).toContain('this allow policy is not applied (fail closed)');
    expect(evaluate(index, ask('subject_admin', { context: huge }), opts)).toMatchObject({ allowed: true, reason: 'role' });
  });

  it('the same condition over a short array passes as before', () => {
    const index = tenant([{ effect: 'allow', contextCondition: { some: [{ var: 'xs' }, { '==': [{ var: '' }, 3] }] } }]);
    expect(evaluate(index, ask('subject_nobody', { context: { xs: [1, 2, 3] } }), opts)).toMatchObject({ allowed: true, reason: 'policy_allow' });
  });

  it('one operation over a huge array is charged its size', () => {
    // `in` is one node; over 200,000 elements it costs 12,500 operations.
    const index = tenant([{ effect: 'deny', contextCondition: { in: [-1, { var: 'xs' }] } }]);
    const big = { xs: Array.from({ length: 200_000 }, (_, i) => i) };
    const d = evaluate(index, ask('subject_admin', { context: big, explain: true }), opts);
    expect(d.reason).toBe('policy_deny');
    expect(details(d)[0].contextConditionError).toMatch(/^evaluation budget exhausted/);
    expect(evaluate(index, ask('subject_admin', { context: { xs: [1, 2, 3] } }), opts)).toMatchObject({ allowed: true, reason: 'role' });
  });
});

describe('a decision past its budget', () => {
  // Each costs ~8,000 operations over 2,000 elements: three fit in a decision, the fourth does not.
  const costly: JsonValue = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
  const xs = { xs: Array.from({ length: 2_000 }, (_, i) => i) };

  it('errors the conditions left, without running them (a trivial one too)', () => {
    const index = tenant([
      ...Array.from({ length: 4 }, () => ({ effect: 'allow' as const, contextCondition: costly })),
      { effect: 'deny', contextCondition: { '==': [1, 2] } },
    ]);
    const d = evaluate(index, ask('subject_admin', { context: xs, explain: true }), opts);
    const errors = details(d).map((x) => x.contextConditionError);
    expect(errors.slice(0, 3)).toEqual([undefined, undefined, undefined]);
    expect(errors[3]).toBe(`evaluation budget exhausted: the decision's ${DECISION_MAX_OPERATIONS} operations are spent`);
    // `1 == 2` would be false (the deny would not apply); with nothing left it errors and applies.
    expect(errors[4]).toBe(`evaluation budget exhausted: the decision's ${DECISION_MAX_OPERATIONS} operations are spent`);
    expect(d).toMatchObject({ allowed: false, reason: 'policy_deny', evaluatedPolicy: { id: 'policy_04' } });
  });

  // A sidecar receives rows in another order than the control plane's store gives them; which
  // condition the budget runs out on must not depend on it, or the two would decide differently.
  it('runs policies and match definitions in one order (priority, then id), whatever order the index got its rows in', () => {
    const policies: Partial<Policy>[] = [
      ...Array.from({ length: 4 }, () => ({ effect: 'allow' as const, contextCondition: costly })),
      { effect: 'deny', contextCondition: { '==': [1, 2] } },
    ];
    const collections = Array.from({ length: 6 }, (_, i) => ({ id: `collection_${i}`, matchDefinition: { patterns: { 'attributes.text': `(?:q${i})?(a|b)*c` } } }));
    for (const [ps, cs] of [[policies, []], [[], collections]] as const) {
      const asGiven = evaluate(tenant([...ps], [...cs]), ask('subject_nobody', { context: xs, explain: true }), opts);
      const reversed = evaluate(tenant([...ps], [...cs], 'reversed'), ask('subject_nobody', { context: xs, explain: true }), opts);
      expect(reversed).toEqual(asGiven);
    }
    // Higher priority first: a priority-1 deny runs (and does not hold) before the allows have
    // spent the budget; the last allow runs out, which an allow survives by not applying.
    const ranked = tenant([...policies.slice(0, 4), { effect: 'deny', priority: 1, contextCondition: { '==': [1, 2] } }], [], 'reversed');
    const d = evaluate(ranked, ask('subject_nobody', { context: xs, explain: true }), opts);
    expect(details(d).map((x) => x.policyId)).toEqual(['policy_04', 'policy_00', 'policy_01', 'policy_02', 'policy_03']);
    expect(details(d).map((x) => x.contextConditionError)).toEqual([undefined, undefined, undefined, undefined, `evaluation budget exhausted: the decision's ${DECISION_MAX_OPERATIONS} operations are spent`]);
    expect(d).toMatchObject({ allowed: false, reason: 'no_match' });
  });

  it('each decision has a budget of its own without a batch', () => {
    const index = tenant(Array.from({ length: 3 }, () => ({ effect: 'deny' as const, contextCondition: costly })));
    for (let i = 0; i < 5; i++) expect(evaluate(index, ask('subject_admin', { context: xs }), opts)).toMatchObject({ allowed: true, reason: 'role' });
  });

  it('collections and their regular expressions draw on it too: thousands on 16 KiB attributes cannot stall a decision', () => {
    const collections = Array.from({ length: 2_000 }, (_, i) => ({ id: `collection_${i}`, matchDefinition: { patterns: { 'attributes.text': `(?:q${i})?(a|b)*c` } } }));
    const index = tenant([], collections);
    // Deny policies of the collections: a collection that cannot be matched brings its denies in.
    for (let i = 0; i < collections.length; i++) {
      index.apply(2 + i, [{ op: 'upsert', kind: 'policy', id: `policy_c${i}`, row: { id: `policy_c${i}`, scopeId: 'scope_root', target: { kind: 'collection', collectionId: `collection_${i}` }, actions: ['read'], effect: 'deny', priority: 0 } }]);
    }
    const t0 = performance.now();
    const d = evaluate(index, ask('subject_admin', { explain: true }), opts);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(d).toMatchObject({ allowed: false, reason: 'policy_deny' });
    expect(traceText(d)).toMatch(/its match definition errored against the resource \(evaluation budget exhausted: the decision's 30000 operations are spent/);
  });
});

describe('a batch shares one budget', () => {
  const costly: JsonValue = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
  const xs = { xs: Array.from({ length: 2_000 }, (_, i) => i) };
  const index = tenant(Array.from({ length: 3 }, () => ({ effect: 'deny' as const, contextCondition: costly })));

  it('decisions draw on it until it is spent, then their conditions error at once', () => {
    const batch = new EvaluationBudget();
    const out = Array.from({ length: 10 }, () => evaluate(index, ask('subject_admin', { context: xs, explain: true }), { ...opts, budget: batch }));
    // ~24,000 operations a decision: eight fit in 200,000, the ninth gets the rest.
    const firstDenied = out.findIndex((d) => d.reason === 'policy_deny');
    expect(firstDenied).toBeGreaterThan(0);
    expect(out.slice(0, firstDenied).every((d) => d.reason === 'role')).toBe(true);
    expect(out.slice(firstDenied).every((d) => d.reason === 'policy_deny')).toBe(true);
    expect(details(out[9])[0].contextConditionError).toBe(`evaluation budget exhausted: the batch's ${BATCH_MAX_OPERATIONS} operations are spent`);
    expect(batch.left).toBe(0);
  });

  it('a smaller group budget caps each decision at what is left', () => {
    const batch = new EvaluationBudget(10_000);
    const first = evaluate(index, ask('subject_admin', { context: xs, explain: true }), { ...opts, budget: batch });
    expect(first.reason).toBe('policy_deny');
    expect(details(first)[1].contextConditionError).toBe("evaluation budget exhausted: the batch's 10000 operations are spent");
  });

  it('a role-only check, or policies without conditions, never touch it', () => {
    const batch = new EvaluationBudget();
    expect(evaluate(index, ask('subject_admin', { resource: { resourceId: 'resource_note' } }), { ...opts, budget: batch }).reason).toBe('role');
    expect(batch.left).toBe(BATCH_MAX_OPERATIONS);
    const plain = tenant([{ effect: 'allow' }]);
    expect(evaluate(plain, ask('subject_nobody'), { ...opts, budget: batch }).reason).toBe('policy_allow');
    expect(batch.left).toBe(BATCH_MAX_OPERATIONS);
  });
});

describe('explaining never changes a decision', () => {
  it('conditions run only for the explanation do not draw on the decision', () => {
    // Three costly conditions on a policy for another action: a decision skips them, an
    // explanation runs them. The deny that decides must not find the budget spent.
    const costly: JsonValue = { some: [{ var: 'xs' }, { '==': [{ var: '' }, -1] }] };
    const index = tenant([
      ...Array.from({ length: 4 }, () => ({ effect: 'allow' as const, actions: ['write'], contextCondition: costly })),
      { effect: 'deny', contextCondition: { '==': [1, 2] } },
    ]);
    const request = ask('subject_admin', { context: { xs: Array.from({ length: 2_000 }, (_, i) => i) } });
    const plain = evaluate(index, request, opts);
    const explained = evaluate(index, { ...request, explain: true }, opts);
    expect([plain.allowed, plain.reason]).toEqual([true, 'role']);
    expect([explained.allowed, explained.reason]).toEqual([true, 'role']);
  });
});
