/**
 * Fail-closed behaviour: internal errors deny, unsafe rules and patterns never allow or hang.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { evaluate, type EvaluateRequest } from './evaluate.js';
import { TenantIndex } from './tenant-index/mod.js';
import type { TenantSnapshot } from './model.js';

const { tenant } = JSON.parse(readFileSync(new URL('./testdata/decisions.json', import.meta.url), 'utf8')) as { tenant: TenantSnapshot };
const opts = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };
const allowedRequest: EvaluateRequest = { actor: { subjectId: 'subject_admin' }, scopeId: 'scope_proj', action: 'read', resource: { resourceId: 'resource_doc1' } };

describe('internal errors deny', () => {
  it('the baseline request is allowed', () => {
    expect(evaluate(TenantIndex.fromSnapshot(tenant), allowedRequest, opts)).toMatchObject({ allowed: true, reason: 'role' });
  });

  it('an exception inside the index becomes a deny with reason error', () => {
    const index = TenantIndex.fromSnapshot(tenant);
    const boom = new Error('corrupted map');
    vi.spyOn(index, 'subjectNode').mockImplementation(() => {
      throw boom;
    });
    const onError = vi.fn();
    const d = evaluate(index, { ...allowedRequest, explain: true }, { ...opts, onError });
    expect(d).toMatchObject({ allowed: false, reason: 'error', decidedByPolicy: false, revision: 42 });
    expect(onError).toHaveBeenCalledWith(boom);
    // The caller sees that it failed, not the internals.
    expect(JSON.stringify(d.trace)).not.toContain('corrupted map');
  });

  it('an exception while reading the request denies', () => {
    const index = TenantIndex.fromSnapshot(tenant);
    const req = { ...allowedRequest };
    Object.defineProperty(req, 'action', { get: () => { throw new Error('boom'); } });
    expect(evaluate(index, req, opts)).toMatchObject({ allowed: false, reason: 'error' });
  });

  it('a failing onError hook does not change the deny', () => {
    const index = TenantIndex.fromSnapshot(tenant);
    vi.spyOn(index, 'scopePath').mockImplementation(() => { throw new Error('x'); });
    const d = evaluate(index, allowedRequest, { ...opts, onError: () => { throw new Error('logger down'); } });
    expect(d).toMatchObject({ allowed: false, reason: 'error' });
  });

  it.each([
    ['missing actor', { ...allowedRequest, actor: undefined }],
    ['empty action', { ...allowedRequest, action: '' }],
    ['both resource forms', { ...allowedRequest, resource: { resourceId: 'resource_doc1', externalResourceId: 'd1', resourceType: 'doc' } }],
    ['context that is not an object', { ...allowedRequest, context: [1, 2] }],
  ])('a malformed request (%s) denies with reason error', (_name, req) => {
    expect(evaluate(TenantIndex.fromSnapshot(tenant), req as unknown as EvaluateRequest, opts)).toMatchObject({ allowed: false, reason: 'error' });
  });

  it('a bad clock or gate mode denies', () => {
    const index = TenantIndex.fromSnapshot(tenant);
    expect(evaluate(index, allowedRequest, { now: new Date('nope'), gate: 'off' })).toMatchObject({ allowed: false, reason: 'error' });
    expect(evaluate(index, allowedRequest, { now: opts.now, gate: 'lenient' as 'off' })).toMatchObject({ allowed: false, reason: 'error' });
  });
});

describe('hostile policy data', () => {
  const base = TenantIndex.fromSnapshot(tenant);
  const withPolicy = (policy: Record<string, unknown>) => {
    const idx = TenantIndex.fromSnapshot(tenant);
    idx.apply(43, [{ op: 'upsert', kind: 'policy', id: 'policy_x', row: { id: 'policy_x', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_doc4' }, actions: ['read'], effect: 'allow', priority: 0, ...policy } }]);
    return idx;
  };
  const nobody: EvaluateRequest = { actor: { subjectId: 'subject_nobody' }, scopeId: 'scope_proj', action: 'read', resource: { resourceId: 'resource_doc4' } };

  it('a condition 33 levels deep never passes', () => {
    let deep: unknown = true;
    for (let i = 0; i < 33; i++) deep = { '!!': deep };
    expect(evaluate(withPolicy({ contextCondition: deep }), nobody, opts).allowed).toBe(false);
    let ok: unknown = true;
    for (let i = 0; i < 32; i++) ok = { '!!': ok };
    expect(evaluate(withPolicy({ contextCondition: ok }), nobody, opts)).toMatchObject({ allowed: true, reason: 'policy_allow' });
  });

  it('prototype reads in conditions never pass', () => {
    for (const cond of [{ '!!': { var: 'subject.__proto__' } }, { '!!': { var: 'subject.meta.constructor' } }, { '!!': { var: { cat: ['subject.constr', 'uctor'] } } }]) {
      expect(evaluate(withPolicy({ subjectCondition: cond }), nobody, opts).allowed).toBe(false);
    }
  });

  it('a method call in a condition never passes', () => {
    expect(evaluate(withPolicy({ contextCondition: { method: ['x', 'toString'] } }), { ...nobody, context: {} }, opts).allowed).toBe(false);
  });

  describe('a condition that errors fails closed', () => {
    let deep: unknown = true;
    for (let i = 0; i < 33; i++) deep = { '!!': deep };
    const grow = { reduce: [{ var: 'xs' }, { merge: [{ var: 'accumulator' }, { var: 'accumulator' }, [0]] }, []] };
    const longList = { xs: Array.from({ length: 20 }, (_, i) => i) };
    const admin: EvaluateRequest = { ...nobody, actor: { subjectId: 'subject_admin' } };
    const erroring: [string, Record<string, unknown>, Record<string, unknown> | undefined][] = [
      ['33 levels deep', { contextCondition: deep }, undefined],
      ['a prototype read', { subjectCondition: { '!!': { var: 'subject.__proto__' } } }, undefined],
      ['a method call', { contextCondition: { method: ['x', 'toString'] } }, undefined],
      ['a merge over the size limit at run time', { contextCondition: grow }, longList],
      ['a cat over the length limit at run time', { contextCondition: { reduce: [{ var: 'xs' }, { cat: [{ var: 'accumulator' }, { var: 'accumulator' }, 'x'] }, ''] } }, longList],
    ];

    it.each(erroring)('%s: a deny applies over a role allow', (_name, condition, context) => {
      const d = evaluate(withPolicy({ effect: 'deny', ...condition }), { ...admin, context, explain: true }, opts);
      expect(d).toMatchObject({ allowed: false, reason: 'policy_deny', evaluatedPolicy: { id: 'policy_x' } });
      expect(d.trace?.map((s) => s.message).join('\n')).toContain('errored');
    });

    it.each(erroring)('%s: an allow does not apply', (_name, condition, context) => {
      expect(evaluate(withPolicy({ effect: 'allow', ...condition }), { ...nobody, context }, opts)).toMatchObject({ allowed: false, reason: 'no_match' });
      // …and it does not deny either: role evaluation follows.
      expect(evaluate(withPolicy({ effect: 'allow', ...condition }), { ...admin, context }, opts)).toMatchObject({ allowed: true, reason: 'role' });
    });

    it('a condition that evaluates false without error leaves a deny unapplied', () => {
      // The variable is missing: it reads as null and the rule yields [] (falsy), not an error.
      expect(evaluate(withPolicy({ effect: 'deny', contextCondition: grow }), { ...admin, context: {} }, opts)).toMatchObject({ allowed: true, reason: 'role' });
      expect(evaluate(withPolicy({ effect: 'deny', contextCondition: grow }), { ...admin, context: { xs: [1, 2] } }, opts)).toMatchObject({ allowed: false, reason: 'policy_deny' });
    });
  });

  it('an unparsable window makes the policy inactive', () => {
    expect(evaluate(withPolicy({ validFrom: 'soon' }), nobody, opts).allowed).toBe(false);
  });

  it('a pathological regex in a collection finishes quickly', { timeout: 2000 }, () => {
    const idx = TenantIndex.fromSnapshot(tenant);
    idx.apply(43, [
      { op: 'upsert', kind: 'resource', id: 'resource_big', row: { id: 'resource_big', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_proj', externalResourceId: 'a'.repeat(100_000), createdAt: '2025-01-01T00:00:00Z', createdBy: 's' } },
      { op: 'upsert', kind: 'collection', id: 'collection_evil', row: { id: 'collection_evil', scopeId: 'scope_root', resourceTypeId: 'resource_type_doc', name: 'evil', matchDefinition: { patterns: { externalResourceId: '(a+)+$' } } } },
      { op: 'upsert', kind: 'policy', id: 'policy_evil', row: { id: 'policy_evil', scopeId: 'scope_root', target: { kind: 'collection', collectionId: 'collection_evil' }, actions: ['read'], effect: 'deny', priority: 0 } },
    ]);
    const d = evaluate(idx, { actor: { subjectId: 'subject_admin' }, scopeId: 'scope_proj', action: 'read', resource: { resourceId: 'resource_big' } }, opts);
    expect(d).toMatchObject({ allowed: false, reason: 'policy_deny' });
    expect(base.revision).toBe(42);
  });
});
