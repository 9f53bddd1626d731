/**
 * The engine's decision table (services/engine/testdata/decisions.json) as a running process
 * sees it: its tenant written to a real store, its rows turned into wire requests, and what each
 * process must answer. decision-table.test.ts plays every row on every surface of a control
 * plane and of a sidecar following it, so a new rule is one new row that the engine and both
 * processes must pass.
 */
import { readFileSync } from 'node:fs';
import type { JsonObject, JsonValue, MessageInitShape } from '@bufbuild/protobuf';
import type { EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { evaluate, type EvaluateRequest, type GateMode } from '../../services/engine/evaluate.js';
import { TenantIndex } from '../../services/engine/tenant-index/mod.js';
import { ENTITY_KINDS, type EntityKind, type TenantSnapshot } from '../../services/engine/model.js';
import type { Database } from '../../services/store/db.js';
import { KINDS, type KindName, type Row } from '../../services/store/kinds.js';
import { runWrite } from '../../services/store/write.js';

/** One row of the table (decisions.test.ts reads the same fields). */
export interface DecisionCase {
  name: string;
  rule: string;
  /** The gate mode the row is decided under (else the table's default). */
  gate?: GateMode;
  /** The clock (else the table's default). */
  now?: string;
  request: EvaluateRequest;
  expect?: { allowed: boolean; reason: string; evaluatedPolicy?: string };
  expectError?: 'ScopeNotFoundError' | 'AmbiguousSubjectError';
  traceIncludes?: string[];
}

export interface DecisionTable {
  defaults: { gate: GateMode; now: string };
  tenant: TenantSnapshot;
  cases: DecisionCase[];
}

export const TABLE = JSON.parse(readFileSync(new URL('../../services/engine/testdata/decisions.json', import.meta.url), 'utf8')) as DecisionTable;

export const GATE_MODES: readonly GateMode[] = ['off', 'links-fallback', 'strict'];

export const gateOf = (c: DecisionCase): GateMode => c.gate ?? TABLE.defaults.gate;
export const clockOf = (c: DecisionCase): string => c.now ?? TABLE.defaults.now;

/** The store's name of each engine kind (`role_permission` → `rolePermission`). */
const STORE_KIND = new Map<string, KindName>(Object.entries(KINDS).map(([name, def]) => [def.kind, name as KindName]));

/**
 * Columns the store requires that the engine never reads, so the table leaves them out: filled
 * from the row itself or its parent, as the API would.
 */
function storeRow(kind: EntityKind, row: Row, byId: Map<string, Row>): Row {
  switch (kind) {
    case 'policy': {
      const target = row.target as { resourceId?: string; collectionId?: string } | undefined;
      return { targetId: target?.resourceId ?? target?.collectionId ?? '', ...row };
    }
    case 'tag_group':
      return { origin: 'user', ...row };
    case 'tag':
      return { scopeId: byId.get(row.tagGroupId as string)?.scopeId, ...row };
    default:
      return row;
  }
}

/** A row of the table the store refused (a dangling reference, a timestamp that does not parse), and why. */
export interface RefusedRow {
  kind: EntityKind;
  id: string;
  error: string;
}

export interface SeededTable {
  tenantId: string;
  /** The revision every answer must carry: the seed is one write. */
  revision: number;
  /** The table's tenant as the store holds it. */
  stored: TenantSnapshot;
  refused: RefusedRow[];
}

/**
 * Writes the table's tenant to `db` as one revision, through the store as the API would (the
 * tenant row, then every entity, each in the change log). A row the store refuses (the database
 * checks references and types) is left out and reported: such data never reaches a process,
 * however the engine treats it.
 */
export async function seedDecisionTable(db: Database): Promise<SeededTable> {
  const rows = TABLE.tenant.rows;
  const scopes = (rows.scope ?? []) as unknown as Row[];
  const root = scopes.find((s) => !s.parentId);
  if (!root) throw new Error('the table\'s tenant has no root scope');
  const tenantId = root.tenantId as string;
  const byId = new Map<string, Row>();
  for (const kind of ENTITY_KINDS) for (const r of (rows[kind] ?? []) as unknown as Row[]) byId.set(r.id as string, r);
  const refused: RefusedRow[] = [];
  const stored: TenantSnapshot = { revision: 0, rows: {} };
  const { revision } = await runWrite(db, async (tx) => {
    const now = new Date();
    await tx.insert('tenant', [{ id: tenantId, name: tenantId, scopeId: root.id, revision: 0, createdAt: now, createdBy: 'test' }]);
    await tx.useTenant(tenantId);
    const kept = new Map<EntityKind, Row[]>(ENTITY_KINDS.map((k) => [k, []]));
    // Rows in the engine's kind order, again and again while a pass stores any: a row that
    // needs another (a grant its resource) goes in once that one is in.
    let left = ENTITY_KINDS.flatMap((kind) => ((rows[kind] ?? []) as unknown as Row[]).map((row) => ({ kind, row, error: '' })));
    for (let progress = -1; progress !== 0 && left.length > 0; ) {
      const next: typeof left = [];
      for (const item of left) {
        const storeKind = STORE_KIND.get(item.kind);
        if (!storeKind) throw new Error(`the store has no kind ${item.kind}`);
        // A savepoint per row: a refused row must not abort the rest of the write.
        await tx.em.execute('savepoint seed_row');
        try {
          await tx.insert(storeKind, [{ tenantId, createdAt: now, createdBy: 'test', ...storeRow(item.kind, item.row, byId) }]);
          await tx.em.execute('release savepoint seed_row');
          kept.get(item.kind)!.push(item.row);
        } catch (err) {
          await tx.em.execute('rollback to savepoint seed_row');
          next.push({ ...item, error: databaseReason(err) });
        }
      }
      progress = left.length - next.length;
      left = next;
    }
    for (const { kind, row, error } of left) refused.push({ kind, id: row.id as string, error });
    stored.rows = Object.fromEntries(kept) as TenantSnapshot['rows'];
  });
  stored.revision = revision!;
  return { tenantId, revision: revision!, stored, refused };
}

/** PostgreSQL's own words for a refused insert, out of the driver's `<statement> - <message>[ - detail: …][ - hint: …]`. */
function databaseReason(err: unknown): string {
  const parts = String((err as Error).message).split(' - ').filter((p) => !/^(detail|hint): /.test(p));
  return (err as { detail?: string }).detail ?? parts[parts.length - 1];
}

/** The row's request as the wire takes it (`explain` when the row checks the trace). */
export function wireRequest(c: DecisionCase): MessageInitShape<typeof EvaluateRequestSchema> {
  return { ...c.request, context: c.request.context as JsonObject | undefined, explain: c.traceIncludes !== undefined };
}

/**
 * The refused rows a row's answer (its trace fragments included) needs; empty when the tenant
 * the store holds answers it as the table's does.
 */
export function needsRefusedRows(c: DecisionCase, seeded: SeededTable, storedIndex: TenantIndex): RefusedRow[] {
  if (seeded.refused.length === 0) return [];
  const answer = (index: TenantIndex) => {
    try {
      const d = evaluate(index, wireRequest(c) as EvaluateRequest, { now: new Date(clockOf(c)), gate: gateOf(c) });
      const trace = (d.trace ?? []).map((s) => s.message).join('\n');
      return JSON.stringify([d.allowed, d.reason, d.evaluatedPolicy?.id, (c.traceIncludes ?? []).filter((f) => trace.includes(f))]);
    } catch (e) {
      return (e as Error).name;
    }
  };
  const full = answer(TenantIndex.fromSnapshot(TABLE.tenant));
  if (answer(storedIndex) === full) return [];
  // Name the rows that matter: each refused row added back alone (all of them when no one does).
  const alone = seeded.refused.filter((r) => {
    const rows = { ...seeded.stored.rows, [r.kind]: [...(seeded.stored.rows[r.kind] ?? []), (TABLE.tenant.rows[r.kind] ?? []).find((x) => x.id === r.id)] };
    return answer(TenantIndex.fromSnapshot({ revision: seeded.revision, rows } as TenantSnapshot)) === full;
  });
  return alone.length > 0 ? alone : seeded.refused;
}

export type Process = 'control plane' | 'sidecar';

/**
 * What a process answers to an error of the engine: the control plane looks an unknown scope up
 * in the store (`not_found`); a sidecar holds one tenant, so for it the scope is outside its
 * reach (`permission_denied`, reason TIER).
 */
const ERRORS: Record<NonNullable<DecisionCase['expectError']>, Record<Process, { code: string; reason: string; field: string }>> = {
  ScopeNotFoundError: {
    'control plane': { code: 'NotFound', reason: 'NOT_FOUND', field: 'scopeId' },
    sidecar: { code: 'PermissionDenied', reason: 'TIER', field: 'scopeId' },
  },
  AmbiguousSubjectError: {
    'control plane': { code: 'InvalidArgument', reason: 'INVALID_FIELD', field: 'actor.subjectType' },
    sidecar: { code: 'InvalidArgument', reason: 'INVALID_FIELD', field: 'actor.subjectType' },
  },
};

/** The error a process must answer to the row, in the Outcome form (message aside). */
export function expectedError(c: DecisionCase, process: Process): { code: string; reason: string; field: string } | undefined {
  if (!c.expectError) return undefined;
  const e = ERRORS[c.expectError]?.[process];
  if (!e) throw new Error(`no wire form for the table's error ${c.expectError}`);
  return e;
}

/** A decision as REST writes it (the form every surface's answer is reduced to), in a few comparable fields. */
export function decisionOf(o: JsonValue): { allowed: boolean; reason: string; decidedByPolicy: boolean; evaluatedPolicy?: string; revision: number; trace: string } {
  const d = o as { allowed?: boolean; reason?: string; decidedByPolicy?: boolean; evaluatedPolicy?: { id?: string } | null; revision?: number; trace?: { message?: string }[] };
  return {
    allowed: d.allowed ?? false,
    reason: d.reason ?? '',
    decidedByPolicy: d.decidedByPolicy ?? false,
    evaluatedPolicy: d.evaluatedPolicy?.id || undefined,
    revision: d.revision ?? 0,
    trace: (d.trace ?? []).map((s) => s.message ?? '').join('\n'),
  };
}

/**
 * Runs `play` with `new Date()` (no argument) reading `at`: the processes under test run in this
 * process and take a decision's clock from `new Date()`, so the row's clock reaches them.
 * `Date.now()`, which staleness, deadlines and timers read, keeps the real clock. Calls must not
 * overlap.
 */
export async function atClock<T>(at: Date, play: () => Promise<T>): Promise<T> {
  const Real = globalThis.Date;
  class RowClock extends Real {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(at.getTime());
      else super(...(args as [string]));
    }

    // Dates made before the swap stay Dates.
    static override [Symbol.hasInstance](v: unknown): boolean {
      return v instanceof Real;
    }
  }
  globalThis.Date = RowClock as DateConstructor;
  try {
    return await play();
  } finally {
    globalThis.Date = Real;
  }
}
