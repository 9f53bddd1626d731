/**
 * The collection index: which keys a match definition is filed under (match-keys.ts), what a
 * collection file gives a resource to try (tenant-index/collection-files.ts), that it never
 * leaves out a collection that matches or errors (against the engine's matcher and the
 * reference's, on generated tenants), that deltas move collections between keys as a rebuild
 * files them, and what a decision and its trace make of it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EvaluationBudget } from './budget.js';
import { evaluate } from './evaluate.js';
import { MAX_MATCH_KEYS, lookupValue, requiredMatchKeys, type MatchKey } from './match-keys.js';
import { matchOutcome } from './match.js';
import type { Collection, JsonValue, Policy, Resource, TenantSnapshot } from './model.js';
import { TenantIndex } from './tenant-index/mod.js';
import { derivedState } from './testdata/derived-state.js';
import { genTenant } from './testdata/generate.js';
import { withManyCollections } from './testdata/many-collections.js';
import { refMatchOutcome } from './testdata/reference-match.js';
import { mulberry32 } from '../../test/seeded-random.js';

const f = (field: string, value: string | number | boolean | null): MatchKey => ({ field, value });
const tag = (tagGroup: string, identifier: string): MatchKey => ({ tagGroup, identifier });
const sorted = (keys: readonly MatchKey[] | undefined) => keys && [...keys].map((k) => JSON.stringify(k)).sort();

describe('the keys a definition is filed under', () => {
  const cases: [string, JsonValue, MatchKey[] | undefined][] = [
    ['a bare value', { fields: { 'attributes.tier': 'gold' } }, [f('attributes.tier', 'gold')]],
    ['eq', { fields: { externalResourceId: { eq: 'e1' } } }, [f('externalResourceId', 'e1')]],
    ['eq: null (null or absent)', { fields: { displayName: null } }, [f('displayName', null)]],
    ['in, types kept apart', { fields: { 'attributes.code': { in: [1, '1', true, 'true', null] } } }, [f('attributes.code', 1), f('attributes.code', '1'), f('attributes.code', true), f('attributes.code', 'true'), f('attributes.code', null)]],
    ['in, duplicates once (0 and -0 are one)', { fields: { 'attributes.code': { in: [1, 1, 0, -0] } } }, [f('attributes.code', 1), f('attributes.code', 0)]],
    ['in: [] (matches nothing)', { fields: { 'attributes.code': { in: [] } } }, []],
    ['eq and in: their intersection', { fields: { 'attributes.code': { eq: 'a', in: ['a', 'b'], ne: 'c' } } }, [f('attributes.code', 'a')]],
    ['eq and in that cannot both hold', { fields: { 'attributes.code': { eq: 'a', in: ['b'] } } }, []],
    ['a dotted attribute path, as named', { fields: { 'attributes.a.b': 2 } }, [f('attributes.a.b', 2)]],
    ['unicode forms kept apart', { fields: { 'attributes.code': { in: ['\u00e9', 'e\u0301'] } } }, [f('attributes.code', '\u00e9'), f('attributes.code', 'e\u0301')]],
    ['own fields', { fields: { ownerScopeId: 'scope_1' } }, [f('ownerScopeId', 'scope_1')]],
    ['a tag', { tags: { env: 'prod' } }, [tag('env', 'prod')]],
    ['tags of one group', { tags: { env: ['prod', 'dev', 'prod'] } }, [tag('env', 'prod'), tag('env', 'dev')]],
    ['the part with fewest keys', { fields: { 'attributes.code': { in: [1, 2, 3] }, 'attributes.tier': 'gold' }, tags: { env: ['prod', 'dev'] } }, [f('attributes.tier', 'gold')]],
    ['a key beside parts that require none', { fields: { 'attributes.code': 1, 'attributes.size': { gte: 3 } }, patterns: { id: '^r' }, time: { field: 'createdAt', after: '2025-01-01T00:00:00Z' }, condition: { var: 'resource.id' }, none: [{ fields: { 'attributes.code': 2 } }] }, [f('attributes.code', 1)]],
    ['an all element', { all: [{ patterns: { id: '^r' } }, { fields: { 'attributes.code': 1 } }] }, [f('attributes.code', 1)]],
    ['an any whose branches all have keys: their union', { any: [{ fields: { 'attributes.code': 1 } }, { tags: { env: 'prod' } }, { fields: { 'attributes.code': 1 } }] }, [f('attributes.code', 1), tag('env', 'prod')]],
    ['any: [] (matches nothing)', { any: [] }, []],
    ['nested any and all', { any: [{ all: [{ fields: { id: 'r1' } }] }, { any: [{ fields: { id: 'r2' } }] }] }, [f('id', 'r1'), f('id', 'r2')]],
    // None: tried on every resource.
    ['ne', { fields: { 'attributes.code': { ne: 1 } } }, undefined],
    ['nin', { fields: { 'attributes.code': { nin: [1] } } }, undefined],
    ['ranges, contains, startsWith, endsWith, regex', { fields: { 'attributes.size': { gte: 1, lt: 9 }, 'attributes.labels': { contains: 'x' }, displayName: { startsWith: 'a', endsWith: 'b', regex: 'c' } } }, undefined],
    ['patterns, time, condition', { patterns: { id: '^r' }, time: { field: 'createdAt', before: '2026-01-01T00:00:00Z' }, condition: { '==': [{ var: 'resource.id' }, 'r1'] } }, undefined],
    ['none of a keyed definition', { none: [{ fields: { 'attributes.code': 1 } }] }, undefined],
    ['an any with a branch without keys', { any: [{ fields: { 'attributes.code': 1 } }, { fields: { 'attributes.size': { gt: 2 } } }] }, undefined],
    ['an any with an empty branch (matches everything)', { any: [{ fields: { 'attributes.code': 1 } }, {}] }, undefined],
    ['the empty definition', {}, undefined],
    ['all: []', { all: [] }, undefined],
    // Erroring against every resource: tried on every one, so its denies apply.
    ['an unknown key beside a key', { fields: { 'attributes.code': 1 }, colour: 'red' }, undefined],
    ['an invalid operand beside a key', { fields: { 'attributes.code': 1, 'attributes.tier': { in: 'gold' } } }, undefined],
    ['a regular expression that does not compile', { fields: { 'attributes.code': 1 }, patterns: { displayName: '(' } }, undefined],
    ['one nested in an any', { fields: { 'attributes.code': 1 }, any: [{ fields: { displayName: { regex: '[' } } }] }, undefined],
    ['an oversize pattern', { fields: { 'attributes.code': 1 }, patterns: { displayName: '(ab){600}' } }, undefined],
    ['not an object', 'x', undefined],
    ['null', null, undefined],
    ['an array', [{ fields: { 'attributes.code': 1 } }], undefined],
  ];
  it.each(cases)('%s', (_name, def, want) => {
    expect(sorted(requiredMatchKeys(def))).toEqual(sorted(want));
  });

  it('a valid pattern beside a key keeps the key', () => {
    expect(requiredMatchKeys({ fields: { 'attributes.code': 1 }, patterns: { displayName: '^n' } })).toEqual([f('attributes.code', 1)]);
  });

  it(`at most ${MAX_MATCH_KEYS} keys: a longer in, or an any adding up to more, has none`, () => {
    const values = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
    expect(requiredMatchKeys({ fields: { 'attributes.code': { in: values(MAX_MATCH_KEYS) } } })).toHaveLength(MAX_MATCH_KEYS);
    expect(requiredMatchKeys({ fields: { 'attributes.code': { in: values(MAX_MATCH_KEYS + 1) } } })).toBeUndefined();
    expect(requiredMatchKeys({ any: [{ fields: { 'attributes.code': { in: values(40) } } }, { fields: { 'attributes.code': { in: values(40, 40) } } }] })).toBeUndefined();
    // A part over the bound leaves the others to choose from.
    expect(requiredMatchKeys({ fields: { 'attributes.code': { in: values(100) }, id: { in: ['r1', 'r2'] } } })).toEqual([f('id', 'r1'), f('id', 'r2')]);
  });

  it('the choice does not depend on the order of the object keys', () => {
    const a = requiredMatchKeys({ fields: { 'attributes.x': 1, 'attributes.y': 2 }, tags: { env: 'prod' } });
    const b = requiredMatchKeys({ tags: { env: 'prod' }, fields: { 'attributes.y': 2, 'attributes.x': 1 } });
    expect(a).toEqual(b);
  });

  it('a resource value is looked up as the key eq compares it with', () => {
    expect([undefined, null, 1, -0, '1', true, 'true', ''].map(lookupValue)).toEqual([null, null, 1, -0, '1', true, 'true', '']);
    expect([[1], [], {}, { v: 1 }].map(lookupValue)).toEqual([undefined, undefined, undefined, undefined]);
  });
});

// --- the index in a tenant ---------------------------------------------------------------------

const T0 = '2025-01-01T00:00:00.000Z';
const now = new Date('2025-06-01T10:00:00Z');

function resource(id: string, attributes: Record<string, JsonValue> | null, extra: Partial<Resource> = {}): Resource {
  return { id, resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_child', externalResourceId: `ext-${id}`, attributes, createdAt: T0, createdBy: 's', ...extra };
}
function collection(id: string, matchDefinition: JsonValue, scopeId = 'scope_root'): Collection {
  return { id, scopeId, resourceTypeId: 'resource_type_doc', name: id, matchDefinition };
}
function policy(id: string, collectionId: string, extra: Partial<Policy> = {}): Policy {
  return { id, scopeId: 'scope_root', target: { kind: 'collection', collectionId }, actions: ['read'], effect: 'allow', priority: 0, ...extra };
}

function tenant(collections: Collection[], resources: Resource[], policies: Policy[] = []): TenantSnapshot {
  return {
    revision: 1,
    rows: {
      scope: [
        { id: 'scope_root', tenantId: 't', parentId: null, typeId: 'st', name: 'root' },
        { id: 'scope_child', tenantId: 't', parentId: 'scope_root', typeId: 'st', name: 'child' },
      ],
      subject: [{ id: 'subject_s', type: 'user', externalId: 's', metadata: {} }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Doc' }],
      resource: resources,
      collection: collections,
      policy: policies,
      tag_group: [{ id: 'tag_group_env', key: 'env', scopeId: 'scope_root' }],
      tag: [
        { id: 'tag_prod', tagGroupId: 'tag_group_env', identifier: 'prod' },
        { id: 'tag_dev', tagGroupId: 'tag_group_env', identifier: 'dev' },
      ],
      tag_assignment: [
        { id: 'tag_assignment_1', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_tagged' },
        { id: 'tag_assignment_2', tagId: 'tag_dev', targetType: 'resource', targetId: 'resource_tagged' },
      ],
    },
  };
}

/** Ids of the collections the index gives `resourceId` to try at a scope, and how many it rules out. */
function toTry(index: TenantIndex, resourceId: string, scopeId = 'scope_root'): { tried: string[]; ruledOut: number } {
  const view = index.resourceView(index.resourceNode(resourceId)!);
  const out: Collection[] = [];
  const ruledOut = index.collectionsToTry('resource_type_doc', scopeId, view, () => index.resourceTags(resourceId), out);
  return { tried: out.map((c) => c.id), ruledOut };
}

describe('what a collection file gives a resource to try', () => {
  const collections = [
    collection('c_one', { fields: { 'attributes.code': 1 } }),
    collection('c_one_text', { fields: { 'attributes.code': '1' } }),
    collection('c_true', { fields: { 'attributes.code': { in: [true, 'x'] } } }),
    collection('c_null', { fields: { 'attributes.code': null } }),
    collection('c_nested', { fields: { 'attributes.a.b': 'v' } }),
    collection('c_composed', { fields: { 'attributes.code': '\u00e9' } }),
    collection('c_prod', { tags: { env: ['prod', 'dev'] } }),
    collection('c_never', { fields: { 'attributes.code': { in: [] } } }),
    collection('c_either', { any: [{ fields: { 'attributes.code': 1 } }, { tags: { env: 'dev' } }] }),
    collection('c_ne', { fields: { 'attributes.code': { ne: 1 } } }),
    collection('c_bad', { fields: { 'attributes.code': 1 }, patterns: { id: '(' } }),
  ];
  const unkeyed = ['c_bad', 'c_ne'];
  const index = TenantIndex.fromSnapshot(
    tenant(collections, [
      resource('resource_one', { code: 1 }),
      resource('resource_one_text', { code: '1' }),
      resource('resource_true_text', { code: 'true' }),
      resource('resource_absent', {}),
      resource('resource_no_attributes', null),
      resource('resource_array', { code: [1] }),
      resource('resource_nested', { a: { b: 'v' } }),
      resource('resource_dotted_key', { 'a.b': 'v' }),
      resource('resource_decomposed', { code: 'e\u0301' }),
      resource('resource_composed', { code: '\u00e9' }),
      resource('resource_tagged', { code: 1 }),
    ]),
  );
  const withUnkeyed = (...ids: string[]) => [...ids, ...unkeyed].sort();

  it.each([
    ['resource_one', ['c_either', 'c_one']],
    ['resource_one_text', ['c_one_text']],
    ['resource_true_text', []],
    ['resource_absent', ['c_null']],
    ['resource_no_attributes', ['c_null']],
    ['resource_array', []],
    ['resource_nested', ['c_nested', 'c_null']],
    ['resource_dotted_key', ['c_null']],
    ['resource_decomposed', []],
    ['resource_composed', ['c_composed']],
    // Two tags under c_prod's keys and one under c_either's besides code 1: each tried once.
    ['resource_tagged', ['c_either', 'c_one', 'c_prod']],
  ])('%s', (id, keyed) => {
    const { tried, ruledOut } = toTry(index, id);
    expect(tried).toEqual(withUnkeyed(...keyed));
    expect(ruledOut).toBe(collections.length - tried.length);
  });

  it('a dotted path is read as the matcher reads it: a nested object, not a key with a dot', () => {
    const nestedIndex = TenantIndex.fromSnapshot(tenant([collections[4]], [resource('resource_nested', { a: { b: 'v' } }), resource('resource_dotted_key', { 'a.b': 'v' })]));
    expect(toTry(nestedIndex, 'resource_nested').tried).toEqual(['c_nested']);
    expect(toTry(nestedIndex, 'resource_dotted_key')).toEqual({ tried: [], ruledOut: 1 });
  });

  it('only the file of the scope asked: none at a scope without collections', () => {
    expect(toTry(index, 'resource_one', 'scope_child')).toEqual({ tried: [], ruledOut: 0 });
  });
});

describe('a decision tries only what the index leaves', () => {
  const many = Array.from({ length: 50 }, (_, i) => collection(`c_${String(i).padStart(2, '0')}`, { fields: { 'attributes.code': i } }));
  const policies = many.map((c, i) => policy(`p_${c.id}`, c.id, { effect: i % 2 ? 'allow' : 'deny' }));

  it('the collection whose key the resource has decides; the trace counts the others', () => {
    const index = TenantIndex.fromSnapshot(tenant(many, [resource('resource_7', { code: 7 }), resource('resource_8', { code: 8 }), resource('resource_none', { code: 'x' })], policies));
    const ask = (resourceId: string) => evaluate(index, { actor: { subjectId: 'subject_s' }, scopeId: 'scope_child', action: 'read', resource: { resourceId }, explain: true }, { now, gate: 'off' });
    const seven = ask('resource_7');
    expect(seven).toMatchObject({ allowed: true, reason: 'policy_allow', evaluatedPolicy: { id: 'p_c_07' } });
    const steps = seven.trace!.filter((s) => s.leg === 'policy');
    expect(steps.filter((s) => s.detail?.collectionId !== undefined).map((s) => s.detail?.collectionId)).toEqual(['c_07']);
    expect(steps.find((s) => s.detail?.collectionsRuledOut !== undefined)).toMatchObject({ outcome: 'info', detail: { collectionsRuledOut: 49 } });
    expect(ask('resource_8')).toMatchObject({ allowed: false, reason: 'policy_deny', evaluatedPolicy: { id: 'p_c_08' } });
    const none = ask('resource_none');
    expect(none.reason).toBe('no_match');
    expect(none.trace!.map((s) => s.message).join('\n')).toContain("50 other collections of the resource's type at the scope or its ancestors not tried");
  });

  it('a collection errors for every resource: tried on each, its deny applies', () => {
    const index = TenantIndex.fromSnapshot(
      tenant([...many, collection('c_bad', { fields: { 'attributes.code': 1 }, patterns: { displayName: '(' } })], [resource('resource_none', { code: 'x' })], [...policies, policy('p_bad', 'c_bad', { effect: 'deny' })]),
    );
    const d = evaluate(index, { actor: { subjectId: 'subject_s' }, scopeId: 'scope_child', action: 'read', resource: { resourceId: 'resource_none' } }, { now, gate: 'off' });
    expect(d).toMatchObject({ allowed: false, reason: 'policy_deny', evaluatedPolicy: { id: 'p_bad' } });
  });

  it("a collection without a policy of the action is not matched on the decision's budget (only when explaining, on a spare one)", () => {
    // A pattern costs its compilation on every use: a collection tried draws on the batch.
    const costly = [collection('c_write', { patterns: { 'attributes.text': '(a|b)*c' } })];
    const index = TenantIndex.fromSnapshot(tenant(costly, [resource('resource_1', { text: 'ab' })], [policy('p_write', 'c_write', { actions: ['write'] })]));
    const ask = (action: string, explain: boolean, batch: EvaluationBudget) =>
      evaluate(index, { actor: { subjectId: 'subject_s' }, scopeId: 'scope_child', action, resource: { resourceId: 'resource_1' }, explain }, { now, gate: 'off', budget: batch });
    for (const explain of [false, true]) {
      const batch = new EvaluationBudget();
      expect(ask('read', explain, batch).reason).toBe('no_match');
      expect(batch.left).toBe(batch.limit);
    }
    const explained = ask('read', true, new EvaluationBudget());
    expect(explained.trace!.some((s) => s.detail?.collectionId === 'c_write' && s.detail?.match === 'no_match')).toBe(true);
    const batch = new EvaluationBudget();
    ask('write', false, batch);
    expect(batch.left).toBeLessThan(batch.limit);
  });
});

describe('deltas move collections between keys as a rebuild files them', () => {
  const rows = [resource('resource_1', { code: 1 }), resource('resource_2', { code: 2 })];
  const base = tenant([collection('c_a', { fields: { 'attributes.code': 1 } }), collection('c_b', { fields: { 'attributes.code': { ne: 1 } } })], rows);

  it('upserts change keys, scope and type; deletes leave no empty entries', () => {
    const index = TenantIndex.fromSnapshot(base);
    const steps: [Collection[], string[]][] = [
      // c_a from code 1 to code 2; c_b from no keys to a tag.
      [[collection('c_a', { fields: { 'attributes.code': 2 } }), collection('c_b', { tags: { env: 'prod' } })], []],
      // c_a to no keys; c_b to another scope; c_c new, under two keys.
      [[collection('c_a', { fields: { 'attributes.code': { gte: 1 } } }), collection('c_b', { tags: { env: 'prod' } }, 'scope_child'), collection('c_c', { fields: { 'attributes.code': { in: [1, 2] } } })], []],
      // c_a deleted; c_c to another type.
      [[{ ...collection('c_c', { fields: { 'attributes.code': 1 } }), resourceTypeId: 'resource_type_other' }], ['c_a']],
      [[], ['c_b', 'c_c']],
    ];
    let current = base;
    let revision = 1;
    // Asked once first, so each change meets the sorted copy of the collections without keys.
    for (const r of rows) toTry(index, r.id);
    for (const [upserts, deletes] of steps) {
      index.apply(++revision, [
        ...upserts.map((row) => ({ op: 'upsert' as const, kind: 'collection' as const, id: row.id, row })),
        ...deletes.map((id) => ({ op: 'delete' as const, kind: 'collection' as const, id })),
      ]);
      const kept = (current.rows.collection ?? []).filter((c) => !deletes.includes(c.id) && !upserts.some((u) => u.id === c.id));
      current = { ...current, revision, rows: { ...current.rows, collection: [...kept, ...upserts] } };
      const fresh = TenantIndex.fromSnapshot(current);
      expect(derivedState(index)).toEqual(derivedState(fresh));
      // What a decision is given to try too (it keeps a sorted copy of the collections without keys).
      for (const r of rows) for (const scope of ['scope_root', 'scope_child']) expect(toTry(index, r.id, scope)).toEqual(toTry(fresh, r.id, scope));
    }
    expect(index.families().policies.collectionsByTypeScope.size).toBe(0);
  });

  it('what the files hold after a move', () => {
    const index = TenantIndex.fromSnapshot(base);
    index.apply(2, [{ op: 'upsert', kind: 'collection', id: 'c_a', row: collection('c_a', { fields: { 'attributes.code': { in: [2, '2'] } } }) }]);
    const file = index.families().policies.collectionsByTypeScope.get('resource_type_doc')!.get('scope_root')!;
    expect([...file.byField.get('attributes.code')!.keys()]).toEqual([2, '2']);
    expect(toTry(index, 'resource_1').tried).toEqual(['c_b']);
    expect(toTry(index, 'resource_2').tried).toEqual(['c_a', 'c_b']);
  });
});

// --- soundness on generated tenants --------------------------------------------------------------

const FIXED_SEED = 20250611;
const envSeed = process.env.ENGINE_PROP_SEED ? Number(process.env.ENGINE_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];

describe.each(seeds)('the index never leaves out a collection that matches or errors (%s seed %i)', (_label, seed) => {
  it('against the engine matcher and the reference, for every resource and every file', () => {
    const seen = { tried: 0, ruledOut: 0, triedNoMatch: 0, matched: 0, errored: 0 };
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (s) => {
        const r = mulberry32(s);
        const t = withManyCollections(r, genTenant(r));
        const index = TenantIndex.fromSnapshot(t);
        const files = new Map<string, Collection[]>();
        for (const c of t.rows.collection ?? []) {
          const key = `${c.resourceTypeId} ${c.scopeId}`;
          files.set(key, [...(files.get(key) ?? []), c]);
        }
        for (const res of t.rows.resource ?? []) {
          const view = index.resourceView(index.resourceNode(res.id)!);
          const tags = index.resourceTags(res.id);
          const pairs: [string, string][] = [...tags].flatMap(([g, ids]) => [...ids].map((id) => [g, id] as [string, string]));
          // Every file against every resource: what a file rules out does not depend on the type.
          for (const [key, cs] of files) {
            const [typeId, scopeId] = key.split(' ');
            const out: Collection[] = [];
            const ruledOut = index.collectionsToTry(typeId, scopeId, view, () => tags, out);
            const tried = out.map((c) => c.id);
            expect(tried).toEqual([...new Set(tried)].sort());
            expect(tried.length + ruledOut).toBe(new Set(cs.map((c) => c.id)).size);
            for (const c of cs) {
              const engine = matchOutcome(c.matchDefinition, { resource: view, tags: () => tags });
              const reference = refMatchOutcome(c.matchDefinition, res, pairs);
              const where = JSON.stringify({ collection: c, resource: res, pairs });
              if (engine !== 'no_match' || reference !== 'no_match') expect(tried, where).toContain(c.id);
              if (engine === 'match') seen.matched++;
              if (engine === 'error') seen.errored++;
              if (tried.includes(c.id) && engine === 'no_match') seen.triedNoMatch++;
            }
            seen.tried += tried.length;
            seen.ruledOut += ruledOut;
          }
        }
      }),
      { seed, numRuns: 300 },
    );
    // The index must have had work to do: collections ruled out, and both outcomes among those tried.
    expect(seen.ruledOut).toBeGreaterThan(seen.tried / 2);
    expect(seen.matched).toBeGreaterThan(100);
    expect(seen.errored).toBeGreaterThan(100);
    expect(seen.triedNoMatch).toBeGreaterThan(100);
  });
});
