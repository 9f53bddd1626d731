/**
 * Differential property tests: the indexed engine against the naive reference evaluator, an
 * incrementally updated index against a fresh one, and effective permissions against evaluate.
 *
 * Each property runs once with a fixed seed and once with a random one (fast-check prints the
 * seed and path of any counterexample; rerun with ENGINE_PROP_SEED=<seed>).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectivePermissions, type EffectivePermission } from './effective.js';
import { ScopeNotFoundError } from './errors.js';
import { evaluate, resolveResource, type Decision } from './evaluate.js';
import { TenantIndex } from './tenant-index/mod.js';
import { ENTITY_KINDS, type Change, type EntityKind, type RowsByKind, type TenantSnapshot } from './model.js';
import { CANARY, GENERATED_CONDITIONS, UNKNOWN_SUBJECT, genMatch, genRequest, genTenant, int, chance, type GenCase, type Rng } from './testdata/generate.js';
import { mulberry32 } from '../../test/seeded-random.js';
import { withManyCollections } from './testdata/many-collections.js';
import { derivedState } from './testdata/derived-state.js';
import { RefScopeNotFound, referenceEvaluate, type RefDecision } from './testdata/reference.js';
import { refApplyLogic, refJsonLogicError, refTruthy } from './testdata/reference-logic.js';
import { refMatch, refMatchDefinitionError, refMatchOutcome } from './testdata/reference-match.js';
import { applyJsonLogic, logicTruthy, validateJsonLogic } from './jsonlogic.js';
import { matchOutcome, matchesDefinition, validateMatchDefinition } from './match.js';

const FIXED_SEED = 20250101;
const envSeed = process.env.ENGINE_PROP_SEED ? Number(process.env.ENGINE_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];

const TENANTS = 2000; // × REQUESTS per tenant, per seed
const REQUESTS = 16;

type Outcome = { thrown: 'scope' } | { allowed: boolean; reason: string; policyId?: string };

function engineOutcome(index: TenantIndex, c: GenCase): Outcome {
  try {
    const d: Decision = evaluate(index, c.request, c.options);
    return { allowed: d.allowed, reason: d.reason, ...(d.evaluatedPolicy ? { policyId: d.evaluatedPolicy.id } : {}) };
  } catch (e) {
    if (e instanceof ScopeNotFoundError) return { thrown: 'scope' };
    throw e;
  }
}

function refOutcome(t: TenantSnapshot, c: GenCase): Outcome {
  try {
    const d: RefDecision = referenceEvaluate(t, c.request, c.options);
    return { allowed: d.allowed, reason: d.reason, ...(d.policyId ? { policyId: d.policyId } : {}) };
  } catch (e) {
    if (e instanceof RefScopeNotFound) return { thrown: 'scope' };
    throw e;
  }
}

/** Half the tenants get many collections per type, filed by the collection index (testdata/many-collections.ts). */
const maybeMany = (r: Rng, t: TenantSnapshot): TenantSnapshot => (chance(r, 0.5) ? withManyCollections(r, t) : t);

let casesRun = 0;
/** Requests replayed with the subject's external id instead of its id. */
let externalCases = 0;
/** Decisions won by a deny whose condition errored (the fail-closed path must be exercised). */
let failClosedDenies = 0;
/** Allow policies skipped because their condition errored. */
let failClosedAllows = 0;
/** Conditions that hit a limit while evaluating (not refused up front by validation). */
let runtimeErrors = 0;
/** Decisions won by a deny reached through a collection whose match definition errored. */
let collectionErrorDenies = 0;

describe.each(seeds)('engine vs reference (%s seed %i)', (_label, seed) => {
  it(`agrees on ${TENANTS * REQUESTS} generated requests`, () => {
    const before = casesRun;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = maybeMany(r, genTenant(r));
        const index = TenantIndex.fromSnapshot(t);
        for (let i = 0; i < REQUESTS; i++) {
          const c = genRequest(r, t);
          const got = engineOutcome(index, c);
          const want = refOutcome(t, c);
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            throw new Error(`tenant seed ${tenantSeed}, request ${i}: engine ${JSON.stringify(got)} reference ${JSON.stringify(want)}\nrequest ${JSON.stringify(c)}`);
          }
          // By external id (the generator's are `ext-<id>`), the same decision as by id; a type
          // other than the subject's finds no subject where the id form answers no_match.
          const { subjectId, subjectType } = c.request.actor;
          const byExternal: GenCase = { request: { ...c.request, actor: { externalId: `ext-${subjectId}`, subjectType } }, options: c.options };
          const externalGot = engineOutcome(index, byExternal);
          expect(externalGot).toEqual(refOutcome(t, byExternal));
          const row = index.subject(subjectId!);
          const otherType = !!subjectType && row !== undefined && row.type !== subjectType;
          expect(externalGot, JSON.stringify(byExternal)).toEqual(
            otherType && 'reason' in got && got.reason === 'no_match' ? { allowed: false, reason: 'subject_not_found' } : got,
          );
          externalCases++;
          // The canary holds nothing: only a policy can let it in, never a role, grant or ancestor.
          if (c.request.actor.subjectId === CANARY && 'allowed' in got && got.allowed) expect(got.reason).toBe('policy_allow');
          // The unknown canary (no subject row, though dangling rows name it) is never allowed,
          // whatever the rest of the request, and the answer says why: replay every case as
          // that subject.
          const asUnknown: GenCase = { request: { ...c.request, actor: { subjectId: UNKNOWN_SUBJECT } }, options: c.options };
          const unknownGot = engineOutcome(index, asUnknown);
          expect(unknownGot).toEqual(refOutcome(t, asUnknown));
          if ('allowed' in unknownGot) {
            expect(unknownGot.allowed, JSON.stringify(asUnknown)).toBe(false);
            expect(['resource_not_found', 'gate_unreachable', 'subject_not_found'], JSON.stringify(asUnknown)).toContain(unknownGot.reason);
          }
          // Count the fail-closed paths taken (explaining only the cases a policy can touch).
          if (!('thrown' in got) && c.request.resource) {
            const text = JSON.stringify(evaluate(index, { ...c.request, explain: true }, c.options).trace);
            if (got.reason === 'policy_deny' && text.includes('deny policy is applied to fail closed')) failClosedDenies++;
            if (text.includes('allow policy is not applied (fail closed)')) failClosedAllows++;
            if (text.includes('errored (merge result too large)')) runtimeErrors++;
            if (got.reason === 'policy_deny' && new RegExp(`policy ${got.policyId} \\(collection \\w+, match definition errored`).test(text)) collectionErrorDenies++;
          }
          // Explanations never change the decision.
          if (i % 4 === 0 && !('thrown' in got)) {
            const explained = evaluate(index, { ...c.request, explain: true }, c.options);
            expect([explained.allowed, explained.reason]).toEqual([got.allowed, got.reason]);
            expect(explained.trace?.length).toBeGreaterThan(0);
          }
          casesRun++;
        }
      }),
      { seed, numRuns: TENANTS },
    );
    expect(casesRun - before).toBeGreaterThanOrEqual(10_000);
    expect(externalCases).toBeGreaterThanOrEqual(casesRun);
    expect(failClosedDenies).toBeGreaterThan(0);
    expect(failClosedAllows).toBeGreaterThan(0);
    expect(runtimeErrors).toBeGreaterThan(0);
    expect(collectionErrorDenies).toBeGreaterThan(0);
  });
});

// --- incremental == rebuild -------------------------------------------------------------------

function rowsOf(t: TenantSnapshot): Map<string, { kind: EntityKind; row: RowsByKind[EntityKind] }> {
  const m = new Map<string, { kind: EntityKind; row: RowsByKind[EntityKind] }>();
  for (const kind of ENTITY_KINDS) for (const row of (t.rows[kind] ?? []) as RowsByKind[EntityKind][]) m.set(`${kind}/${row.id}`, { kind, row });
  return m;
}

/** Changes turning A into B, shuffled, with some no-op re-upserts and deletes of missing rows. */
function diff(r: Rng, a: TenantSnapshot, b: TenantSnapshot): Change[] {
  const ra = rowsOf(a);
  const rb = rowsOf(b);
  const out: Change[] = [];
  for (const [k, { kind, row }] of ra) if (!rb.has(k)) out.push({ op: 'delete', kind, id: row.id } as Change);
  for (const [k, { kind, row }] of rb) {
    const old = ra.get(k);
    if (!old || JSON.stringify(old.row) !== JSON.stringify(row) || chance(r, 0.1)) {
      out.push({ op: 'upsert', kind, id: row.id, row: structuredClone(row) } as Change);
    }
  }
  if (chance(r, 0.3)) out.push({ op: 'delete', kind: 'resource', id: 'resource_never_existed' });
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(r, 0, i);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe.each(seeds)('incremental index equals a rebuilt one (%s seed %i)', (_label, seed) => {
  it('after random change sets', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (s) => {
        const r = mulberry32(s);
        const a = maybeMany(r, genTenant(r));
        const inc = TenantIndex.fromSnapshot(a);
        // Warm the lazy caches so invalidation is exercised too.
        for (let i = 0; i < 6; i++) engineOutcome(inc, genRequest(r, a));
        let current = a;
        const steps = int(r, 1, 3);
        for (let step = 0; step < steps; step++) {
          const b = maybeMany(r, genTenant(r));
          const changes = diff(r, current, b);
          // Split into several revisions.
          let rev = inc.revision;
          for (let i = 0; i < changes.length; i += 7) expect(inc.apply(++rev, changes.slice(i, i + 7))).toBe(true);
          expect(inc.apply(rev, [])).toBe(false); // replay ignored
          current = b;
          const fresh = TenantIndex.fromSnapshot(b);
          expect(derivedState(inc)).toEqual(derivedState(fresh));
          for (let i = 0; i < 10; i++) {
            const c = genRequest(r, b);
            expect(engineOutcome(inc, c)).toEqual(engineOutcome(fresh, c));
            expect(engineOutcome(inc, c)).toEqual(refOutcome(b, c));
          }
        }
      }),
      { seed, numRuns: 400 },
    );
  });
});

// --- effective permissions ⇔ evaluate -----------------------------------------------------------

function entryCovers(e: EffectivePermission, action: string, typeKey: string | undefined, patterns: string[] | null): boolean {
  if (e.action !== action && e.action !== '*') return false;
  if (patterns === null) return e.resourcePattern === '*';
  if (e.resourceType !== '*' && e.resourceType !== typeKey) return false;
  return patterns.includes(e.resourcePattern);
}

describe.each(seeds)('effective permissions agree with evaluate (%s seed %i)', (_label, seed) => {
  it('for every generated request without a deciding policy', () => {
    let checked = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (s) => {
        const r = mulberry32(s);
        const t = genTenant(r);
        const index = TenantIndex.fromSnapshot(t);
        const typeKeyOf = (resourceTypeId: string) => index.resourceType(resourceTypeId)?.key;
        for (let i = 0; i < REQUESTS; i++) {
          const c = genRequest(r, t, false);
          if (c.request.scopeId === 'scope_unknown') continue;
          c.options.gate = 'off';
          const d = evaluate(index, c.request, c.options);
          if (['policy_allow', 'policy_deny', 'resource_not_found', 'error'].includes(d.reason)) continue;
          const subjectId = c.request.actor.subjectId!;
          if (!index.subject(subjectId)) {
            expect(d.reason, JSON.stringify(c)).toBe('subject_not_found');
            expect(effectivePermissions(index, { subjectId, scopeId: c.request.scopeId })).toEqual([]);
            continue;
          }
          const { scopeId, action } = c.request;
          const ref = c.request.resource;
          let expected: string;
          if (!ref) {
            const e = effectivePermissions(index, { subjectId, scopeId });
            expected = e.some((x) => x.source !== 'ownership' && entryCovers(x, action, undefined, null)) ? 'role' : 'no_match';
          } else {
            const resource = resolveResource(index, scopeId, ref);
            if (!resource) {
              // Unknown external id: pattern alone.
              const e = effectivePermissions(index, { subjectId, scopeId });
              const ext = (ref as { externalResourceId: string; resourceType: string });
              expected = e.some((x) => x.source !== 'ownership' && entryCovers(x, action, ext.resourceType, ['*', ext.externalResourceId])) ? 'role' : 'no_match';
            } else {
              const typeKey = 'resourceId' in ref ? typeKeyOf(resource.resourceTypeId) : ref.resourceType;
              const e = effectivePermissions(index, { subjectId, scopeId, resourceId: resource.id });
              // The same list by the subject's external id.
              expect(effectivePermissions(index, { subjectExternalId: `ext-${subjectId}`, scopeId, resourceId: resource.id })).toEqual(e);
              const direct = ['*', resource.externalResourceId, resource.id];
              if (e.some((x) => x.source !== 'ownership' && entryCovers(x, action, typeKey, direct))) expected = 'role';
              else if (e.some((x) => x.source === 'ownership' && entryCovers(x, action, typeKey, direct))) expected = 'ownership';
              else {
                expected = 'no_match';
                const seen = new Set([resource.id]);
                let cur = resource;
                for (let depth = 0; depth < 64; depth++) {
                  const link = index.parentOf(index.resourceNode(cur.id));
                  const edge = link && index.resourceEdge(link.id);
                  const parent = edge && edge.cascade === 'inherit' ? index.resource(edge.parentResourceId) : undefined;
                  if (!parent || seen.has(parent.id)) break;
                  seen.add(parent.id);
                  const ea = effectivePermissions(index, { subjectId, scopeId, resourceId: parent.id });
                  if (ea.some((x) => entryCovers(x, action, typeKey, [parent.id]))) {
                    expected = 'inherited';
                    break;
                  }
                  cur = parent;
                }
              }
            }
          }
          expect(d.reason, JSON.stringify(c)).toBe(expected);
          expect(d.allowed).toBe(expected !== 'no_match');
          checked++;
        }
      }),
      { seed, numRuns: 400 },
    );
    expect(checked).toBeGreaterThan(1000);
  });
});

// --- match definitions: compiled matcher vs direct interpretation ------------------------------

describe.each(seeds)('match definitions agree with the reference (%s seed %i)', (label, seed) => {
  it('on generated definitions and resources', () => {
    let matched = 0;
    let errored = 0;
    let invalid = 0;
    let total = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (s) => {
        const r = mulberry32(s);
        const t = genTenant(r);
        const index = TenantIndex.fromSnapshot(t);
        const defs = Array.from({ length: 8 }, () => genMatch(r));
        for (const def of defs) {
          // The control plane refuses exactly what the reference refuses.
          const refused = refMatchDefinitionError(def);
          expect(validateMatchDefinition(def) === null, `${JSON.stringify(def)}: reference says ${refused ?? 'valid'}`).toBe(refused === null);
        }
        for (const res of t.rows.resource ?? []) {
          const tags = index.resourceTags(res.id);
          const pairs: [string, string][] = [...tags].flatMap(([g, ids]) => [...ids].map((id) => [g, id] as [string, string]));
          for (const def of defs) {
            const got = matchesDefinition(def, { resource: res, tags: () => tags });
            expect(got, JSON.stringify({ def, res, pairs })).toBe(refMatch(def, res, pairs));
            const outcome = matchOutcome(def, { resource: res, tags: () => tags });
            expect(outcome, JSON.stringify({ def, res, pairs })).toBe(refMatchOutcome(def, res, pairs));
            total++;
            if (got) matched++;
            if (outcome === 'error') errored++;
            if (refMatchDefinitionError(def) !== null) invalid++;
          }
        }
      }),
      { seed, numRuns: 600 },
    );
    // Every outcome must be well represented for the comparison to mean anything, invalid
    // definitions (which must error, never match) included.
    expect(matched).toBeGreaterThan(total * 0.1);
    expect(total - matched).toBeGreaterThan(total * 0.1);
    expect(invalid).toBeGreaterThan(total * 0.1);
    expect(errored).toBeGreaterThanOrEqual(invalid);
    // Valid definitions that error on a resource are rare in the generator's output: some random
    // seeds produce none (1180611981), so only the fixed seed must show them.
    if (label === 'fixed') expect(errored).toBeGreaterThan(invalid);
  });
});

// --- JSON Logic: the engine's wrapper vs the reference's -----------------------------------------

describe('generated conditions agree with the reference', () => {
  /** What each generated condition is evaluated against: data that makes its value an array, an empty one, an object, null. */
  const DATA: unknown[] = [
    {},
    { xs: [], ip: '10.0.0.1', time: {}, subject: { meta: {} } },
    { xs: [0, 2, 3], country: 'FR', deviceType: '', subject: { id: 's', type: 'user', meta: { dept: 'a', level: 2, xs: [] } } },
    { xs: Array.from({ length: 16 }, (_, i) => i), subject: { meta: { xs: [1, 2] } }, resource: { id: 'resource_1', attributes: {} } },
    { resource: { id: 'r', displayName: null, attributes: { tier: 'gold', labels: [], size: 3, xs: [1] } } },
    { resource: { id: 'r', displayName: 'n', attributes: { tier: 'silver', labels: ['x', 'y'] } } },
  ];

  it('in validity, value and truthiness', () => {
    let refused = 0;
    let falsyArrays = 0;
    for (const rule of GENERATED_CONDITIONS) {
      const why = refJsonLogicError(rule);
      expect(validateJsonLogic(rule) === null, `${JSON.stringify(rule)}: reference says ${why ?? 'valid'}`).toBe(why === null);
      if (why !== null) refused++;
      for (const data of DATA) {
        const got = applyJsonLogic(rule, data);
        const want = refApplyLogic(rule, data);
        const where = JSON.stringify({ rule, data });
        expect(got.ok, where).toBe(want.ok);
        if (!got.ok || !want.ok) continue;
        expect(got.value, where).toEqual(want.value);
        expect(logicTruthy(got.value), where).toBe(refTruthy(want.value));
        if (Array.isArray(want.value) && want.value.length === 0) falsyArrays++;
      }
    }
    expect(refused).toBeGreaterThan(5);
    expect(falsyArrays).toBeGreaterThan(5);
  });
});
