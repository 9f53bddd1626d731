import { describe, expect, it } from 'vitest';
import { InvalidChangeError } from '../errors.js';
import { evaluate } from '../evaluate.js';
import type { Change, Resource, ResourceEdge, Scope, TenantSnapshot } from '../model.js';
import { derivedState } from '../testdata/derived-state.js';
import { MAX_HIERARCHY_DEPTH, TenantIndex } from './mod.js';

const now = new Date('2025-06-01T10:00:00Z');
const opts = { now, gate: 'off' as const };

function scope(id: string, parentId: string | null): Scope {
  return { id, tenantId: 't', parentId, typeId: 'st', name: id };
}
function doc(id: string): Resource {
  return { id, resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: `ext-${id}`, createdAt: '2025-01-01T00:00:00Z', createdBy: 's' };
}
function edge(parent: string, child: string, cascade: 'inherit' | 'none' = 'inherit'): ResourceEdge {
  return { id: `resource_edge_${parent}_${child}`, parentResourceId: parent, childResourceId: child, cascade };
}

/** A subject with role_r (doc:read:<pattern>) through a membership at `membershipScope`. */
function tenant(scopes: Scope[], membershipScope: string, pattern = '*', extra: Partial<TenantSnapshot['rows']> = {}): TenantSnapshot {
  return {
    revision: 1,
    rows: {
      scope: scopes,
      subject: [{ id: 'subject_s', type: 'user', externalId: 's' }],
      role: [{ id: 'role_r', scopeId: scopes[0].id, key: 'r', name: 'r' }],
      permission: [{ id: 'permission_p', scopeId: scopes[0].id, action: 'read', resourceType: 'doc', resourcePattern: pattern, key: `doc:read:${pattern}` }],
      role_permission: [{ id: 'role_permission_1', roleId: 'role_r', permissionId: 'permission_p' }],
      membership: [{ id: 'membership_1', subjectId: 'subject_s', scopeId: membershipScope }],
      role_assignment: [{ id: 'role_assignment_1', membershipId: 'membership_1', roleId: 'role_r' }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: scopes[0].id, name: 'Doc' }],
      ...extra,
    },
  };
}

const read = (scopeId: string, resourceId?: string) => ({
  actor: { subjectId: 'subject_s' },
  scopeId,
  action: 'read',
  ...(resourceId ? { resource: { resourceId } } : {}),
});

describe('hierarchy walks never loop and stop at depth 64', () => {
  it('caps a 100-deep scope chain at 64 ancestors', () => {
    const scopes = Array.from({ length: 100 }, (_, i) => scope(`scope_${i}`, i === 0 ? null : `scope_${i - 1}`));
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_0'));
    expect(idx.scopePath('scope_99').ids.length).toBe(MAX_HIERARCHY_DEPTH + 1);
    // A membership 64 levels up still counts; 65 levels up is beyond the walk.
    expect(evaluate(idx, read('scope_64'), opts).allowed).toBe(true);
    expect(evaluate(idx, read('scope_65'), opts).allowed).toBe(false);
  });

  it('terminates on a scope cycle', () => {
    const scopes = [scope('scope_a', 'scope_c'), scope('scope_b', 'scope_a'), scope('scope_c', 'scope_b')];
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_a'));
    expect(idx.scopePath('scope_b').ids).toEqual(['scope_b', 'scope_a', 'scope_c']);
    expect(evaluate(idx, read('scope_c'), opts)).toMatchObject({ allowed: true, reason: 'role' });
  });

  it('inherits from an ancestor 64 resources up, not 65', () => {
    const resources = Array.from({ length: 70 }, (_, i) => doc(`resource_${i}`));
    const edges = resources.slice(1).map((r, i) => edge(`resource_${i}`, r.id));
    const t = (pattern: string) =>
      TenantIndex.fromSnapshot(tenant([scope('scope_0', null)], 'scope_0', pattern, { resource: resources, resource_edge: edges }));
    expect(evaluate(t('resource_5'), read('scope_0', 'resource_69'), opts)).toMatchObject({ allowed: true, reason: 'inherited' });
    expect(evaluate(t('resource_4'), read('scope_0', 'resource_69'), opts)).toMatchObject({ allowed: false, reason: 'no_match' });
  });

  it('terminates on a resource cycle', () => {
    const resources = [doc('resource_a'), doc('resource_b'), doc('resource_c')];
    const edges = [edge('resource_a', 'resource_b'), edge('resource_b', 'resource_c'), edge('resource_c', 'resource_a')];
    const idx = TenantIndex.fromSnapshot(tenant([scope('scope_0', null)], 'scope_0', 'nothing', { resource: resources, resource_edge: edges }));
    const d = evaluate(idx, { ...read('scope_0', 'resource_a'), explain: true }, opts);
    expect(d).toMatchObject({ allowed: false, reason: 'no_match' });
    expect(d.trace?.map((s) => s.message).join('\n')).toContain('cycle at resource_a');
  });
});

describe('incremental updates', () => {
  const scopes = [scope('scope_0', null), scope('scope_1', 'scope_0'), scope('scope_2', 'scope_0'), scope('scope_3', 'scope_1')];

  it('re-parenting a scope invalidates the cached ancestors of its subtree', () => {
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_1'));
    expect(evaluate(idx, read('scope_3'), opts).allowed).toBe(true);
    idx.apply(2, [{ op: 'upsert', kind: 'scope', id: 'scope_3', row: scope('scope_3', 'scope_2') }]);
    expect(idx.scopePath('scope_3').ids).toEqual(['scope_3', 'scope_2', 'scope_0']);
    expect(evaluate(idx, read('scope_3'), opts).allowed).toBe(false);
    // Moving the parent moves the whole subtree.
    idx.apply(3, [{ op: 'upsert', kind: 'scope', id: 'scope_2', row: scope('scope_2', 'scope_1') }]);
    expect(idx.scopePath('scope_3').ids).toEqual(['scope_3', 'scope_2', 'scope_1', 'scope_0']);
    expect(evaluate(idx, read('scope_3'), opts).allowed).toBe(true);
  });

  it('a scope arriving after its children completes their paths', () => {
    const idx = TenantIndex.fromSnapshot(tenant([scope('scope_0', null), scope('scope_3', 'scope_1')], 'scope_0'));
    expect(idx.scopePath('scope_3').ids).toEqual(['scope_3']);
    idx.apply(2, [{ op: 'upsert', kind: 'scope', id: 'scope_1', row: scope('scope_1', 'scope_0') }]);
    expect(idx.scopePath('scope_3').ids).toEqual(['scope_3', 'scope_1', 'scope_0']);
  });

  it('deleting a scope drops the cached paths through it: it is unknown, and its children stop below it', () => {
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_1'));
    expect(evaluate(idx, read('scope_3'), opts).allowed).toBe(true);
    expect(idx.scopePath('scope_1').ids).toEqual(['scope_1', 'scope_0']);
    idx.apply(2, [{ op: 'delete', kind: 'scope', id: 'scope_1' }]);
    expect(idx.scopePath('scope_1').ids).toEqual([]);
    expect(idx.scopePath('scope_3').ids).toEqual(['scope_3']);
    expect(() => evaluate(idx, read('scope_1'), opts)).toThrow(/scope scope_1 not found/);
    // The membership at the deleted scope no longer reaches its former child.
    expect(evaluate(idx, read('scope_3'), opts).allowed).toBe(false);
  });

  it('deleting every row leaves no derived entry behind', () => {
    const t = tenant(scopes, 'scope_1', '*', {
      resource: [doc('resource_a'), doc('resource_b')],
      resource_edge: [edge('resource_a', 'resource_b')],
      policy: [{ id: 'policy_1', scopeId: 'scope_0', target: { kind: 'resource', resourceId: 'resource_a' }, actions: ['*'], effect: 'deny', priority: 0 }],
    });
    const idx = TenantIndex.fromSnapshot(t);
    const deletes: Change[] = [];
    for (const [kind, rows] of Object.entries(t.rows)) for (const row of rows ?? []) deletes.push({ op: 'delete', kind, id: row.id } as Change);
    idx.apply(2, deletes);
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot({ revision: 2, rows: {} })));
  });

  it('changing a permission re-indexes every role holding it', () => {
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_0'));
    expect(evaluate(idx, read('scope_0'), opts).allowed).toBe(true);
    idx.apply(2, [{ op: 'upsert', kind: 'permission', id: 'permission_p', row: { id: 'permission_p', scopeId: 'scope_0', action: 'write', resourceType: 'doc', resourcePattern: '*', key: 'doc:write:*' } }]);
    expect(evaluate(idx, read('scope_0'), opts).allowed).toBe(false);
    expect(evaluate(idx, { ...read('scope_0'), action: 'write' }, opts).allowed).toBe(true);
  });

  it('ignores replays and applies a malformed batch all-or-nothing', () => {
    const idx = TenantIndex.fromSnapshot(tenant(scopes, 'scope_0'));
    const before = derivedState(idx);
    expect(idx.apply(1, [{ op: 'delete', kind: 'membership', id: 'membership_1' }])).toBe(false);
    expect(() =>
      idx.apply(2, [
        { op: 'delete', kind: 'membership', id: 'membership_1' },
        { op: 'upsert', kind: 'membership', id: 'membership_2' },
      ]),
    ).toThrow(InvalidChangeError);
    expect(() => idx.apply(2, [{ op: 'upsert', kind: 'membership', id: 'x', row: { id: 'y', subjectId: 's', scopeId: 'scope_0' } }])).toThrow(/does not match/);
    expect(() => idx.apply(2, [{ op: 'upsert', kind: 'nope', id: 'x' } as unknown as Change])).toThrow(/unknown change kind/);
    expect(() => idx.apply(2, [{ op: 'upsert', kind: 'resource_edge', id: 'e', row: { ...edge('a', 'b'), id: 'e', cascade: 'sometimes' as 'none' } }])).toThrow(/cascade/);
    expect(derivedState(idx)).toEqual(before);
    expect(idx.revision).toBe(1);
    expect(evaluate(idx, read('scope_0'), opts).allowed).toBe(true);
  });

  it('rejects a malformed snapshot', () => {
    expect(() => TenantIndex.fromSnapshot({ revision: 1, rows: { policy: [{ id: 'p' } as never] } })).toThrow(InvalidChangeError);
  });
});
