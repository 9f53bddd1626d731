/**
 * Every entity kind has a store, and every store refuses what the kind's rows must not be,
 * naming the field, on each way in (snapshot, builder, change), leaving the index as it was.
 */
import { describe, expect, it } from 'vitest';
import { InvalidChangeError } from '../errors.js';
import { ENTITY_KINDS, type Change, type EntityKind, type TenantSnapshot } from '../model.js';
import { derivedState } from '../testdata/derived-state.js';
import { TenantIndex } from './mod.js';

/** One valid row of each kind. */
const VALID: { [K in EntityKind]: Record<string, unknown> } = {
  scope: { id: 'scope_1', tenantId: 't', parentId: null, typeId: 'st', name: 'root' },
  subject: { id: 'subject_1', type: 'user', externalId: 'u1' },
  role: { id: 'role_1', scopeId: 'scope_1', key: 'r', name: 'r' },
  permission: { id: 'permission_1', scopeId: 'scope_1', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' },
  role_permission: { id: 'role_permission_1', roleId: 'role_1', permissionId: 'permission_1' },
  membership: { id: 'membership_1', subjectId: 'subject_1', scopeId: 'scope_1' },
  role_assignment: { id: 'role_assignment_1', membershipId: 'membership_1', roleId: 'role_1' },
  scope_override: { id: 'scope_override_1', scopeId: 'scope_1', roleId: 'role_1', mode: 'block', permissionIds: ['permission_1'] },
  ownership_grant: { id: 'ownership_grant_1', subjectId: 'subject_1', resourceId: 'resource_1', roleId: 'role_1' },
  resource_type: { id: 'resource_type_1', key: 'doc', scopeId: 'scope_1', name: 'Doc' },
  resource: { id: 'resource_1', resourceTypeId: 'resource_type_1', ownerScopeId: 'scope_1', externalResourceId: 'd1' },
  resource_scope_link: { id: 'resource_scope_link_1', resourceId: 'resource_1', scopeId: 'scope_1', linkType: 'shared' },
  resource_edge: { id: 'resource_edge_1', parentResourceId: 'resource_1', childResourceId: 'resource_2', cascade: 'inherit' },
  collection: { id: 'collection_1', scopeId: 'scope_1', resourceTypeId: 'resource_type_1', name: 'c', matchDefinition: {} },
  policy: { id: 'policy_1', scopeId: 'scope_1', effect: 'allow', actions: ['read'], target: { kind: 'resource', resourceId: 'resource_1' } },
  tag_group: { id: 'tag_group_1', key: 'team', scopeId: 'scope_1' },
  tag: { id: 'tag_1', tagGroupId: 'tag_group_1', identifier: 'a' },
  tag_assignment: { id: 'tag_assignment_1', tagId: 'tag_1', targetType: 'resource', targetId: 'resource_1' },
  tag_binding: { id: 'tag_binding_1', tagId: 'tag_1', roleId: 'role_1', scopeId: 'scope_1' },
};

/** The fields each kind's rows must carry as strings. */
const REQUIRED: { [K in EntityKind]: readonly string[] } = {
  scope: ['id'],
  subject: ['id', 'type'],
  role: ['id', 'scopeId'],
  permission: ['id', 'action', 'resourceType', 'resourcePattern'],
  role_permission: ['id', 'roleId', 'permissionId'],
  membership: ['id', 'subjectId', 'scopeId'],
  role_assignment: ['id', 'membershipId', 'roleId'],
  scope_override: ['id', 'scopeId', 'roleId', 'mode'],
  ownership_grant: ['id', 'subjectId', 'resourceId', 'roleId'],
  resource_type: ['id', 'key'],
  resource: ['id', 'resourceTypeId', 'ownerScopeId', 'externalResourceId'],
  resource_scope_link: ['id', 'resourceId', 'scopeId'],
  resource_edge: ['id', 'parentResourceId', 'childResourceId', 'cascade'],
  collection: ['id', 'scopeId', 'resourceTypeId'],
  policy: ['id', 'effect'],
  tag_group: ['id', 'key'],
  tag: ['id', 'tagGroupId', 'identifier'],
  tag_assignment: ['id', 'tagId', 'targetType', 'targetId'],
  tag_binding: ['id', 'tagId', 'roleId', 'scopeId'],
};

/** Rows refused beyond their required strings, with the message that names the field. */
const REFUSED: [EntityKind, Record<string, unknown>, string][] = [
  ['scope', { parentId: 7 }, 'scope.parentId must be a string'],
  ['scope_override', { mode: 'grant' }, 'scope_override.mode is invalid'],
  ['scope_override', { permissionIds: 'permission_1' }, 'scope_override.permissionIds must be an array of strings'],
  ['scope_override', { permissionIds: ['permission_1', 2] }, 'scope_override.permissionIds must be an array of strings'],
  ['policy', { target: null }, 'policy.target is invalid'],
  ['policy', { target: { kind: 'resource', collectionId: 'collection_1' } }, 'policy.target is invalid'],
  ['policy', { target: { kind: 'collection', resourceId: 'resource_1' } }, 'policy.target is invalid'],
  ['policy', { actions: 'read' }, 'policy.actions must be an array of strings'],
  ['policy', { actions: ['read', null] }, 'policy.actions must be an array of strings'],
  ['policy', { effect: 'maybe' }, 'policy.effect is invalid'],
  ['resource_edge', { cascade: 'sometimes' }, 'resource_edge.cascade is invalid'],
  ['tag_assignment', { targetType: 'role' }, 'tag_assignment.targetType is invalid'],
];

/** Every way a row reaches an index; each must throw InvalidChangeError with `message` and change nothing. */
function expectRefused(kind: EntityKind, row: unknown, message: string): void {
  const snapshot = { revision: 1, rows: { [kind]: [row] } } as unknown as TenantSnapshot;
  expect(() => TenantIndex.fromSnapshot(snapshot), `${kind} snapshot`).toThrow(new InvalidChangeError(message));
  expect(() => TenantIndex.builder().add(kind, row), `${kind} builder`).toThrow(new InvalidChangeError(message));
  const idx = TenantIndex.fromSnapshot({ revision: 1, rows: { scope: [VALID.scope as never] } });
  const before = derivedState(idx);
  const changes = [
    { op: 'upsert', kind: 'subject', id: 'subject_9', row: { id: 'subject_9', type: 'user', externalId: 'u9' } },
    { op: 'upsert', kind, id: typeof (row as { id?: unknown } | null)?.id === 'string' ? (row as { id: string }).id : 'x', row },
  ] as Change[];
  expect(() => idx.apply(2, changes), `${kind} change`).toThrow(new InvalidChangeError(message));
  expect(idx.revision).toBe(1);
  expect(derivedState(idx)).toEqual(before);
}

describe('the kind table', () => {
  it('keeps a valid row of every kind: counted, read back, removed', () => {
    const rows = Object.fromEntries(ENTITY_KINDS.map((k) => [k, [VALID[k]]])) as unknown as TenantSnapshot['rows'];
    const idx = TenantIndex.fromSnapshot({ revision: 1, rows });
    const getters: { [K in EntityKind]: (id: string) => unknown } = {
      scope: (id) => idx.scope(id), subject: (id) => idx.subject(id), role: (id) => idx.role(id), permission: (id) => idx.permission(id),
      role_permission: (id) => idx.rolePermission(id), membership: (id) => idx.membership(id), role_assignment: (id) => idx.roleAssignment(id),
      scope_override: (id) => idx.scopeOverride(id), ownership_grant: (id) => idx.ownershipGrant(id), resource_type: (id) => idx.resourceType(id),
      resource: (id) => idx.resource(id), resource_scope_link: (id) => idx.resourceScopeLink(id), resource_edge: (id) => idx.resourceEdge(id),
      collection: (id) => idx.collection(id), policy: (id) => idx.policy(id), tag_group: (id) => idx.tagGroup(id), tag: (id) => idx.tag(id),
      tag_assignment: (id) => idx.tagAssignment(id), tag_binding: (id) => idx.tagBinding(id),
    };
    for (const k of ENTITY_KINDS) {
      expect(idx.count(k), k).toBe(1);
      expect(getters[k](VALID[k].id as string), k).toEqual(VALID[k]);
    }
    idx.apply(2, ENTITY_KINDS.map((k) => ({ op: 'delete', kind: k, id: VALID[k].id as string }) as Change));
    for (const k of ENTITY_KINDS) {
      expect(idx.count(k), k).toBe(0);
      expect(getters[k](VALID[k].id as string), k).toBeUndefined();
    }
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot({ revision: 2, rows: {} })));
  });

  it.each(ENTITY_KINDS)('refuses a %s row missing any required string, or not an object', (kind) => {
    for (const field of REQUIRED[kind]) {
      for (const bad of [undefined, null, 5, ['x']]) expectRefused(kind, { ...VALID[kind], [field]: bad }, `${kind}.${field} must be a string`);
    }
    for (const row of [null, 'scope_1', 7]) expectRefused(kind, row, 'row is not an object');
    // Nothing else is required.
    const optional = Object.keys(VALID[kind]).filter((f) => !REQUIRED[kind].includes(f) && !REFUSED.some(([k, r]) => k === kind && f in r));
    const idx = TenantIndex.fromSnapshot({ revision: 1, rows: {} });
    const row = Object.fromEntries(Object.entries(VALID[kind]).filter(([f]) => !optional.includes(f)));
    expect(idx.apply(2, [{ op: 'upsert', kind, id: row.id, row } as unknown as Change])).toBe(true);
    expect(idx.count(kind)).toBe(1);
  });

  it.each(REFUSED)('refuses a %s row with %j: %s', (kind, fields, message) => {
    expectRefused(kind, { ...VALID[kind], ...fields }, message);
  });

  it('accepts the other values those checks allow', () => {
    const accepted: [EntityKind, Record<string, unknown>][] = [
      ['scope', { parentId: undefined }],
      ['scope', { parentId: 'scope_0' }],
      ...['block', 'add', 'remove'].map((mode) => ['scope_override', { mode, permissionIds: [] }] as [EntityKind, Record<string, unknown>]),
      ['policy', { effect: 'deny', actions: [], target: { kind: 'collection', collectionId: 'collection_1' } }],
      ['resource_edge', { cascade: 'none' }],
      ...['resource', 'subject', 'scope'].map((targetType) => ['tag_assignment', { targetType }] as [EntityKind, Record<string, unknown>]),
    ];
    for (const [kind, fields] of accepted) {
      const row = { ...VALID[kind], ...fields };
      expect(TenantIndex.fromSnapshot({ revision: 1, rows: { [kind]: [row] } } as unknown as TenantSnapshot).count(kind), `${kind} ${JSON.stringify(fields)}`).toBe(1);
    }
  });
});
