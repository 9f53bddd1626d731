/**
 * A decision does not depend on the order the index received its rows: the control plane builds
 * from its store, a sidecar from the Watch stream's pages, in other orders. Decisions,
 * explanations (step by step) and effective permissions must be identical.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectivePermissions } from './effective.js';
import { evaluate } from './evaluate.js';
import { TenantIndex } from './index.js';
import type { TenantSnapshot } from './model.js';
import { genRequest, genTenant } from './testdata/generate.js';
import { mulberry32 } from '../../test/seeded-random.js';

const NOW = new Date('2026-11-25T10:00:00Z');

function reversed(t: TenantSnapshot): TenantSnapshot {
  const rows: Record<string, unknown[]> = {};
  for (const [kind, list] of Object.entries(t.rows)) rows[kind] = [...(list as unknown[])].reverse();
  return { ...t, rows: rows as unknown as TenantSnapshot['rows'] };
}

function outcome(index: TenantIndex, c: ReturnType<typeof genRequest>) {
  try {
    const d = evaluate(index, { ...c.request, explain: true }, { ...c.options, now: NOW });
    const eff = effectivePermissions(index, { subjectId: c.request.actor.subjectId, scopeId: c.request.scopeId });
    return { d, eff };
  } catch (e) {
    return { thrown: (e as Error).name };
  }
}

describe('build order', () => {
  it('rows in reverse order give the same decisions, explanations and effective permissions', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
        const r = mulberry32(seed);
        const t = genTenant(r);
        const a = TenantIndex.fromSnapshot(t);
        const b = TenantIndex.fromSnapshot(reversed(t));
        for (let i = 0; i < 20; i++) {
          const c = genRequest(r, t);
          expect(outcome(b, c), JSON.stringify(c)).toEqual(outcome(a, c));
        }
      }),
      { seed: 20261125, numRuns: 300 },
    );
  });
});
