/**
 * Random tenants and requests for the differential tests. Ids come from small pools so rows
 * collide on purpose (shared external ids, duplicate type keys, several edges per child, scope
 * and resource cycles, dangling references).
 */
import type { JsonObject, JsonValue, Policy, Subject, TenantSnapshot } from '../model.js';
import type { RefOptions, RefRequest } from './reference.js';

/** A source of numbers in [0, 1): `mulberry32` from test/seeded-random.ts, so a seed replays a case. */
export type Rng = () => number;

export const int = (r: Rng, min: number, max: number) => min + Math.floor(r() * (max - min + 1));
export const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
export const chance = (r: Rng, p: number) => r() < p;
const subset = <T>(r: Rng, xs: readonly T[], p = 0.4): T[] => xs.filter(() => chance(r, p));

export const CANARY = 'subject_canary';
/**
 * A subject with no row in any tenant, though dangling memberships, grants and tag assignments
 * name it: no generated request may ever allow it.
 */
export const UNKNOWN_SUBJECT = 'subject_unknown';
export const SUBJECTS = ['subject_a', 'subject_b', 'subject_c'];
export const TIMES = ['2025-01-01T00:00:00.000Z', '2025-03-01T09:30:00.000Z', '2025-06-01T18:00:00.000Z', '2025-09-01T23:59:59.000Z'];
const EXTS = ['e0', 'e1', 'e2', 'e3'];
const ACTIONS = ['read', 'write', '*'];
const TYPE_KEYS = ['doc', 'folder', '*'];

/**
 * Doubles an array once per element of the list at `path`: 14 or more elements exceed the
 * `merge` limit (10,000 items) while evaluating, so the condition errors at run time; a shorter
 * list passes and a missing one evaluates to [] (falsy, not an error).
 */
export const doublingCondition = (path: string): JsonValue => ({
  reduce: [{ var: path }, { merge: [{ var: 'accumulator' }, { var: 'accumulator' }, [0]] }, []],
});

/**
 * A definition drawn from every match feature; about one in four holds a part the control plane
 * refuses (a stored copy may predate a bound: it must error, never match) or errors at run time
 * (a doubling `condition` over a long `attributes.xs`).
 */
export function genMatch(r: Rng, depth = 0): JsonValue {
  if (depth === 0 && chance(r, 0.03)) return pick(r, DEEP_DEFINITIONS);
  const def: Record<string, JsonValue> = {};
  const n = int(r, 0, 2);
  for (let i = 0; i < n; i++) {
    if (chance(r, 0.12)) {
      Object.assign(def, pick(r, INVALID_MATCH_PARTS));
      continue;
    }
    switch (int(r, 0, depth < 2 ? 8 : 5)) {
      case 0:
        def.fields = pick(r, [
          { 'attributes.size': int(r, 0, 5) },
          { 'attributes.size': { gt: int(r, 0, 5) } },
          { 'attributes.size': { lte: int(r, 0, 5), gte: 1 } },
          { 'attributes.size': { in: [1, 2, null] } },
          { 'attributes.tier': { in: ['gold', 'bronze'] } },
          { 'attributes.tier': { nin: ['gold'] } },
          { 'attributes.tier': { in: [] } },
          { 'attributes.tier': { nin: [] } },
          { 'attributes.tier': { ne: 'silver' } },
          { 'attributes.labels': { contains: 'x' } },
          { externalResourceId: { startsWith: 'e' }, displayName: { endsWith: '1' } },
          { displayName: null },
          { 'attributes.tier': { regex: '^go' } },
          { 'attributes.nested.deep': true },
          { 'attributes.labels.0': 'x' },
          { ownerScopeId: 'scope_1' },
        ] as JsonValue[]);
        break;
      case 1:
        def.tags = pick(r, [{ env: 'prod' }, { team: ['red', 'blue'] }, { env: ['dev'], team: 'red' }] as JsonValue[]);
        break;
      case 2:
        def.patterns = pick(r, [{ externalResourceId: 'e[0-1]$' }, { id: '_[2-4]' }, { externalResourceId: '(a+)+$' }, { displayName: '(' }] as JsonValue[]);
        break;
      case 3:
        def.time = pick(r, [
          { field: 'createdAt', before: pick(r, TIMES) },
          { field: 'createdAt', after: pick(r, TIMES) },
          { field: 'createdAt', between: [TIMES[0], TIMES[2]] },
          { field: 'attributes.since', after: TIMES[1] },
        ] as JsonValue[]);
        break;
      case 4:
        def.condition = pick(r, RESOURCE_CONDITIONS);
        break;
      case 5:
        break;
      case 6:
        def.any = Array.from({ length: int(r, 0, 2) }, () => genMatch(r, depth + 1));
        break;
      case 7:
        def.all = Array.from({ length: int(r, 0, 2) }, () => genMatch(r, depth + 1));
        break;
      case 8:
        def.none = Array.from({ length: int(r, 1, 2) }, () => genMatch(r, depth + 1));
        break;
    }
  }
  return def;
}

/** `{"!": {"!": … true}}`, `levels` operations deep: true when `levels` is even. */
const nestedNot = (levels: number): JsonValue => {
  let rule: JsonValue = true;
  for (let i = 0; i < levels; i++) rule = { '!': rule };
  return rule;
};

/** `{all: [{all: [… {}]}]}`: `levels` definitions deep, matching everything. */
const nestedAll = (levels: number): JsonValue => {
  let def: JsonValue = {};
  for (let i = 1; i < levels; i++) def = { all: [def] };
  return def;
};

/** The deepest nesting allowed (32) and one level more. */
const DEEP_DEFINITIONS: JsonValue[] = [nestedAll(32), nestedAll(33)];

/** A loop over a literal array inside another: 40,000 operations over literal data, refused whatever runs. */
const COSTLY_LOOP: JsonValue = { some: [Array.from({ length: 200 }, (_, i) => i), { some: [Array.from({ length: 200 }, (_, i) => i), { '==': [1, 2] }] }] };
/** A literal object of 33 keys (32 at most). */
const WIDE_OBJECT: JsonValue = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i]));

/**
 * Rules a condition may not be, whatever data they meet: too deep, an operation that is not
 * allowed, a forbidden name, an array or object over its bound, a number that is not finite, a
 * cost over literal data beyond a condition's (even where the branch taken would be cheap).
 */
const INVALID_RULES: JsonValue[] = [
  nestedNot(33),
  { log: 'x' },
  { eval: ['1'] },
  { 'toString.call': [] },
  { '==': [{ var: 'x' }, { a: 1, constructor: 2 }] },
  { in: ['x', Array.from({ length: 1_001 }, (_, i) => i)] },
  { '==': [WIDE_OBJECT, 1] },
  { '==': [{ var: 'x' }, Number.NaN] },
  { and: [false, COSTLY_LOOP] },
  { if: [true, true, COSTLY_LOOP] },
];

/**
 * Conditions over a resource: ordinary ones, ones whose value is an array (empty or not), an
 * object, a string or a number (JSON Logic truthiness decides), the deepest allowed, invalid
 * ones, and one that errors at run time on a long list.
 */
const RESOURCE_CONDITIONS: JsonValue[] = [
  { '==': [{ var: 'resource.attributes.tier' }, 'gold'] },
  { '>': [{ var: 'resource.attributes.size' }, 2] },
  { in: ['scope_0', [{ var: 'resource.ownerScopeId' }]] },
  { in: ['gold', { var: 'resource.attributes.tier' }] },
  { var: 'resource.attributes.__proto__' },
  { var: 'resource.constructor.name' },
  { var: 'resource.attributes.labels' },
  { var: 'resource.attributes' },
  { var: 'resource.id.length' },
  { var: ['resource.attributes.none', []] },
  { filter: [{ var: 'resource.attributes.labels' }, { '==': [{ var: '' }, 'y'] }] },
  { missing: ['resource.attributes.tier', 'resource.displayName'] },
  { cat: [{ var: 'resource.attributes.labels' }] },
  { merge: [] },
  [],
  {},
  '0',
  0,
  '',
  nestedNot(32),
  { method: [{ var: 'resource.id' }, 'toString'] },
  ...INVALID_RULES,
  doublingCondition('resource.attributes.xs'),
];

/** Parts of a match definition the control plane refuses, one rule each (docs/decision-path.md). */
const INVALID_MATCH_PARTS: Record<string, JsonValue>[] = [
  { fields: { 'attributes.tier': { in: 'gold' } } },
  { fields: { 'attributes.tier': { nin: 'gold' } } },
  { fields: { 'attributes.tier': { in: [['gold']] } } },
  { fields: { 'attributes.tier': { nin: [{ tier: 'gold' }] } } },
  { fields: { 'attributes.tier': { in: null } } },
  { fields: { 'attributes.size': { gt: true } } },
  { fields: { 'attributes.size': { lte: [3] } } },
  { fields: { 'attributes.size': { between: [1, 3] } } },
  { fields: { 'attributes.size': {} } },
  { fields: { 'attributes.tier': ['gold', 'bronze'] } },
  { fields: { 'attributes.tier': { startsWith: 1 } } },
  { fields: { 'attributes.tier': { eq: { tier: 'gold' } } } },
  { fields: { 'attributes.labels': { contains: ['x'] } } },
  { fields: { 'attributes.tier': { regex: '(' } } },
  { fields: { 'attributes.tier': { regex: 7 } } },
  { fields: { 'attributes.': 1 } },
  { fields: { 'attributes.__proto__.x': 1 } },
  { fields: { owner: 'scope_0' } },
  { fields: ['attributes.size'] },
  { tags: { env: [] } },
  { tags: { env: 3 } },
  { tags: { '': 'prod' } },
  { tags: 'env' },
  { patterns: { externalResourceId: 5 } },
  { patterns: { owner: 'e' } },
  { patterns: { displayName: '(ab){600}' } },
  { patterns: Object.fromEntries(['id', 'externalResourceId', 'displayName', 'createdBy', 'attributes.tier'].map((f) => [f, '[a-z]{900}'])) },
  { time: { field: 'createdAt' } },
  { time: { field: 'createdAt', before: 'soon' } },
  { time: { field: 'createdAt', between: [TIMES[0]] } },
  { time: { field: 'createdAt', after: TIMES[0], until: TIMES[2] } },
  { time: { field: 'updatedAt', after: TIMES[0] } },
  ...INVALID_RULES.map((condition) => ({ condition })),
  { any: [5] },
  { all: 'x' },
  { none: [null] },
  { any: {} },
  { colour: 'red' },
];

const SUBJECT_CONDITIONS: JsonValue[] = [
  { '==': [{ var: 'subject.meta.dept' }, 'a'] },
  { in: [{ var: 'subject.meta.dept' }, ['a', 'b']] },
  { '>=': [{ var: 'subject.meta.level' }, 2] },
  { '==': [{ var: 'subject.type' }, 'user'] },
  { '==': [{ var: 'subject.constructor' }, null] },
  { var: 'subject.meta.xs' },
  { var: 'subject.meta' },
  { missing_some: [1, ['subject.meta.dept', 'subject.meta.level']] },
  { filter: [{ var: 'subject.meta.xs' }, { '>': [{ var: '' }, 1] }] },
  nestedNot(32),
  [0],
  ...INVALID_RULES,
  doublingCondition('subject.meta.xs'),
];
const CONTEXT_CONDITIONS: JsonValue[] = [
  { '==': [{ var: 'ip' }, '10.0.0.1'] },
  { '<': [9, { var: 'time.hour' }, 18] },
  { '==': [{ var: 'country' }, 'FR'] },
  { '!': { var: 'deviceType' } },
  { method: [{ var: 'ip' }, 'toString'] },
  { var: 'xs' },
  { var: 'time' },
  { var: 'ip.length' },
  { missing: ['ip', 'country'] },
  ...INVALID_RULES,
  doublingCondition('xs'),
];

/** Every condition the generator uses, for the tests that compare rules alone. */
export const GENERATED_CONDITIONS: readonly JsonValue[] = [...RESOURCE_CONDITIONS, ...SUBJECT_CONDITIONS, ...CONTEXT_CONDITIONS];

/** A list for doublingCondition: absent, short (passes) or long (errors at run time). */
const maybeList = (r: Rng): { xs?: number[] } => (chance(r, 0.5) ? { xs: Array.from({ length: pick(r, [0, 2, 14, 16]) }, (_, i) => i) } : {});

/** A random tenant; `salt` varies the shape between two tenants built over the same id pools. */
/** First groups of generated service-form resource ids (see genTenant). */
const UUID_HEADS = ['0192f3a4', '7fffffff', '80000000', 'f00dcafe', '0192f3a5'];

export function genTenant(r: Rng): TenantSnapshot {
  const nScopes = int(r, 1, 6);
  const scopeIds = Array.from({ length: nScopes }, (_, i) => `scope_${i}`);
  const scope = scopeIds.map((id, i) => ({
    id,
    tenantId: 'tenant_1',
    typeId: 'scope_type_x',
    name: id,
    parentId:
      i === 0
        ? chance(r, 0.05) ? pick(r, scopeIds) : null
        : chance(r, 0.05) ? pick(r, [...scopeIds, 'scope_missing']) : scopeIds[int(r, 0, i - 1)],
  }));
  const subject: Subject[] = [...SUBJECTS, CANARY].map((id) => ({
    id,
    type: id === CANARY ? 'user' : pick(r, ['user', 'service', 'agent']),
    externalId: `ext-${id}`,
    metadata: (id !== CANARY && chance(r, 0.8) ? { dept: pick(r, ['a', 'b', 'c']), level: int(r, 0, 3), ...maybeList(r) } : {}) as JsonObject,
  }));
  const resource_type = [
    { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_0', name: 'Doc' },
    { id: 'resource_type_folder', key: chance(r, 0.1) ? 'image' : 'folder', scopeId: 'scope_0', name: 'Folder' },
    ...(chance(r, 0.2) ? [{ id: 'resource_type_doc2', key: 'doc', scopeId: 'scope_0', name: 'Doc 2' }] : []),
  ];
  const typeIds = resource_type.map((t) => t.id);
  const nRes = int(r, 0, 7);
  // Resource ids in both forms: a client's (kept as strings by the index), the service's own
  // (`resource_` and a canonical UUID, kept by the index as four words, their order taken from
  // the words: first groups above 7fffffff test it unsigned), or a tenant mixing the two.
  const idForm = int(r, 0, 2);
  const resourceIds = Array.from({ length: nRes }, (_, i) =>
    idForm === 0 || (idForm === 2 && chance(r, 0.5)) ? `resource_${i}` : `resource_${pick(r, UUID_HEADS)}-0000-7000-8000-${i.toString(16).padStart(12, '0')}`,
  );
  const resource = resourceIds.map((id) => ({
    id,
    // Sometimes a type that does not exist (dangling, or deleted by a later change).
    resourceTypeId: chance(r, 0.08) ? 'resource_type_doc2' : pick(r, typeIds),
    ownerScopeId: pick(r, scopeIds),
    externalResourceId: pick(r, EXTS),
    ...(chance(r, 0.6) ? { displayName: `name${int(r, 0, 2)}` } : {}),
    attributes: chance(r, 0.8)
      ? {
          size: int(r, 0, 6),
          tier: pick(r, ['gold', 'silver', 'bronze']),
          labels: subset(r, ['x', 'y']),
          ...(chance(r, 0.3) ? { nested: { deep: chance(r, 0.5) } } : {}),
          ...(chance(r, 0.3) ? { since: pick(r, TIMES) } : {}),
          ...maybeList(r),
        }
      : null,
    createdAt: pick(r, TIMES),
    createdBy: 'subject_a',
  }));
  const resource_edge: TenantSnapshot['rows']['resource_edge'] = [];
  resourceIds.forEach((child, i) => {
    const parents = i > 0 && chance(r, 0.7) ? [resourceIds[int(r, 0, i - 1)]] : [];
    if (nRes > 0 && chance(r, 0.06)) parents.push(pick(r, resourceIds)); // second parent or cycle
    parents.forEach((parent, k) =>
      resource_edge.push({
        id: `resource_edge_${i}_${k}${pick(r, ['a', 'b'])}`,
        parentResourceId: parent,
        childResourceId: child,
        cascade: chance(r, 0.75) ? 'inherit' : 'none',
      }),
    );
  });
  const resource_scope_link = nRes
    ? Array.from({ length: int(r, 0, 3) }, (_, i) => ({
        id: `rsl_${i}`,
        resourceId: pick(r, resourceIds),
        scopeId: pick(r, scopeIds),
        linkType: pick(r, ['share', 'alias', 'mirror']),
      }))
    : [];
  const roleIds = Array.from({ length: int(r, 0, 4) || 1 }, (_, i) => `role_${i}`);
  const role = roleIds.map((id) => ({ id, scopeId: chance(r, 0.8) ? 'scope_0' : pick(r, scopeIds), key: id, name: id }));
  const patterns = () => (chance(r, 0.45) ? '*' : chance(r, 0.6) ? pick(r, resourceIds) : pick(r, [...EXTS, 'zzz']));
  const permissionIds = Array.from({ length: int(r, 2, 10) }, (_, i) => `permission_${i}`);
  const permission = permissionIds.map((id) => {
    const action = pick(r, ACTIONS);
    const resourceType = pick(r, TYPE_KEYS);
    const resourcePattern = nRes ? patterns() : pick(r, ['*', 'e1']);
    return { id, scopeId: 'scope_0', action, resourceType, resourcePattern, key: `${resourceType}:${action}:${resourcePattern}` };
  });
  const role_permission =
    roleIds.length && permissionIds.length
      ? Array.from({ length: int(r, 2, 14) }, (_, i) => ({
          id: `role_permission_${i}`,
          roleId: pick(r, roleIds),
          permissionId: chance(r, 0.05) ? 'permission_missing' : pick(r, permissionIds),
        }))
      : [];
  const membershipIds = Array.from({ length: int(r, 1, 6) }, (_, i) => `membership_${i}`);
  // Some rows dangle: they name UNKNOWN_SUBJECT, which has no subject row.
  const holder = () => (chance(r, 0.1) ? UNKNOWN_SUBJECT : pick(r, SUBJECTS));
  const membership = membershipIds.map((id) => ({ id, subjectId: holder(), scopeId: chance(r, 0.3) ? scopeIds[0] : pick(r, scopeIds) }));
  const role_assignment =
    membershipIds.length && roleIds.length
      ? Array.from({ length: chance(r, 0.15) ? int(r, 17, 40) : int(r, 1, 9) }, (_, i) => ({
          id: `role_assignment_${i}`,
          membershipId: pick(r, membershipIds),
          roleId: chance(r, 0.05) ? 'role_missing' : pick(r, roleIds),
        }))
      : [];
  const scope_override = roleIds.length
    ? Array.from({ length: int(r, 0, 4) }, (_, i) => ({
        id: `scope_override_${i}`,
        scopeId: pick(r, scopeIds),
        roleId: pick(r, roleIds),
        mode: pick(r, ['block', 'add', 'remove'] as const),
        permissionIds: subset(r, [...permissionIds, 'permission_missing']),
      }))
    : [];
  const ownership_grant =
    nRes && roleIds.length
      ? Array.from({ length: int(r, 0, 4) }, (_, i) => ({
          // Both forms: the service's own (uuidv7, kept packed by the index) and a client's.
          id: i % 2 === 0 ? `ownership_grant_${i}` : `ownership_grant_0192f3a4-0000-7000-8000-${i.toString(16).padStart(12, '0')}`,
          subjectId: holder(),
          // Now and then a resource with no row (the index keeps a node for the grant).
          resourceId: chance(r, 0.1) ? 'resource_0192f3a4-0000-7000-8000-00000000dead' : pick(r, resourceIds),
          roleId: pick(r, roleIds),
        }))
      : [];
  const tag_group = [
    { id: 'tag_group_env', key: 'env', scopeId: 'scope_0' },
    { id: 'tag_group_team', key: 'team', scopeId: 'scope_0' },
  ];
  const tagIds = ['tag_0', 'tag_1', 'tag_2', 'tag_3'];
  const tag = tagIds.map((id) => ({ id, tagGroupId: pick(r, ['tag_group_env', 'tag_group_team', 'tag_group_missing']), identifier: pick(r, ['prod', 'dev', 'red', 'blue']) }));
  const tag_assignment = Array.from({ length: int(r, 0, 6) }, (_, i) => {
    const toResource = nRes > 0 && chance(r, 0.5);
    return {
      id: `tag_assignment_${i}`,
      tagId: pick(r, [...tagIds, 'tag_missing']),
      targetType: toResource ? ('resource' as const) : ('subject' as const),
      targetId: toResource ? pick(r, resourceIds) : holder(),
    };
  });
  const tag_binding = roleIds.length
    ? Array.from({ length: int(r, 0, 3) }, (_, i) => ({ id: `tag_binding_${i}`, tagId: pick(r, tagIds), roleId: pick(r, roleIds), scopeId: pick(r, scopeIds) }))
    : [];
  const collectionIds = Array.from({ length: int(r, 0, 3) }, (_, i) => `collection_${i}`);
  const collection = collectionIds.map((id) => ({ id, scopeId: pick(r, scopeIds), resourceTypeId: pick(r, typeIds), name: id, matchDefinition: genMatch(r) }));
  const targets = [
    ...resourceIds.map((resourceId) => ({ kind: 'resource' as const, resourceId })),
    ...collectionIds.map((collectionId) => ({ kind: 'collection' as const, collectionId })),
  ];
  const policy: Policy[] = targets.length
    ? Array.from({ length: int(r, 0, 5) }, (_, i) => {
        const p: Policy = {
          id: `policy_${pick(r, ['0', '1', '2', '3', '4', '5', '6', '7'])}${i}`,
          scopeId: pick(r, scopeIds),
          target: pick(r, targets),
          actions: chance(r, 0.2) ? ['*'] : subset(r, ['read', 'write', 'delete'], 0.5),
          effect: chance(r, 0.5) ? 'allow' : 'deny',
          priority: int(r, 0, 2),
        };
        if (chance(r, 0.5)) p.subjectCondition = pick(r, SUBJECT_CONDITIONS);
        if (chance(r, 0.35)) p.contextCondition = pick(r, CONTEXT_CONDITIONS);
        // Rarely unparsable: fails closed (holds on a deny, not on an allow).
        if (chance(r, 0.25)) p.validFrom = pick(r, [...TIMES, 'not a time']);
        if (chance(r, 0.25)) p.validUntil = pick(r, [...TIMES, '2025-13-45']);
        return p;
      })
    : [];
  return {
    revision: 1,
    rows: {
      scope, subject, role, permission, role_permission, membership, role_assignment, scope_override,
      ownership_grant, resource_type, resource, resource_scope_link, resource_edge, collection, policy,
      tag_group, tag, tag_assignment, tag_binding,
    },
  };
}

export interface GenCase {
  request: RefRequest;
  options: RefOptions;
}

/** A random request against a tenant (sometimes naming unknown scopes, subjects, resources). */
export function genRequest(r: Rng, t: TenantSnapshot, withSubjectType = true): GenCase {
  const scopeIds = (t.rows.scope ?? []).map((s) => s.id);
  const resourceIds = (t.rows.resource ?? []).map((x) => x.id);
  const request: RefRequest = {
    actor: { subjectId: pick(r, [...SUBJECTS, ...SUBJECTS, CANARY, UNKNOWN_SUBJECT]) },
    scopeId: chance(r, 0.03) ? 'scope_unknown' : pick(r, scopeIds),
    action: pick(r, ['read', 'write', 'delete']),
  };
  if (withSubjectType && chance(r, 0.15)) request.actor.subjectType = pick(r, ['user', 'service', '']);
  const kind = int(r, 0, 9);
  if (kind <= 1) {
    // no resource
  } else if (kind <= 6 && resourceIds.length) request.resource = { resourceId: chance(r, 0.05) ? 'resource_unknown' : pick(r, resourceIds) };
  else request.resource = { externalResourceId: pick(r, [...EXTS, 'e9']), resourceType: pick(r, ['doc', 'folder', 'nope']) };
  const c = int(r, 0, 5);
  if (c === 1) request.context = { ip: pick(r, ['10.0.0.1', '10.0.0.2']), country: pick(r, ['FR', 'DE']) };
  else if (c === 2) request.context = { time: { hour: int(r, 0, 23) }, deviceType: 'phone' };
  else if (c === 3) request.context = { ip: '10.0.0.1', deviceType: '' };
  else if (c === 4) request.context = { ip: pick(r, ['10.0.0.1', '10.0.0.2']), ...maybeList(r) };
  const base = Date.parse(pick(r, TIMES));
  const now = new Date(base + pick(r, [-1, 0, 1, 3_600_000 * int(r, 1, 48)]));
  return { request, options: { now, gate: pick(r, ['off', 'off', 'links-fallback', 'strict'] as const) } };
}
