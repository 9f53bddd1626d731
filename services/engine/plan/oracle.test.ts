/**
 * PlanResources against its definition, in memory, on the differential generator's tenants
 * (every rule of the decision path, every gate mode): for every resource of the type, the
 * plan's tree (a residual decided by evaluate) equals evaluate's answer, and a row whose value
 * reaches no residual equals it without evaluate; the widened tree (what the SQL selects)
 * holds every allowed resource and none the tree denies. Seeded (PLAN_PROP_SEED replays).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/seeded-random.js';
import { AmbiguousSubjectError, ScopeNotFoundError } from '../errors.js';
import { evaluate, type GateMode } from '../evaluate.js';
import type { Resource, TenantSnapshot } from '../model.js';
import { TenantIndex } from '../tenant-index/mod.js';
import { genTenant } from '../testdata/generate.js';
import { genPlanCase, withCopies, withOddAttributes } from '../testdata/plan-cases.js';
import { planResources } from './compile.js';
import { evaluateTree, widen } from './tree.js';

const FIXED_SEED = 20250601;
const envSeed = process.env.PLAN_PROP_SEED ? Number(process.env.PLAN_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];
const TENANTS = Number(process.env.PLAN_PROP_TENANTS ?? 500);
const QUERIES = 6;
const GATES: readonly GateMode[] = ['off', 'links-fallback', 'strict'];

const stats = { plans: 0, rows: 0, allowed: 0, exactRows: 0, residualPlans: 0, conditional: 0 };

describe.each(seeds)('the plan equals {r : evaluate(r).allowed} (%s seed %i)', (_label, seed) => {
  it('on generated tenants, subjects, scopes, actions, types and contexts, under every gate mode', () => {
    console.log(`plan oracle seed ${seed} (PLAN_PROP_SEED=${seed} replays it)`);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (tenantSeed) => {
        const r = mulberry32(tenantSeed);
        const t = withOddAttributes(r, withCopies(r, genTenant(r)));
        const index = TenantIndex.fromSnapshot(t);
        for (let i = 0; i < QUERIES; i++) {
          const { query, now } = genPlanCase(r, t);
          for (const gate of GATES) {
            const options = { now, gate };
            const where = `tenant seed ${tenantSeed}, query ${i}, gate ${gate}: ${JSON.stringify(query)} at ${now.toISOString()}`;
            if (index.scopePath(query.scopeId).ids.length === 0) {
              expect(() => planResources(index, query, options), where).toThrow(ScopeNotFoundError);
              continue;
            }
            let plan;
            try {
              plan = planResources(index, query, options);
            } catch (e) {
              if (e instanceof AmbiguousSubjectError) {
                expect(() => evaluate(index, { ...query, resource: { resourceId: 'resource_0' } }, options), where).toThrow(AmbiguousSubjectError);
                continue;
              }
              throw e;
            }
            stats.plans++;
            if (plan.hasResidual) stats.residualPlans++;
            if (plan.kind === 'conditional') stats.conditional++;
            expect(plan.revision).toBe(index.revision);
            const wide = widen(plan.condition);
            for (const node of index.resourcesInIdOrder(query.resourceType)) {
              const allowed = evaluate(index, { ...query, resource: { resourceId: index.resourceNodes.idOf(node) } }, options).allowed;
              const row = { resource: index.resource(index.resourceNodes.idOf(node)) as Resource, typeKey: query.resourceType };
              const value = evaluateTree(plan.condition, row);
              stats.rows++;
              if (allowed) stats.allowed++;
              if (value !== undefined) {
                stats.exactRows++;
                expect(value, `${where}: resource ${index.resourceNodes.idOf(node)} (no residual reached)\n${JSON.stringify(plan.condition)}`).toBe(allowed);
              }
              // With residuals decided by evaluate, the plan gives evaluate's answer.
              expect(value ?? allowed, `${where}: resource ${index.resourceNodes.idOf(node)}`).toBe(allowed);
              // The SQL's set: a superset of the allowed rows, with none the tree denies.
              const selected = evaluateTree(wide, row);
              if (allowed) expect(selected, `${where}: resource ${index.resourceNodes.idOf(node)} allowed but not selected`).toBe(true);
              if (value === false) expect(selected, `${where}: resource ${index.resourceNodes.idOf(node)} denied but selected`).toBe(false);
            }
          }
        }
      }),
      { seed, numRuns: TENANTS },
    );
    console.log(`plan oracle: ${JSON.stringify(stats)}`);
    expect(stats.plans).toBeGreaterThan(TENANTS * 10);
    expect(stats.conditional).toBeGreaterThan(TENANTS);
    expect(stats.allowed).toBeGreaterThan(TENANTS);
    // Most rows are decided by the plan alone.
    expect(stats.exactRows).toBeGreaterThan(stats.rows * 0.6);
  });
});
