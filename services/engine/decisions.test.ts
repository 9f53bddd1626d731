/**
 * Plays the decision table in testdata/decisions.json against the engine (from a snapshot and
 * from an index grown change by change) and against the reference evaluator. A new rule is a
 * new row in the table.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AmbiguousSubjectError, ScopeNotFoundError } from './errors.js';
import { evaluate, type EvaluateRequest, type GateMode } from './evaluate.js';
import { TenantIndex } from './tenant-index/mod.js';
import { ENTITY_KINDS, type Change, type EntityKind, type RowsByKind, type TenantSnapshot } from './model.js';
import { RefAmbiguousSubject, RefScopeNotFound, referenceEvaluate } from './testdata/reference.js';

interface DecisionCase {
  name: string;
  rule: string;
  gate?: GateMode;
  now?: string;
  request: EvaluateRequest;
  expect?: { allowed: boolean; reason: string; evaluatedPolicy?: string };
  expectError?: 'ScopeNotFoundError' | 'AmbiguousSubjectError';
  traceIncludes?: string[];
}

/** Each error a row may expect, as the engine and the reference evaluator throw it. */
const ERRORS = {
  ScopeNotFoundError: { engine: ScopeNotFoundError, reference: RefScopeNotFound },
  AmbiguousSubjectError: { engine: AmbiguousSubjectError, reference: RefAmbiguousSubject },
} as const;

interface Table {
  defaults: { gate: GateMode; now: string };
  tenant: TenantSnapshot;
  cases: DecisionCase[];
}

const table = JSON.parse(readFileSync(new URL('./testdata/decisions.json', import.meta.url), 'utf8')) as Table;

/** The same tenant built one upsert per revision, in reverse kind order (children before parents). */
function grownIndex(t: TenantSnapshot): TenantIndex {
  const idx = TenantIndex.fromSnapshot({ revision: 0, rows: {} });
  let rev = 0;
  for (const kind of [...ENTITY_KINDS].reverse() as EntityKind[]) {
    for (const row of (t.rows[kind] ?? []) as RowsByKind[EntityKind][]) {
      idx.apply(++rev, [{ op: 'upsert', kind, id: row.id, row } as Change]);
    }
  }
  return idx;
}

const built = TenantIndex.fromSnapshot(table.tenant);
const grown = grownIndex(table.tenant);

describe('decision table', () => {
  it('has unique case names', () => {
    const names = table.cases.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  describe.each(table.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const options = { now: new Date(c.now ?? table.defaults.now), gate: c.gate ?? table.defaults.gate };
    const request: EvaluateRequest = { ...c.request, explain: c.traceIncludes !== undefined };

    it('engine', () => {
      for (const index of [built, grown]) {
        if (c.expectError) {
          expect(() => evaluate(index, request, options)).toThrow(ERRORS[c.expectError].engine);
          continue;
        }
        const d = evaluate(index, request, options);
        expect({ allowed: d.allowed, reason: d.reason }).toEqual({ allowed: c.expect!.allowed, reason: c.expect!.reason });
        expect(d.decidedByPolicy).toBe(d.reason === 'policy_allow' || d.reason === 'policy_deny');
        expect(d.evaluatedPolicy?.id).toBe(c.expect!.evaluatedPolicy);
        expect(d.revision).toBe(index.revision);
        if (c.traceIncludes) {
          const text = (d.trace ?? []).map((s) => s.message).join('\n');
          for (const fragment of c.traceIncludes) expect(text).toContain(fragment);
        }
      }
    });

    it('reference evaluator', () => {
      if (c.expectError) {
        expect(() => referenceEvaluate(table.tenant, c.request, options)).toThrow(ERRORS[c.expectError].reference);
        return;
      }
      const d = referenceEvaluate(table.tenant, c.request, options);
      expect({ allowed: d.allowed, reason: d.reason, policy: d.policyId }).toEqual({
        allowed: c.expect!.allowed,
        reason: c.expect!.reason,
        policy: c.expect!.evaluatedPolicy,
      });
    });
  });
});
