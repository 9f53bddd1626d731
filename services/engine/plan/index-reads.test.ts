/**
 * A plan reads the index's sets (the descendants of grant sources, policies on resources by
 * action, link rows, tag assignments, resource counts per type), never every resource of the
 * type: the reads are counted on a tenant of thousands of resources. Tenants where a shortcut
 * would show (a descendant found through a parent evaluate does not walk, deleted resources
 * still carrying links, policies and tags, writes after the index was built) check the plan
 * against evaluate for every resource, and the incrementally kept index against a rebuilt one.
 */
import { describe, expect, it, vi } from 'vitest';
import { evaluate, type GateMode } from '../evaluate.js';
import type { Change, Resource, TenantSnapshot } from '../model.js';
import { MAX_HIERARCHY_DEPTH, TenantIndex } from '../tenant-index/mod.js';
import { derivedState } from '../testdata/derived-state.js';
import { planResources, type PlanResourcesQuery } from './compile.js';
import { evaluateTree } from './tree.js';

const NOW = new Date('2025-06-01T12:00:00.000Z');
const RESOURCES = 3000;
const query: PlanResourcesQuery = { actor: { subjectId: 'subject_u' }, scopeId: 'scope_a', action: 'read', resourceType: 'doc' };

/** Permission patterns the subject's role holds (`doc:read:<pattern>`). */
const PATTERNS = ['resource_5', 'e7', 'resource_40', 'resource_41', 'resource_42'];

function snapshot(): TenantSnapshot {
  const edge = (id: string, parent: string, child: string, cascade: 'inherit' | 'none' = 'inherit') => ({ id, parentResourceId: parent, childResourceId: child, cascade });
  return {
    revision: 1,
    rows: {
      scope: [
        { id: 'scope_root', tenantId: 't', typeId: 'x', name: 'root', parentId: null },
        { id: 'scope_a', tenantId: 't', typeId: 'x', name: 'a', parentId: 'scope_root' },
        { id: 'scope_b', tenantId: 't', typeId: 'x', name: 'b', parentId: 'scope_root' },
      ],
      subject: [{ id: 'subject_u', type: 'user', externalId: 'u', metadata: {} }],
      resource_type: [
        { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' },
        { id: 'resource_type_doc2', key: 'doc', scopeId: 'scope_root', name: 'Doc too' },
      ],
      role: [
        { id: 'role_r', scopeId: 'scope_root', key: 'r', name: 'r' },
        { id: 'role_owner', scopeId: 'scope_root', key: 'owner', name: 'owner' },
      ],
      permission: [
        ...PATTERNS.map((p, i) => ({ id: `permission_${i}`, scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: p, key: `doc:read:${p}` })),
        { id: 'permission_owner', scopeId: 'scope_root', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' },
      ],
      role_permission: [
        ...PATTERNS.map((_, i) => ({ id: `role_permission_${i}`, roleId: 'role_r', permissionId: `permission_${i}` })),
        { id: 'role_permission_owner', roleId: 'role_owner', permissionId: 'permission_owner' },
      ],
      membership: [{ id: 'membership_u', subjectId: 'subject_u', scopeId: 'scope_root' }],
      role_assignment: [{ id: 'role_assignment_u', membershipId: 'membership_u', roleId: 'role_r' }],
      ownership_grant: [{ id: 'ownership_grant_1', subjectId: 'subject_u', resourceId: 'resource_10', roleId: 'role_owner' }],
      resource: Array.from({ length: RESOURCES }, (_, i) => ({
        id: `resource_${i}`, tenantId: 't', resourceTypeId: 'resource_type_doc', ownerScopeId: i % 3 ? 'scope_a' : 'scope_b', externalResourceId: `e${i}`,
        attributes: {}, createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'x',
      })) as Resource[],
      resource_edge: [
        // Grandchildren of a patterned source and of a granted one.
        edge('resource_edge_1', 'resource_5', 'resource_100'),
        edge('resource_edge_2', 'resource_100', 'resource_101'),
        edge('resource_edge_3', 'resource_10', 'resource_200'),
        edge('resource_edge_4', 'resource_200', 'resource_201', 'none'),
        // resource_300 hangs under a source too, but evaluate walks up the edge with the
        // smaller id, to resource_400, which gives nothing: found downward, not inherited.
        edge('resource_edge_a', 'resource_400', 'resource_300'),
        edge('resource_edge_b', 'resource_5', 'resource_300'),
      ],
      resource_scope_link: [
        { id: 'resource_scope_link_1', resourceId: 'resource_20', scopeId: 'scope_a', linkType: 'share' },
        { id: 'resource_scope_link_2', resourceId: 'resource_21', scopeId: 'scope_b', linkType: 'share' },
      ],
      policy: [
        { id: 'policy_allow_30', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_30' }, actions: ['read'], effect: 'allow', priority: 0 },
        { id: 'policy_deny_5', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_5' }, actions: ['*'], effect: 'deny', priority: 0 },
        { id: 'policy_write_31', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_31' }, actions: ['write'], effect: 'allow', priority: 0 },
        { id: 'policy_deny_prod', scopeId: 'scope_root', target: { kind: 'collection', collectionId: 'collection_prod' }, actions: ['read'], effect: 'deny', priority: 0 },
      ],
      collection: [{ id: 'collection_prod', scopeId: 'scope_root', resourceTypeId: 'resource_type_doc', name: 'prod', matchDefinition: { tags: { env: 'prod' } } }],
      tag_group: [
        { id: 'tag_group_env', key: 'env', scopeId: 'scope_root' },
        { id: 'tag_group_other', key: 'other', scopeId: 'scope_root' },
      ],
      tag: [
        { id: 'tag_prod', tagGroupId: 'tag_group_env', identifier: 'prod' },
        { id: 'tag_dev', tagGroupId: 'tag_group_env', identifier: 'dev' },
      ],
      tag_assignment: [
        { id: 'tag_assignment_40', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_40' },
        { id: 'tag_assignment_41', tagId: 'tag_dev', targetType: 'resource', targetId: 'resource_41' },
        { id: 'tag_assignment_42', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_42' },
        { id: 'tag_assignment_43', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_43' },
      ],
    },
  } as unknown as TenantSnapshot;
}

/** The plan under `gate`, checked against evaluate for every resource of the type (but residuals); the ids it allows. */
function allowedByPlan(index: TenantIndex, gate: GateMode): Set<string> {
  const plan = planResources(index, query, { now: NOW, gate });
  const allowed = new Set<string>();
  for (const node of index.resourcesInIdOrder('doc')) {
    const byPlan = evaluateTree(plan.condition, { resource: index.resource(index.resourceNodes.idOf(node)) as Resource, typeKey: 'doc' });
    const byEvaluate = evaluate(index, { ...query, resource: { resourceId: index.resourceNodes.idOf(node) } }, { now: NOW, gate }).allowed;
    // A residual is evaluate's to decide.
    if (byPlan !== undefined) expect(byPlan, `${index.resourceNodes.idOf(node)} under ${gate}`).toBe(byEvaluate);
    if (byPlan) allowed.add(index.resourceNodes.idOf(node));
  }
  return allowed;
}

const GATES: GateMode[] = ['off', 'links-fallback', 'strict'];

function apply(index: TenantIndex, changes: Change[]): void {
  expect(index.apply(index.revision + 1, changes)).toBe(true);
}

describe('a plan reads what it contains, not the resources of the type', () => {
  it('reads a handful of nodes on a tenant of thousands, and walks the type only while several types of the key have resources', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    const reads = {
      inIdOrder: vi.spyOn(index, 'resourcesInIdOrder'),
      node: vi.spyOn(index, 'resourceNode'),
      children: vi.spyOn(index, 'childLinks'),
      families: vi.spyOn(index, 'families'),
    };
    for (const gate of GATES) {
      for (const spy of Object.values(reads)) spy.mockClear();
      const plan = planResources(index, query, { now: NOW, gate });
      expect(plan.kind).toBe('conditional');
      expect(reads.inIdOrder).not.toHaveBeenCalled();
      expect(reads.families).not.toHaveBeenCalled();
      // Patterns, grants, links, policies, tags and the sources' descendants: about 20.
      expect(reads.node.mock.calls.length + reads.children.mock.calls.length).toBeLessThan(40);
    }
    apply(index, [{ op: 'upsert', kind: 'resource', id: 'resource_x', row: { id: 'resource_x', tenantId: 't', resourceTypeId: 'resource_type_doc2', ownerScopeId: 'scope_a', externalResourceId: 'ex', createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'x' } as Resource }]);
    reads.inIdOrder.mockClear();
    planResources(index, query, { now: NOW, gate: 'off' });
    expect(reads.inIdOrder).toHaveBeenCalledTimes(1);
    apply(index, [{ op: 'delete', kind: 'resource', id: 'resource_x' }]);
    reads.inIdOrder.mockClear();
    planResources(index, query, { now: NOW, gate: 'off' });
    expect(reads.inIdOrder).not.toHaveBeenCalled();
  });

  it('equals evaluate where a shortcut would not: descendants through a parent evaluate does not walk, none edges, policies of other actions', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    for (const gate of GATES) {
      const allowed = allowedByPlan(index, gate);
      // resource_5 is denied by its policy, its descendants inherit; resource_300 does not; resource_201 sits under a none edge.
      if (gate === 'off') expect([...allowed].sort()).toEqual(['resource_10', 'resource_100', 'resource_101', 'resource_200', 'resource_30', 'resource_41', 'resource_7']);
    }
  });

  it('finds descendants down to the depth evaluate walks up, and no deeper', () => {
    const t = snapshot();
    // A chain under resource_5: resource_1001 is 1 level down, resource_1066 66.
    const chain = Array.from({ length: 66 }, (_, i) => ({ id: `resource_edge_chain_${i}`, parentResourceId: i === 0 ? 'resource_5' : `resource_${1000 + i}`, childResourceId: `resource_${1001 + i}`, cascade: 'inherit' }));
    (t.rows.resource_edge as unknown[]).push(...chain);
    const index = TenantIndex.fromSnapshot(t);
    const allowed = allowedByPlan(index, 'off');
    expect(MAX_HIERARCHY_DEPTH).toBe(64);
    expect([allowed.has('resource_1001'), allowed.has('resource_1064'), allowed.has('resource_1065'), allowed.has('resource_1066')]).toEqual([true, true, false, false]);
  });

  it('leaves out deleted resources that still carry links, policies, tags and children', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    const gone = ['resource_20', 'resource_21', 'resource_30', 'resource_31', 'resource_43', 'resource_10', 'resource_100', 'resource_5'];
    // Named by the plan before (resource_31's policy names another action; resource_5 is a pattern, named by the role leg whatever its row).
    const named = gone.filter((id) => id !== 'resource_31' && id !== 'resource_5');
    const texts = () => GATES.map((gate) => JSON.stringify(planResources(index, query, { now: NOW, gate }).condition)).join();
    for (const id of named) expect(texts(), id).toContain(`"${id}"`);
    apply(index, gone.map((id) => ({ op: 'delete' as const, kind: 'resource' as const, id })));
    for (const gate of GATES) allowedByPlan(index, gate);
    for (const id of named) expect(texts(), id).not.toContain(`"${id}"`);
    // resource_101 inherited through resource_100, and resource_5's descendants through it: no longer.
    expect(allowedByPlan(index, 'off').has('resource_101')).toBe(false);
  });

  it('past the operation budget, leaves to evaluate the resources a policy of the action may concern, not those of policies of other actions', () => {
    const t = snapshot();
    const heavy = Array.from({ length: 4 }, () => ({ condition: { '==': [{ var: 'resource.attributes.tier' }, 'gold'] } }));
    (t.rows.collection as { matchDefinition: unknown }[])[0].matchDefinition = { all: [{ tags: { env: 'prod' } }, ...heavy] };
    const index = TenantIndex.fromSnapshot(t);
    const plan = planResources(index, query, { now: NOW, gate: 'off' });
    expect(JSON.stringify(plan.condition)).toContain('operations');
    const value = (id: string) => evaluateTree(plan.condition, { resource: index.resource(id) as Resource, typeKey: 'doc' });
    // A read policy's target and the tagged resources: evaluate decides. resource_31's policy is of write: the role leg decides.
    expect([value('resource_30'), value('resource_43'), value('resource_5')]).toEqual([undefined, undefined, undefined]);
    expect([value('resource_31'), value('resource_7'), value('resource_8')]).toEqual([false, true, false]);
    for (const gate of GATES) allowedByPlan(index, gate);
  });

  it('follows writes to the policies on resources and the tags, as a rebuilt index does', () => {
    const index = TenantIndex.fromSnapshot(snapshot());
    const rebuiltEquals = () => {
      const rows = snapshotOf(index);
      expect(derivedState(index)).toEqual(derivedState(TenantIndex.fromSnapshot(rows)));
    };
    expect(allowedByPlan(index, 'off').has('resource_5')).toBe(false);
    apply(index, [{ op: 'delete', kind: 'policy', id: 'policy_deny_5' }]);
    expect(allowedByPlan(index, 'off').has('resource_5')).toBe(true);
    apply(index, [{ op: 'upsert', kind: 'policy', id: 'policy_deny_5', row: { id: 'policy_deny_5', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_5' }, actions: ['read'], effect: 'deny', priority: 0 } }]);
    expect(allowedByPlan(index, 'off').has('resource_5')).toBe(false);
    apply(index, [{ op: 'upsert', kind: 'policy', id: 'policy_deny_5', row: { id: 'policy_deny_5', scopeId: 'scope_root', target: { kind: 'resource', resourceId: 'resource_5' }, actions: ['write'], effect: 'deny', priority: 0 } }]);
    expect(allowedByPlan(index, 'off').has('resource_5')).toBe(true);
    rebuiltEquals();

    expect(allowedByPlan(index, 'off').has('resource_40')).toBe(false);
    apply(index, [{ op: 'delete', kind: 'tag_assignment', id: 'tag_assignment_40' }]);
    expect(allowedByPlan(index, 'off').has('resource_40')).toBe(true);
    // The tag moves to another group: resource_42 no longer carries env=prod.
    expect(allowedByPlan(index, 'off').has('resource_42')).toBe(false);
    apply(index, [{ op: 'upsert', kind: 'tag', id: 'tag_prod', row: { id: 'tag_prod', tagGroupId: 'tag_group_other', identifier: 'prod' } }]);
    expect(allowedByPlan(index, 'off').has('resource_42')).toBe(true);
    // A tag deleted, then its identifier given to dev: resource_41 now carries env=prod.
    apply(index, [{ op: 'delete', kind: 'tag', id: 'tag_prod' }, { op: 'upsert', kind: 'tag', id: 'tag_dev', row: { id: 'tag_dev', tagGroupId: 'tag_group_env', identifier: 'prod' } }]);
    expect(allowedByPlan(index, 'off').has('resource_41')).toBe(false);
    rebuiltEquals();
  });
});

/** Every row of an index, as a snapshot at its revision (to rebuild it). */
function snapshotOf(index: TenantIndex): TenantSnapshot {
  const rows: Record<string, unknown[]> = {};
  const { kinds } = index.families();
  const original = snapshot().rows as Record<string, { id: string }[]>;
  for (const [kind, list] of Object.entries(original)) {
    const store = kinds[kind as keyof typeof kinds] as unknown as { get(id: string): unknown };
    rows[kind] = list.map((r) => store.get(r.id)).filter((r) => r !== undefined);
  }
  return { revision: index.revision, rows } as TenantSnapshot;
}
