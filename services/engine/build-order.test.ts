/**
 * A decision does not depend on the order the index received its rows: the control plane builds
 * from its store, a sidecar from the Watch stream's pages, in other orders. The builds must
 * agree exactly (equal derived state), and so must decisions, explanations (step by step) and
 * effective permissions. An error counts as agreement only when it is one of the engine's
 * typed errors, of the same class with the same message in both orders; any other error is a
 * crash and fails the test, even when both orders crash alike, and so does an internal error
 * that `evaluate` turned into a deny.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectivePermissions } from './effective.js';
import { InvalidChangeError, ResourceNotFoundError, ScopeNotFoundError } from './errors.js';
import { evaluate } from './evaluate.js';
import type { TenantSnapshot } from './model.js';
import { TenantIndex } from './tenant-index/mod.js';
import { derivedState } from './testdata/derived-state.js';
import { genRequest, genTenant, type GenCase } from './testdata/generate.js';
import { mulberry32 } from '../../test/seeded-random.js';

const NOW = new Date('2026-11-25T10:00:00Z');

/** The errors the engine throws on purpose; anything else thrown is a crash. */
const TYPED_ERRORS: readonly (new (...args: never[]) => Error)[] = [ScopeNotFoundError, ResourceNotFoundError, InvalidChangeError];

type Settled<T> = { value: T } | { error: { class: string; message: string } };

/** What `f` returns, or the typed error it throws (its exact class and message); rethrows anything else. */
function settle<T>(f: () => T): Settled<T> {
  try {
    return { value: f() };
  } catch (e) {
    const typed = TYPED_ERRORS.find((c) => e instanceof Error && e.constructor === c);
    if (typed === undefined) throw e;
    return { error: { class: typed.name, message: (e as Error).message } };
  }
}

/** One request's decision (with its explanation) and the subject's effective permissions at its scope. */
function outcome(index: TenantIndex, c: GenCase): unknown {
  const internal: unknown[] = [];
  const decision = settle(() => evaluate(index, { ...c.request, explain: true }, { ...c.options, now: NOW, onError: (e) => internal.push(e) }));
  // evaluate denies with reason `error` on an internal error; the error itself is a crash.
  if (internal.length > 0) throw internal[0];
  const eff = settle(() => effectivePermissions(index, { subjectId: c.request.actor.subjectId, scopeId: c.request.scopeId }));
  return { decision, eff };
}

function reversed(t: TenantSnapshot): TenantSnapshot {
  const rows: Record<string, unknown[]> = {};
  for (const [kind, list] of Object.entries(t.rows)) rows[kind] = [...(list as unknown[])].reverse();
  return { ...t, rows: rows as unknown as TenantSnapshot['rows'] };
}

/** What building and deciding run on; the tests below swap in faulty ones. */
interface Engine {
  build(t: TenantSnapshot): TenantIndex;
  outcome(index: TenantIndex, c: GenCase): unknown;
}

const REAL: Engine = { build: (t) => TenantIndex.fromSnapshot(t), outcome };

/** Builds the tenant in its order and in reverse, then asks both `requests` generated requests; fails on any disagreement. */
function expectOrdersAgree(seed: number, engine: Engine = REAL, requests = 20): void {
  const r = mulberry32(seed);
  const t = genTenant(r);
  const a = settle(() => engine.build(t));
  const b = settle(() => engine.build(reversed(t)));
  if (!('value' in a) || !('value' in b)) {
    expect(b).toEqual(a);
    return;
  }
  expect(derivedState(b.value)).toEqual(derivedState(a.value));
  for (let i = 0; i < requests; i++) {
    const c = genRequest(r, t);
    expect(engine.outcome(b.value, c), JSON.stringify(c)).toEqual(engine.outcome(a.value, c));
  }
}

describe('build order', () => {
  it('rows in reverse order give the same derived state, decisions, explanations and effective permissions', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => expectOrdersAgree(seed)),
      { seed: 20261125, numRuns: 300 },
    );
  });

  describe('fails on a planted fault', () => {
    // Seeds whose generated requests include known scopes (the planted faults need a decision to run).
    const SEEDS = [1, 2, 3, 4, 5];
    /** An engine whose index built from reversed rows (`b`) is `fault(b)`. */
    const faultyInReverse = (fault: (index: TenantIndex) => TenantIndex): Engine => {
      let builds = 0;
      return {
        // expectOrdersAgree builds the given order first, then the reversed one.
        build: (t) => {
          const idx = TenantIndex.fromSnapshot(t);
          return builds++ % 2 === 1 ? fault(idx) : idx;
        },
        outcome,
      };
    };
    /** `index` with one method replaced. */
    const withMethod = (index: TenantIndex, name: keyof TenantIndex, impl: (...args: never[]) => unknown): TenantIndex =>
      new Proxy(index, {
        get: (target, prop) => {
          if (prop === name) return impl;
          const v = Reflect.get(target, prop, target) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    const crash = () => {
      throw new TypeError('planted crash');
    };

    it('a crash inside evaluate in one order (denied as `error` there)', () => {
      const engine = faultyInReverse((idx) => withMethod(idx, 'subjectNode', crash));
      expect(() => SEEDS.forEach((s) => expectOrdersAgree(s, engine))).toThrow('planted crash');
    });

    it('the same crash inside evaluate in both orders', () => {
      const engine: Engine = { build: (t) => withMethod(TenantIndex.fromSnapshot(t), 'subjectNode', crash), outcome };
      expect(() => SEEDS.forEach((s) => expectOrdersAgree(s, engine))).toThrow('planted crash');
    });

    it('the same crash thrown out of effectivePermissions in both orders', () => {
      const engine: Engine = { build: (t) => withMethod(TenantIndex.fromSnapshot(t), 'scope', crash), outcome };
      expect(() => SEEDS.forEach((s) => expectOrdersAgree(s, engine))).toThrow('planted crash');
    });

    it('a build that crashes in one order, and in both', () => {
      let builds = 0;
      const oneOrder: Engine = { build: (t) => (builds++ % 2 === 1 ? crash() : TenantIndex.fromSnapshot(t)), outcome };
      expect(() => expectOrdersAgree(1, oneOrder)).toThrow('planted crash');
      expect(() => expectOrdersAgree(1, { build: crash, outcome })).toThrow('planted crash');
    });

    it('a typed error whose message differs between the orders', () => {
      let builds = 0;
      const engine: Engine = { build: () => { throw new InvalidChangeError(`row ${builds++ % 2}`); }, outcome };
      expect(() => expectOrdersAgree(1, engine)).toThrow(/deeply equal/);
      // The same typed error in both orders is agreement.
      expect(() => expectOrdersAgree(1, { build: () => { throw new InvalidChangeError('row'); }, outcome })).not.toThrow();
    });

    it('derived state that differs between the orders', () => {
      const engine = faultyInReverse((idx) => {
        idx.apply(idx.revision + 1, [{ op: 'upsert', kind: 'scope', id: 'scope_planted', row: { id: 'scope_planted', tenantId: 't', parentId: null, typeId: 'st', name: 'planted' } }]);
        return idx;
      });
      expect(() => expectOrdersAgree(1, engine)).toThrow(/deeply equal/);
    });
  });
});
