/**
 * The engine's decision table (services/engine/testdata/decisions.json) played on every surface
 * of both processes: on each backend, one control plane per gate mode holds the table's tenant
 * and a sidecar follows each. Every row goes to the pair of its gate mode, at its clock, as an
 * `Evaluate` and inside an `EvaluateBatch`, over REST, Connect JSON, Connect binary, gRPC and
 * gRPC-Web, and must get the table's answer everywhere. A new rule is a new row: nothing here
 * names a row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { BATCH_MAX_OPERATIONS, DECISION_MAX_OPERATIONS } from '../../services/engine/budget.js';
import { evaluate, type GateMode } from '../../services/engine/evaluate.js';
import { TenantIndex } from '../../services/engine/tenant-index/mod.js';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import { TEST_BOOTSTRAP_KEY, describeEachBackend, startTestControlPlane } from '../harness.js';
import { SURFACES, evaluateBatchOn, evaluateOn, type Outcome } from './surfaces.js';
import {
  GATE_MODES, TABLE, atClock, clockOf, decisionOf, expectedError, gateOf, needsRefusedRows, seedDecisionTable, wireRequest,
  type DecisionCase, type Process, type SeededTable,
} from './decision-table.js';

/**
 * Rows a batch: the batch's shared operation budget covers this many decisions each spending its
 * whole own budget, so sharing it cannot change a row's answer.
 */
const BATCH_ROWS = Math.floor(BATCH_MAX_OPERATIONS / DECISION_MAX_OPERATIONS);

const RPCS = ['Evaluate', 'EvaluateBatch'] as const;

/** What a row's answer is reduced to at one process, surface and RPC. */
type Summary = Record<string, unknown>;

function summarize(c: DecisionCase, o: Outcome): Summary {
  if ('error' in o) return { error: { code: o.error.code, reason: o.error.reason, field: o.error.field } };
  const d = decisionOf(o.ok);
  const fragments = c.traceIncludes ?? [];
  return {
    allowed: d.allowed, reason: d.reason, decidedByPolicy: d.decidedByPolicy, evaluatedPolicy: d.evaluatedPolicy, revision: d.revision,
    traceHas: fragments.filter((f) => d.trace.includes(f)),
  };
}

function expected(c: DecisionCase, process: Process, rpc: (typeof RPCS)[number], revision: number): Summary {
  const error = expectedError(c, process);
  // A batch names the field of its request: each refused row is played in a batch of its own.
  if (error) return { error: rpc === 'EvaluateBatch' ? { ...error, field: `requests[0].${error.field}` } : error };
  const e = c.expect!;
  return {
    allowed: e.allowed, reason: e.reason, decidedByPolicy: e.reason === 'policy_allow' || e.reason === 'policy_deny',
    evaluatedPolicy: e.evaluatedPolicy, revision, traceHas: c.traceIncludes ?? [],
  };
}

describe('the decision table', () => {
  it('states, for every pair of gate modes, a row that the other mode answers otherwise', () => {
    const index = TenantIndex.fromSnapshot(TABLE.tenant);
    const answer = (c: DecisionCase, gate: GateMode) => {
      const d = evaluate(index, c.request, { now: new Date(clockOf(c)), gate });
      return `${d.allowed} ${d.reason} ${d.evaluatedPolicy?.id ?? ''}`;
    };
    const found: Record<string, boolean> = {};
    for (const stated of GATE_MODES) {
      for (const other of GATE_MODES) {
        if (other === stated) continue;
        found[`${stated} vs ${other}`] = TABLE.cases.some((c) => !c.expectError && gateOf(c) === stated &&
          answer(c, other) !== `${c.expect!.allowed} ${c.expect!.reason} ${c.expect!.evaluatedPolicy ?? ''}`);
      }
    }
    // Else a process answering under the wrong gate mode would pass every row.
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, true])));
  });
});

describeEachBackend('the decision table on every surface of a control plane and a sidecar (%s)', (backend) => {
  const stacks = new Map<GateMode, { controlPlane: Awaited<ReturnType<typeof startTestControlPlane>>; sidecar: Sidecar }>();
  const started: { close(): Promise<void> }[] = [];
  let seeded: SeededTable;
  let storedIndex: TenantIndex;
  /** Row name → `process surface rpc` → what was answered. */
  const answers = new Map<string, Map<string, Outcome>>();
  const record = (c: DecisionCase, where: string, o: Outcome) => {
    let m = answers.get(c.name);
    if (!m) answers.set(c.name, (m = new Map()));
    m.set(where, o);
  };

  beforeAll(async () => {
    // PostgreSQL: the three control planes share one database, seeded once. Embedded: each
    // holds its own.
    let databaseUrl: string | undefined;
    for (const gate of GATE_MODES) {
      const env: Record<string, string> = { SERVICE_RESOURCE_SCOPE_GATE: gate };
      if (databaseUrl) env.DATABASE_URL = databaseUrl;
      const controlPlane = await startTestControlPlane(backend, env);
      started.unshift(controlPlane);
      if (!databaseUrl) {
        const s = await seedDecisionTable(controlPlane.db);
        if (seeded && s.revision !== seeded.revision) throw new Error(`seeded at revision ${s.revision}, then ${seeded.revision}`);
        seeded = s;
        if (backend === 'postgres') databaseUrl = controlPlane.db.orm.config.get('clientUrl') as string;
      }
      const sidecar = await startSidecar({
        controlPlaneUrl: controlPlane.url, apiKey: TEST_BOOTSTRAP_KEY, tenantId: seeded.tenantId, host: '127.0.0.1', port: 0,
        maxStalenessMs: 30_000, minRevisionWaitMs: 5_000, watchCompression: 'none', logLevel: 'silent',
      }, pino({ level: 'silent' }));
      started.unshift(sidecar);
      stacks.set(gate, { controlPlane, sidecar });
    }
    storedIndex = TenantIndex.fromSnapshot(seeded.stored);
    for (const { controlPlane, sidecar } of stacks.values()) {
      const until = Date.now() + 30_000;
      while (!(sidecar.follower.revision >= seeded.revision && sidecar.follower.fresh())) {
        if (Date.now() > until) throw new Error(`the sidecar is at revision ${sidecar.follower.revision}, not ${seeded.revision}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      // The control plane loads the tenant's index on its first decision: before any clock is set.
      const first = TABLE.cases.find((c) => !c.expectError)!;
      expect(await evaluateOn('rest', controlPlane.url, wireRequest(first), { 'x-api-key': TEST_BOOTSTRAP_KEY })).toMatchObject({ ok: {} });
    }
    await playTable();
  }, 240_000);

  afterAll(async () => {
    for (const s of started) await s.close();
  });

  /** Every playable row on every surface of the pair of its gate mode, one clock at a time. */
  async function playTable() {
    const playable = TABLE.cases.filter((c) => needsRefusedRows(c, seeded, storedIndex).length === 0);
    const clocks = new Map<string, DecisionCase[]>();
    for (const c of playable) (clocks.get(clockOf(c)) ?? clocks.set(clockOf(c), []).get(clockOf(c))!).push(c);
    for (const [clock, rows] of clocks) {
      await atClock(new Date(clock), () => Promise.all([...stacks].flatMap(([gate, { controlPlane, sidecar }]) => {
        const mine = rows.filter((c) => gateOf(c) === gate);
        const processes: [Process, string, Record<string, string>][] = [
          ['control plane', controlPlane.url, { 'x-api-key': TEST_BOOTSTRAP_KEY }],
          ['sidecar', sidecar.server.url, {}],
        ];
        return processes.flatMap(([process, url, headers]) => SURFACES.map(async (surface) => {
          for (const c of mine) record(c, `${process} ${surface} Evaluate`, await evaluateOn(surface, url, wireRequest(c), headers));
          const batches = [...mine.filter((c) => c.expectError).map((c) => [c])];
          const decided = mine.filter((c) => !c.expectError);
          for (let i = 0; i < decided.length; i += BATCH_ROWS) batches.push(decided.slice(i, i + BATCH_ROWS));
          for (const batch of batches) {
            const o = await evaluateBatchOn(surface, url, batch.map(wireRequest), headers);
            const results = 'ok' in o ? (o.ok as { results?: JsonValue[] }).results ?? [] : [];
            batch.forEach((c, i) => record(c, `${process} ${surface} EvaluateBatch`, 'ok' in o ? { ok: results[i] ?? null } : o));
          }
        }));
      })));
    }
  }

  it.for(TABLE.cases.map((c) => [c.name, c] as const))('%s', ([, c], ctx) => {
    const refused = needsRefusedRows(c, seeded, storedIndex);
    if (refused.length > 0) ctx.skip(`its answer needs rows the store refuses: ${refused.map((r) => `${r.id} (${r.error})`).join(', ')}`);
    const got: Record<string, Summary> = {};
    const want: Record<string, Summary> = {};
    for (const process of ['control plane', 'sidecar'] as const) {
      for (const surface of SURFACES) {
        for (const rpc of RPCS) {
          const where = `${process} ${surface} ${rpc}`;
          const o = answers.get(c.name)?.get(where);
          got[where] = o ? summarize(c, o) : { missing: true };
          want[where] = expected(c, process, rpc, seeded.revision);
        }
      }
    }
    expect(got).toEqual(want);
  });
});
