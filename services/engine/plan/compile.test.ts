/**
 * One test per rule of the plan's compilation: each builds a small tenant where the rule
 * decides, and checks the plan's answer for every resource (the tree's value, `?` where a
 * residual decides) against the expected one and against evaluate.
 */
import { describe, expect, it } from 'vitest';
import { evaluate, type GateMode } from '../evaluate.js';
import type { Policy, PolicyTarget, Resource, TenantSnapshot } from '../model.js';
import { TenantIndex } from '../tenant-index/mod.js';
import { planResources, type PlanResourcesQuery } from './compile.js';
import { evaluateTree } from './tree.js';

const NOW = new Date('2025-06-01T12:00:00.000Z');

type Rows = TenantSnapshot['rows'];

function tenant(extra: Partial<Rows>, resources: Partial<Resource>[]): TenantSnapshot {
  return {
    revision: 3,
    rows: {
      scope: [
        { id: 'scope_root', tenantId: 't', typeId: 'x', name: 'root', parentId: null },
        { id: 'scope_a', tenantId: 't', typeId: 'x', name: 'a', parentId: 'scope_root' },
        { id: 'scope_b', tenantId: 't', typeId: 'x', name: 'b', parentId: 'scope_root' },
      ],
      subject: [{ id: 'subject_u', type: 'user', externalId: 'u', metadata: { dept: 'a' } }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' }],
      role: [{ id: 'role_r', scopeId: 'scope_root', key: 'r', name: 'r' }],
      membership: [{ id: 'membership_u', subjectId: 'subject_u', scopeId: 'scope_root' }],
      resource: resources.map((r, i) => ({
        id: `resource_${i}`, tenantId: 't', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_a', externalResourceId: `e${i}`,
        attributes: { n: i, tier: i % 2 ? 'gold' : 'silver' }, createdAt: `2025-0${(i % 9) + 1}-01T00:00:00.000Z`, createdBy: 'x', ...r,
      })) as Resource[],
      ...extra,
    },
  } as TenantSnapshot;
}

/** Role role_r held at scope_root with these permissions (`action:type:pattern`). */
function withRole(...keys: string[]): Partial<Rows> {
  return {
    permission: keys.map((key, i) => {
      const [resourceType, action, resourcePattern] = key.split(':');
      return { id: `permission_${i}`, scopeId: 'scope_root', action, resourceType, resourcePattern, key };
    }),
    role_permission: keys.map((_, i) => ({ id: `role_permission_${i}`, roleId: 'role_r', permissionId: `permission_${i}` })),
    role_assignment: [{ id: 'role_assignment_u', membershipId: 'membership_u', roleId: 'role_r' }],
  };
}

/** The plan's answer per resource ('?' where a residual decides), checked against evaluate. */
function answers(t: TenantSnapshot, q: Partial<PlanResourcesQuery> = {}, gate: GateMode = 'off') {
  const index = TenantIndex.fromSnapshot(t);
  const query: PlanResourcesQuery = { actor: { subjectId: 'subject_u' }, scopeId: 'scope_a', action: 'read', resourceType: 'doc', ...q };
  const plan = planResources(index, query, { now: NOW, gate });
  const out: Record<string, boolean | '?'> = {};
  for (const node of index.resourcesInIdOrder('doc')) {
    const v = evaluateTree(plan.condition, { resource: index.resource(index.resourceNodes.idOf(node)) as Resource, typeKey: 'doc' });
    const allowed = evaluate(index, { ...query, resource: { resourceId: index.resourceNodes.idOf(node) } }, { now: NOW, gate }).allowed;
    if (v !== undefined) expect(v, index.resourceNodes.idOf(node)).toBe(allowed);
    out[index.resourceNodes.idOf(node)] = v ?? '?';
  }
  return { plan, out };
}

const three = [{}, {}, {}];

describe('planResources compiles each rule', () => {
  it('an unknown subject, or one of another type than asked, is always_denied', () => {
    const t = tenant(withRole('doc:read:*'), three);
    expect(answers(t, { actor: { subjectId: 'subject_zz' } }).plan.kind).toBe('always_denied');
    expect(answers(t, { actor: { subjectId: 'subject_u', subjectType: 'agent' } }).plan.kind).toBe('always_denied');
    expect(answers(t, { actor: { externalId: 'u' } }).plan.kind).toBe('always_allowed');
  });

  it('a role permission with pattern * allows every resource of the type', () => {
    expect(answers(tenant(withRole('doc:read:*'), three)).plan.kind).toBe('always_allowed');
    expect(answers(tenant(withRole('*:*:*'), three)).plan.kind).toBe('always_allowed');
    expect(answers(tenant(withRole('folder:read:*'), three)).plan.kind).toBe('always_denied');
    expect(answers(tenant(withRole('doc:write:*'), three)).plan.kind).toBe('always_denied');
  });

  it('a role permission patterned to an id or an external id allows that resource', () => {
    const { plan, out } = answers(tenant(withRole('doc:read:resource_0', 'doc:read:e2'), three));
    expect(plan.kind).toBe('conditional');
    expect(out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
  });

  it('roles are held at the scope or above only', () => {
    const t = tenant({ ...withRole('doc:read:*'), membership: [{ id: 'membership_u', subjectId: 'subject_u', scopeId: 'scope_b' }] }, three);
    expect(answers(t).plan.kind).toBe('always_denied');
  });

  it('an ownership grant allows its resource, when its role is defined at the owner scope or above', () => {
    const grants = withRole('doc:read:*');
    const t = tenant({ ...grants, role_assignment: [], ownership_grant: [{ id: 'ownership_grant_1', subjectId: 'subject_u', resourceId: 'resource_1', roleId: 'role_r' }] }, three);
    expect(answers(t).out).toEqual({ resource_0: false, resource_1: true, resource_2: false });
    const far = tenant({ ...grants, role_assignment: [], role: [{ id: 'role_r', scopeId: 'scope_b', key: 'r', name: 'r' }], ownership_grant: [{ id: 'ownership_grant_1', subjectId: 'subject_u', resourceId: 'resource_1', roleId: 'role_r' }] }, three);
    expect(answers(far).plan.kind).toBe('always_denied');
  });

  it('inheritance: a child reached through inherit edges from a resource a permission names is allowed; a none edge stops it', () => {
    const edges = [
      { id: 'resource_edge_1', parentResourceId: 'resource_0', childResourceId: 'resource_1', cascade: 'inherit' as const },
      { id: 'resource_edge_2', parentResourceId: 'resource_1', childResourceId: 'resource_2', cascade: 'inherit' as const },
      { id: 'resource_edge_3', parentResourceId: 'resource_0', childResourceId: 'resource_3', cascade: 'none' as const },
    ];
    const t = tenant({ ...withRole('doc:read:resource_0'), resource_edge: edges }, [{}, {}, {}, {}]);
    expect(answers(t).out).toEqual({ resource_0: true, resource_1: true, resource_2: true, resource_3: false });
  });

  it('the strict gate: the owner scope or a linked scope is the scope or an ancestor', () => {
    const t = tenant({ ...withRole('doc:read:*'), resource_scope_link: [{ id: 'rsl_1', resourceId: 'resource_2', scopeId: 'scope_a', linkType: 'share' }] }, [{}, { ownerScopeId: 'scope_b' }, { ownerScopeId: 'scope_b' }]);
    expect(answers(t, {}, 'strict').out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
    expect(answers(t, {}, 'off').plan.kind).toBe('always_allowed');
  });

  it('the links-fallback gate gates only resources that have links', () => {
    const t = tenant({ ...withRole('doc:read:*'), resource_scope_link: [{ id: 'rsl_1', resourceId: 'resource_2', scopeId: 'scope_b', linkType: 'share' }] }, [{}, { ownerScopeId: 'scope_b' }, { ownerScopeId: 'scope_b' }]);
    expect(answers(t, {}, 'links-fallback').out).toEqual({ resource_0: true, resource_1: true, resource_2: false });
  });

  const policy = (id: string, target: PolicyTarget, effect: 'allow' | 'deny', extra: Partial<Policy> = {}): Policy => ({ id, scopeId: 'scope_root', target, actions: ['read'], effect, priority: 0, ...extra });

  it('a direct deny policy denies its resource whatever the roles; a direct allow allows without a role', () => {
    const t = tenant({ ...withRole('doc:read:*'), policy: [policy('policy_d', { kind: 'resource', resourceId: 'resource_1' }, 'deny')] }, three);
    expect(answers(t).out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
    const a = tenant({ policy: [policy('policy_a', { kind: 'resource', resourceId: 'resource_2' }, 'allow')] }, three);
    expect(answers(a).out).toEqual({ resource_0: false, resource_1: false, resource_2: true });
  });

  it('priorities: the highest matching group decides, a deny in it wins', () => {
    const t = tenant({
      policy: [
        policy('policy_allow_hi', { kind: 'resource', resourceId: 'resource_0' }, 'allow', { priority: 5 }),
        policy('policy_deny_lo', { kind: 'resource', resourceId: 'resource_0' }, 'deny', { priority: 1 }),
        policy('policy_deny_lo2', { kind: 'resource', resourceId: 'resource_1' }, 'deny', { priority: 1 }),
        policy('policy_allow_lo', { kind: 'resource', resourceId: 'resource_1' }, 'allow', { priority: 1 }),
        policy('policy_allow_2', { kind: 'resource', resourceId: 'resource_2' }, 'allow', { priority: 1 }),
      ],
    }, three);
    expect(answers(t).out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
  });

  it('a policy whose action, window or subjectCondition fails is left out; a contextCondition that errors makes a deny apply', () => {
    const t = (p: Partial<Policy>) => tenant({ ...withRole('doc:read:*'), policy: [policy('policy_d', { kind: 'resource', resourceId: 'resource_1' }, 'deny', p)] }, three);
    expect(answers(t({ actions: ['write'] })).plan.kind).toBe('always_allowed');
    expect(answers(t({ validUntil: '2025-01-01T00:00:00Z' })).plan.kind).toBe('always_allowed');
    expect(answers(t({ validUntil: 'not a time' })).out.resource_1).toBe(false);
    expect(answers(t({ subjectCondition: { '==': [{ var: 'subject.meta.dept' }, 'b'] } })).plan.kind).toBe('always_allowed');
    expect(answers(t({ contextCondition: { log: 'x' } })).out.resource_1).toBe(false);
    expect(answers(t({ contextCondition: { '==': [{ var: 'ip' }, '10.0.0.1'] } }), { context: { ip: '10.0.0.1' } }).out.resource_1).toBe(false);
    expect(answers(t({ contextCondition: { '==': [{ var: 'ip' }, '10.0.0.1'] } }), { context: { ip: '10.0.0.2' } }).plan.kind).toBe('always_allowed');
  });

  const collection = (matchDefinition: unknown, effect: 'allow' | 'deny' = 'deny') => ({
    ...withRole('doc:read:*'),
    collection: [{ id: 'collection_c', scopeId: 'scope_root', resourceTypeId: 'resource_type_doc', name: 'c', matchDefinition }],
    policy: [policy('policy_c', { kind: 'collection', collectionId: 'collection_c' }, effect)],
  }) as Partial<Rows>;

  it('a collection\'s fields operators become comparisons on the resource\'s fields', () => {
    const { plan, out } = answers(tenant(collection({ fields: { 'attributes.tier': 'gold' } }), three));
    expect(plan.condition).toEqual({ kind: 'not', of: { kind: 'compare', field: 'attributes.tier', operator: 'eq', value: 'gold' } });
    expect(out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
    expect(answers(tenant(collection({ fields: { 'attributes.n': { gte: 1 }, externalResourceId: { endsWith: '2' } } }), three)).out).toEqual({ resource_0: true, resource_1: true, resource_2: false });
    expect(answers(tenant(collection({ fields: { resourceTypeId: 'resource_type_doc' } }), three)).plan.kind).toBe('always_denied');
  });

  it('a collection\'s tags become the ids of the resources carrying them', () => {
    const t = tenant({
      ...collection({ tags: { env: 'prod' } }),
      tag_group: [{ id: 'tag_group_env', key: 'env', scopeId: 'scope_root' }],
      tag: [{ id: 'tag_prod', tagGroupId: 'tag_group_env', identifier: 'prod' }],
      tag_assignment: [{ id: 'tag_assignment_1', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_2' }],
    }, three);
    expect(answers(t).out).toEqual({ resource_0: true, resource_1: true, resource_2: false });
  });

  it('time on createdAt becomes instant comparisons', () => {
    const { out } = answers(tenant(collection({ time: { field: 'createdAt', between: ['2025-02-01T00:00:00Z', '2025-03-01T00:00:00Z'] } }), three));
    expect(out).toEqual({ resource_0: true, resource_1: false, resource_2: true });
  });

  it('regular expressions and conditions reading the resource are residual; a condition reading nothing is a constant', () => {
    expect(answers(tenant(collection({ patterns: { externalResourceId: '1$' } }), three)).out).toEqual({ resource_0: '?', resource_1: '?', resource_2: '?' });
    const cond = answers(tenant(collection({ condition: { '==': [{ var: 'resource.attributes.tier' }, 'gold'] } }), three));
    expect([cond.plan.hasResidual, cond.out.resource_0]).toEqual([true, '?']);
    expect(answers(tenant(collection({ condition: { '==': [1, 1] } }), three)).plan.kind).toBe('always_denied');
  });

  it('a definition that errors brings in its denies, not its allows', () => {
    const invalid = { fields: { 'attributes.tier': { in: 'gold' } } };
    expect(answers(tenant(collection(invalid, 'deny'), three)).plan.kind).toBe('always_denied');
    const allowOnly = { ...collection(invalid, 'allow'), role_assignment: [] };
    expect(answers(tenant(allowOnly, three)).plan.kind).toBe('always_denied');
    expect(answers(tenant({ ...collection({ fields: { 'attributes.tier': 'gold' } }, 'allow'), role_assignment: [] }, three)).out).toEqual({ resource_0: false, resource_1: true, resource_2: false });
  });

  it('a collection applies to resources of its own type id when several types share the key', () => {
    const t = tenant({ ...collection({}), resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' }, { id: 'resource_type_doc2', key: 'doc', scopeId: 'scope_root', name: 'Doc2' }] }, [{}, { resourceTypeId: 'resource_type_doc2' }]);
    expect(answers(t).out).toEqual({ resource_0: false, resource_1: true });
  });

  it('rules that together may spend more than a decision\'s budget leave the resources they concern to evaluate', () => {
    const heavy = { all: Array.from({ length: 4 }, () => ({ condition: { '==': [{ var: 'resource.attributes.tier' }, 'gold'] } })) };
    const { plan, out } = answers(tenant(collection(heavy), three));
    expect(plan.hasResidual).toBe(true);
    expect(JSON.stringify(plan.condition)).toContain('operations');
    expect(out).toEqual({ resource_0: '?', resource_1: '?', resource_2: '?' });
  });
});
