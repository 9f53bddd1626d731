/**
 * The SQL rendering of plans run on a real PostgreSQL table (the default column mapping,
 * attributes jsonb), in a database made for this suite with an ICU English default collation;
 * skipped without DATABASE_URL.
 * - Every comparison operator against values of every JSON type, on a jsonb attribute and a
 *   text column: the rows PostgreSQL selects are those the tree's comparison holds for.
 * - On the differential generator's tenants, every gate mode: `select id … where <sql>` holds
 *   every resource evaluate allows and none the plan denies; without residuals it is exactly
 *   the allowed set; with them, confirming each selected row with evaluate gives that set.
 * Seeded (PLAN_PROP_SEED replays).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase } from '../../../test/databases.js';
import { mulberry32 } from '../../../test/seeded-random.js';
import { AmbiguousSubjectError } from '../errors.js';
import { evaluate, type GateMode } from '../evaluate.js';
import type { Resource } from '../model.js';
import { TenantIndex } from '../tenant-index/mod.js';
import { genTenant } from '../testdata/generate.js';
import { genPlanCase, withCopies, withOddAttributes } from '../testdata/plan-cases.js';
import { planResources } from './compile.js';
import { planToSql } from './sql.js';
import { compare, evaluateTree, not, type PlanOperator, type PlanScalar } from './tree.js';

const FIXED_SEED = 20250602;
const envSeed = process.env.PLAN_PROP_SEED ? Number(process.env.PLAN_PROP_SEED) : undefined;
const seeds: [string, number][] = envSeed !== undefined ? [['env', envSeed]] : [['fixed', FIXED_SEED], ['random', (Math.random() * 2 ** 31) | 0]];
const TENANTS = Number(process.env.PLAN_PROP_TENANTS ?? 300);
const GATES: readonly GateMode[] = ['off', 'links-fallback', 'strict'];

const TABLE = `create table resources (
  id text primary key, external_resource_id text, owner_scope_id text, resource_type text,
  attributes jsonb, display_name text, created_at timestamptz, created_by text)`;

describe.skipIf(!process.env.DATABASE_URL)('plans as SQL on postgres', () => {
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  beforeAll(async () => {
    // A linguistic default collation (ICU English), as many applications' databases have: string
    // order must still be the engine's, so the SQL must not depend on the database's collation.
    db = await createScratchDatabase(process.env.DATABASE_URL as string, 'authz_plan', "template template0 encoding 'UTF8' locale_provider icu icu_locale 'en'");
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(TABLE);
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  /** Replaces the table's rows with `rows` (the resources as the index holds them). */
  async function load(rows: { resource: Resource; typeKey: string | undefined }[]): Promise<void> {
    await client.query('truncate resources');
    if (rows.length === 0) return;
    const json = rows.map(({ resource: r, typeKey }) => ({
      id: r.id, external_resource_id: r.externalResourceId, owner_scope_id: r.ownerScopeId, resource_type: typeKey ?? null,
      attributes: r.attributes ?? null, display_name: r.displayName ?? null, created_at: r.createdAt, created_by: r.createdBy,
    }));
    await client.query(
      `insert into resources select * from jsonb_to_recordset($1::jsonb) as x(id text, external_resource_id text, owner_scope_id text,
        resource_type text, attributes jsonb, display_name text, created_at timestamptz, created_by text)`,
      [JSON.stringify(json)],
    );
  }

  async function select(sql: string, params: unknown[]): Promise<string[]> {
    const res = await client.query(`select id from resources where ${sql} order by id collate "C"`, params);
    return res.rows.map((x: { id: string }) => x.id);
  }

  it('renders every operator with the engine\'s JSON types, on a jsonb attribute and a text column', async () => {
    const VALUES: unknown[] = [
      undefined, null, 0, -0, 1, 2, 2.5, 3, 10, 1e21, -1, true, false, '', '1', '2', '10', 'a', 'ab', 'abc', 'b', 'B', 'é', 'e\u0301', '\u{1F600}', '\uFFFD',
      'gold', 'golden', [], [1], [1, 2], ['a'], ['a', 'b'], [null], [['a']], [{ a: 1 }], {}, { a: 1 }, { 0: 'a' },
    ];
    const rows = VALUES.map((v, i) => ({
      resource: {
        id: `resource_${String(i).padStart(2, '0')}`, tenantId: 't', resourceTypeId: 'rt', ownerScopeId: 's', externalResourceId: `e${i}`,
        attributes: v === undefined ? {} : { v, n: { v } }, displayName: typeof v === 'string' ? v : i % 2 ? null : undefined,
        createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'x',
      } as unknown as Resource,
      typeKey: 'doc',
    }));
    await load(rows);
    const OPERANDS: Record<PlanOperator, (PlanScalar | PlanScalar[])[]> = {
      eq: [null, 0, 1, 2.5, 1e21, true, false, '', '1', 'a', 'é', '\u{1F600}'],
      in: [[], [1, 'a'], [null], [null, 2], ['gold', 'b'], [true, 0]],
      gt: [0, 1, 2.5, '', 'a', 'ab', 'B', '\u00ff'],
      gte: [1, 'ab'],
      lt: [2, 10, 'b', 'é', '1'],
      lte: [2.5, 'abc'],
      contains: ['', 'a', 'b', 1, null, true, 'ol'],
      startsWith: ['', 'a', 'go', 'é'],
      endsWith: ['', 'b', 'en', '\u0301'],
    };
    let checked = 0;
    for (const field of ['attributes.v', 'attributes.n.v', 'displayName'] as const) {
      for (const [op, xs] of Object.entries(OPERANDS) as [PlanOperator, (PlanScalar | PlanScalar[])[]][]) {
        for (const x of xs) {
          for (const node of [compare(field, op, x), not(compare(field, op, x))]) {
            const want = rows.filter((row) => evaluateTree(node, row)).map((row) => row.resource.id);
            const { sql, params } = planToSql(node, 'doc');
            expect(await select(sql, params), `${JSON.stringify(node)}: ${sql} ${JSON.stringify(params)}`).toEqual(want);
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(300);
  });

  describe.each(seeds)('on generated tenants (%s seed %i)', (_label, seed) => {
    it('selects every allowed resource and none the plan denies; exactly the allowed set without residuals', async () => {
      console.log(`plan SQL oracle seed ${seed} (PLAN_PROP_SEED=${seed} replays it)`);
      const stats = { plans: 0, conditional: 0, exact: 0, residual: 0, rows: 0, selected: 0 };
      const r0 = mulberry32(seed);
      for (let n = 0; n < TENANTS; n++) {
        const tenantSeed = Math.floor(r0() * 2 ** 31);
        const r = mulberry32(tenantSeed);
        const t = withOddAttributes(r, withCopies(r, genTenant(r)));
        const index = TenantIndex.fromSnapshot(t);
        const types = new Map((t.rows.resource_type ?? []).map((x) => [x.id, x.key]));
        await load([...new Set((t.rows.resource ?? []).map((x) => x.id))].map((id) => {
          const resource = index.resource(id) as Resource;
          return { resource, typeKey: types.get(resource.resourceTypeId) };
        }));
        for (let i = 0; i < 6; i++) {
          const { query, now } = genPlanCase(r, t);
          if (index.scopePath(query.scopeId).ids.length === 0) continue;
          for (const gate of GATES) {
            const options = { now, gate };
            const where = `tenant seed ${tenantSeed}, query ${i}, gate ${gate}: ${JSON.stringify(query)} at ${now.toISOString()}`;
            let plan;
            try {
              plan = planResources(index, query, options);
            } catch (e) {
              if (e instanceof AmbiguousSubjectError) continue;
              throw e;
            }
            stats.plans++;
            if (plan.kind === 'conditional') stats.conditional++;
            const allowed: string[] = [];
            const denied = new Set<string>();
            for (const node of index.resourcesInIdOrder(query.resourceType)) {
              if (evaluate(index, { ...query, resource: { resourceId: index.resourceNodes.idOf(node) } }, options).allowed) allowed.push(index.resourceNodes.idOf(node));
              if (evaluateTree(plan.condition, { resource: index.resource(index.resourceNodes.idOf(node)) as Resource, typeKey: query.resourceType }) === false) denied.add(index.resourceNodes.idOf(node));
              stats.rows++;
            }
            allowed.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
            const { sql, params } = planToSql(plan.condition, query.resourceType);
            const selected = await select(sql, params);
            stats.selected += selected.length;
            const at = `${where}\n${sql}\n${JSON.stringify(params)}`;
            if (!plan.hasResidual) {
              stats.exact++;
              expect(selected, at).toEqual(allowed);
              continue;
            }
            stats.residual++;
            for (const id of allowed) expect(selected, `${at}: allowed ${id} not selected`).toContain(id);
            for (const id of selected) expect(denied.has(id), `${at}: ${id} denied by the plan but selected`).toBe(false);
            // What an application does with a residual plan: confirm each selected row.
            const confirmed = selected.filter((id) => evaluate(index, { ...query, resource: { resourceId: id } }, options).allowed);
            expect(confirmed, at).toEqual(allowed);
          }
        }
      }
      console.log(`plan SQL oracle: ${JSON.stringify(stats)}`);
      expect(stats.plans).toBeGreaterThan(TENANTS * 10);
      expect(stats.conditional).toBeGreaterThan(TENANTS / 2);
      expect(stats.selected).toBeGreaterThan(TENANTS);
    }, 300_000);
  });
});
