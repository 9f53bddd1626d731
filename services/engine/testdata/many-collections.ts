/**
 * Many collections per resource type for the differential tests, so the collection index
 * (tenant-index/collection-files.ts) files and rules out collections the way a large tenant
 * makes it: definitions that require a field value or a tag (bare values, `eq`, `in` with mixed
 * types, `eq: null`, dotted attribute paths, own fields, tags, `any` of such, `all` holding
 * one) and definitions that require none (`ne`, `nin`, ranges, patterns, `none`, an `any` with
 * a branch that requires nothing), some of each erroring (an invalid part, a regular expression
 * that does not compile, a condition that errors on a long list), with policies of every
 * action and spread priorities so that a collection wrongly left out changes decisions. The
 * resources get values that strict equality tells apart only by type (1, "1", true, "true"),
 * unicode in two normal forms, arrays and objects where a scalar is asked, null and absent.
 */
import type { JsonValue, Policy, Resource, TenantSnapshot } from '../model.js';
import { chance, doublingCondition, int, pick, type Rng } from './generate.js';

/** Scalars `eq`/`in` compare with: pairs only the type tells apart, 0 and -0, unicode composed and decomposed. */
export const KEY_VALUES: JsonValue[] = [1, '1', true, 'true', false, 0, -0, 1.5, null, '', '\u00e9', 'e\u0301', '\u{1F600}', 'gold', 'Gold'];
/** What a resource's field may hold instead of a scalar: no scalar equals these. */
const NOT_SCALARS: JsonValue[] = [[1], ['1'], [], { v: 1 }];
const EXTS = ['e0', 'e1', 'e2', 'e3', 'e9'];

const subset = <T>(r: Rng, xs: readonly T[], p: number): T[] => xs.filter(() => chance(r, p));

/** A field's value on a resource: a key value, a non-scalar, or absent (undefined). */
function fieldValue(r: Rng): JsonValue | undefined {
  const k = int(r, 0, 9);
  return k < 6 ? pick(r, KEY_VALUES) : k < 8 ? pick(r, NOT_SCALARS) : undefined;
}

/** The tenant's resources given values the keyed definitions read, and the collections and their policies. */
export function withManyCollections(r: Rng, t: TenantSnapshot): TenantSnapshot {
  const scopeIds = (t.rows.scope ?? []).map((s) => s.id);
  const typeIds = [...new Set([...(t.rows.resource_type ?? []).map((x) => x.id), 'resource_type_doc2'])];
  const resourceIds = (t.rows.resource ?? []).map((x) => x.id);
  const resource = (t.rows.resource ?? []).map((x): Resource => {
    const attributes: Record<string, JsonValue> = { ...((x.attributes as Record<string, JsonValue> | null) ?? {}) };
    const code = fieldValue(r);
    if (code !== undefined) attributes.code = code;
    // `attributes.a.b` reads a nested object; a key with a dot in it is not that path.
    const nested = fieldValue(r);
    if (nested !== undefined) {
      if (chance(r, 0.7)) attributes.a = chance(r, 0.8) ? { b: nested } : nested;
      else attributes['a.b'] = nested;
    }
    if (chance(r, 0.5)) attributes.list = [pick(r, KEY_VALUES)];
    const out: Resource = { ...x, attributes };
    if (chance(r, 0.2)) out.displayName = null;
    return out;
  });
  const keyed = (): Record<string, JsonValue> => keyedDefinition(r, scopeIds, typeIds, resourceIds, 0);
  const count = int(r, 5, 40);
  const collection = Array.from({ length: count }, (_, i) => ({
    id: `collection_k${String(i).padStart(2, '0')}`,
    scopeId: pick(r, scopeIds),
    resourceTypeId: pick(r, typeIds),
    name: `k${i}`,
    matchDefinition: chance(r, 0.7) ? keyed() : unkeyedDefinition(r, keyed),
  }));
  const policy: Policy[] = [];
  for (const c of collection) {
    const n = pick(r, [0, 1, 1, 1, 2]);
    for (let j = 0; j < n; j++) {
      policy.push({
        id: `policy_k${c.id.slice('collection_k'.length)}_${j}`,
        scopeId: pick(r, scopeIds),
        target: { kind: 'collection', collectionId: c.id },
        actions: chance(r, 0.15) ? ['*'] : subset(r, ['read', 'write', 'delete'], 0.5),
        effect: chance(r, 0.5) ? 'allow' : 'deny',
        priority: int(r, 0, 9),
        ...(chance(r, 0.1) ? { subjectCondition: { '==': [{ var: 'subject.meta.dept' }, 'a'] } } : {}),
      });
    }
  }
  return {
    ...t,
    rows: {
      ...t.rows,
      resource,
      collection: [...(t.rows.collection ?? []), ...collection],
      policy: [...(t.rows.policy ?? []), ...policy],
    },
  };
}

/** A definition that requires a field value or a tag (or, with `in: []` or an `any: []` part, matches nothing). */
function keyedDefinition(r: Rng, scopeIds: string[], typeIds: string[], resourceIds: string[], depth: number): Record<string, JsonValue> {
  const def: Record<string, JsonValue> = {};
  const k = int(r, 0, depth < 2 ? 9 : 7);
  const value = (): JsonValue => pick(r, KEY_VALUES);
  switch (k) {
    case 0:
      def.fields = { 'attributes.code': value() };
      break;
    case 1:
      def.fields = { 'attributes.code': { eq: value() } };
      break;
    case 2:
      def.fields = { 'attributes.code': chance(r, 0.3) ? { in: subset(r, KEY_VALUES, 0.3), eq: value() } : { in: subset(r, KEY_VALUES, 0.3) } };
      break;
    case 3:
      def.fields = { 'attributes.a.b': chance(r, 0.5) ? value() : { in: subset(r, KEY_VALUES, 0.3) } };
      break;
    case 4:
      def.fields = { 'attributes.list': value() };
      break;
    case 5:
      def.fields = pick<JsonValue>(r, [
        { externalResourceId: pick(r, EXTS) },
        { ownerScopeId: pick(r, scopeIds) },
        { resourceTypeId: pick(r, typeIds) },
        { id: { in: subset(r, [...resourceIds, 'resource_none'], 0.4) } },
        { displayName: chance(r, 0.5) ? null : `name${int(r, 0, 2)}` },
      ]);
      break;
    case 6:
    case 7:
      def.tags = { [pick(r, ['env', 'team'])]: chance(r, 0.5) ? pick(r, ['prod', 'dev', 'red', 'blue']) : subset(r, ['prod', 'dev', 'red', 'blue'], 0.5).concat('dev') };
      break;
    case 8:
      def.any = Array.from({ length: int(r, 0, 3) }, () => keyedDefinition(r, scopeIds, typeIds, resourceIds, depth + 1));
      break;
    case 9:
      def.all = [keyedDefinition(r, scopeIds, typeIds, resourceIds, depth + 1), ...(chance(r, 0.5) ? [unkeyedDefinition(r, () => ({}))] : [])];
      break;
  }
  // Parts beside it that require nothing: they decide, or error, only where the key holds.
  if (chance(r, 0.5)) Object.assign(def, pick(r, SIDE_PARTS));
  return def;
}

/** Parts that require no key, ANDed beside a keyed one; some error (an invalid part or pattern: then on every resource). */
const SIDE_PARTS: Record<string, JsonValue>[] = [
  { patterns: { externalResourceId: 'e[0-2]$' } },
  { patterns: { displayName: '(' } },
  { time: { field: 'createdAt', after: '2025-02-01T00:00:00.000Z' } },
  { condition: { var: 'resource.attributes.code' } },
  { condition: doublingCondition('resource.attributes.xs') },
  { none: [{ fields: { 'attributes.tier': 'gold' } }] },
  { colour: 'red' },
];

/** A definition that requires no key: tried on every resource. */
function unkeyedDefinition(r: Rng, keyed: () => Record<string, JsonValue>): Record<string, JsonValue> {
  return pick(r, [
    () => ({ fields: { 'attributes.code': { ne: pick(r, KEY_VALUES) } } }),
    () => ({ fields: { 'attributes.code': { nin: subset(r, KEY_VALUES, 0.3) } } }),
    () => ({ fields: { 'attributes.size': { gte: int(r, 0, 6) } } }),
    () => ({ patterns: { externalResourceId: 'e[1-3]' } }),
    () => ({ none: [keyed()] }),
    () => ({ any: [keyed(), { fields: { 'attributes.size': { lt: 3 } } }] }),
    () => ({}),
    () => ({ condition: { '==': [{ var: 'resource.attributes.code' }, 1] } }),
    () => ({ fields: { 'attributes.code': 1 }, colour: 'red' }),
  ])();
}
