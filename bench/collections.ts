/**
 * A decision on a resource of a type with 1, 20, 200 and 2,000 collections, each with a policy
 * of the action asked, in process. The definitions mix `fields` with `eq`, `in`, `ne` and `gte`,
 * `patterns`, `all`, `any` and `none`; most require a field value (the collection index files
 * them under it), some do not (they are tried on every resource): 8 whatever the count in the
 * `few` mix, one in ten in the `tenth` mix. Two resources of each type: one that one collection
 * matches, one that none does. Each decision is timed in batches; the figure is the median over
 * the batches of µs per decision.
 *
 * `--before DIR|REV` times another engine side by side in the same run, batch for batch: a
 * checkout (its `services/engine`), or a git revision of this repository, whose engine is
 * extracted to a temporary directory. Both engines must decide alike (checked).
 *
 * Usage: npm run bench:collections -- [--before DIR|REV] [--runs 11] [--quick]
 * (node --expose-gc --import tsx bench/collections.ts: without --expose-gc, no heap figure)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Decision, EvaluateOptions, EvaluateRequest, JsonValue, TenantIndex, TenantSnapshot } from '../services/engine/mod.js';
import { loadAverageNow, writeResults } from './results-file.js';

const ROOT = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const QUICK = args.includes('--quick');
const RUNS = Number(arg('--runs') ?? (QUICK ? 3 : 11));
const BEFORE = arg('--before');
const COUNTS = [1, 20, 200, 2_000];
const MIXES = ['few', 'tenth'] as const;
type Mix = (typeof MIXES)[number];
/** Time one batch takes, about: long enough for the clock, short enough for many batches. */
const BATCH_MS = QUICK ? 10 : 25;

interface Engine {
  label: string;
  TenantIndex: { fromSnapshot(s: TenantSnapshot): TenantIndex };
  evaluate(index: TenantIndex, request: EvaluateRequest, options: EvaluateOptions): Decision;
}

async function loadEngine(label: string, root: string): Promise<Engine> {
  const mod = (await import(pathToFileURL(join(root, 'services/engine/mod.ts')).href)) as Omit<Engine, 'label'>;
  return { label, TenantIndex: mod.TenantIndex, evaluate: mod.evaluate };
}

/** A checkout to time as "before": a directory holding `services/engine`, or a revision extracted from this repository. */
function beforeRoot(spec: string): { root: string; cleanup: () => void } {
  if (existsSync(join(spec, 'services/engine/mod.ts'))) return { root: resolve(spec), cleanup: () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'collections-before-'));
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive "${spec}" services/engine | tar -x -C "${dir}"`]);
  // Its imports of packages resolve to this checkout's.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return { root: dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// --- the tenant -----------------------------------------------------------------------------------

const typeId = (count: number, mix: Mix) => `resource_type_${mix}_${count}`;

/** Whether collection `i` of `count` requires no field value. */
function unkeyed(i: number, count: number, mix: Mix): boolean {
  if (count === 1) return false;
  return mix === 'few' ? i >= count - 8 : i % 10 === 9;
}

/** Definitions that require a field value: a resource has at most one collection's value. */
function keyedDefinition(i: number): JsonValue {
  switch (i % 10) {
    case 0:
    case 1:
    case 2:
      return { fields: { 'attributes.region': `region-${i}` } };
    case 3:
    case 4:
      return { fields: { 'attributes.project': { in: [`project-${i}`, `project-${i}-b`] }, 'attributes.size': { gte: 10 } } };
    case 5:
      return { fields: { 'attributes.team': `team-${i}` }, none: [{ fields: { 'attributes.status': 'archived' } }] };
    case 6:
      return { any: [{ fields: { 'attributes.owner': `owner-${i}` } }, { fields: { 'attributes.delegate': `owner-${i}` } }] };
    case 7:
      return { fields: { 'attributes.region': `region-${i}`, 'attributes.status': { ne: 'archived' } } };
    default:
      // A pattern in one collection of fifty: compiling it is charged on every use, and 2,000
      // of them tried would spend a decision's budget before the last one.
      return i % 50 === 8
        ? { all: [{ fields: { 'attributes.team': `team-${i}` } }, { patterns: { displayName: '^doc-' } }] }
        : { all: [{ fields: { 'attributes.team': `team-${i}` } }, { fields: { 'attributes.size': { lt: 1_000 } } }] };
  }
}

/** Definitions that require none; none matches the benchmark's resources. */
function unkeyedDefinition(i: number): JsonValue {
  switch (i % 4) {
    case 0:
      return { fields: { 'attributes.size': { gte: 1_000_000 + i } } };
    case 1:
      return { patterns: { externalResourceId: `^zz-${i}-` } };
    case 2:
      return { none: [{ fields: { 'attributes.status': 'active' } }] };
    default:
      return { any: [{ fields: { 'attributes.zone': `zone-${i}` } }, { fields: { 'attributes.size': { lt: -i } } }] };
  }
}

/** The one collection (keyed, `region` equality) the matched resource of a type falls in. */
const matchedIndex = (count: number) => (count === 1 ? 0 : 10);

function tenant(): TenantSnapshot {
  const scope = [
    { id: 'scope_root', tenantId: 't', typeId: 'x', name: 'root', parentId: null },
    { id: 'scope_project', tenantId: 't', typeId: 'x', name: 'project', parentId: 'scope_root' },
    { id: 'scope_team', tenantId: 't', typeId: 'x', name: 'team', parentId: 'scope_project' },
  ];
  const resource_type: Record<string, string>[] = [];
  const resource: Record<string, unknown>[] = [];
  const collection: Record<string, unknown>[] = [];
  const policy: Record<string, unknown>[] = [];
  for (const mix of MIXES) {
    for (const count of COUNTS) {
      const type = typeId(count, mix);
      resource_type.push({ id: type, key: `${mix}${count}`, scopeId: 'scope_root', name: type });
      for (let i = 0; i < count; i++) {
        const id = `collection_${mix}_${count}_${i}`;
        // Half at the root, half at the project: the walk visits both.
        collection.push({ id, scopeId: i % 2 ? 'scope_project' : 'scope_root', resourceTypeId: type, name: id, matchDefinition: unkeyed(i, count, mix) ? unkeyedDefinition(i) : keyedDefinition(i) });
        policy.push({ id: `policy_${mix}_${count}_${i}`, scopeId: 'scope_root', target: { kind: 'collection', collectionId: id }, actions: ['read'], effect: i % 3 ? 'allow' : 'deny', priority: i % 5 });
      }
      const common = { resourceTypeId: type, ownerScopeId: 'scope_team', createdAt: '2025-01-01T00:00:00.000Z', createdBy: 'u', displayName: 'doc-1' };
      const attributes = { project: 'project-none', team: 'team-none', owner: 'nobody', size: 5, status: 'active' };
      resource.push({ ...common, id: `resource_${mix}_${count}_matched`, externalResourceId: `m-${count}`, attributes: { ...attributes, region: `region-${matchedIndex(count)}` } });
      resource.push({ ...common, id: `resource_${mix}_${count}_unmatched`, externalResourceId: `u-${count}`, attributes: { ...attributes, region: 'region-none' } });
    }
  }
  const rows = {
    scope, resource_type, resource, collection, policy,
    subject: [{ id: 'subject_u', type: 'user', externalId: 'u', metadata: {} }],
  };
  // As a server gets them: decoded from JSON (flat strings, not built ones).
  return { revision: 1, rows: JSON.parse(JSON.stringify(rows)) } as TenantSnapshot;
}

// --- timing ---------------------------------------------------------------------------------------

const options: EvaluateOptions = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' };
const request = (resourceId: string): EvaluateRequest => ({ actor: { subjectId: 'subject_u' }, scopeId: 'scope_team', action: 'read', resource: { resourceId } });

/** Decisions per batch so that one takes about BATCH_MS. */
function calibrate(f: () => void): number {
  let n = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) f();
    const ms = performance.now() - t0;
    if (ms >= BATCH_MS / 4 || n >= 1 << 22) return Math.max(1, Math.round((n * BATCH_MS) / Math.max(ms, 0.001)));
    n *= 2;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Case {
  mix: Mix;
  count: number;
  resource: 'matched' | 'unmatched';
}

const engines: Engine[] = [await loadEngine('after', ROOT)];
let cleanup = () => {};
if (BEFORE !== undefined) {
  const b = beforeRoot(BEFORE);
  cleanup = b.cleanup;
  engines.unshift(await loadEngine('before', b.root));
}

const loadAtStart = loadAverageNow();
const snapshot = tenant();
// Each engine's index built three times, the fastest kept (the first pays for compiling the code).
const indexes = engines.map((e) => {
  let best = Infinity;
  let index: TenantIndex | undefined;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    index = e.TenantIndex.fromSnapshot(snapshot);
    best = Math.min(best, performance.now() - t0);
  }
  return { index: index as TenantIndex, buildMs: best };
});
const cases: Case[] = MIXES.flatMap((mix) => COUNTS.flatMap((count) => (['matched', 'unmatched'] as const).map((resource) => ({ mix, count, resource }))));
// Every case run by every engine first, so the code is optimised for all of them before any is timed.
for (let round = 0; round < 3; round++) {
  for (const c of cases) {
    engines.forEach((e, k) => {
      const q = request(`resource_${c.mix}_${c.count}_${c.resource}`);
      const t0 = performance.now();
      while (performance.now() - t0 < BATCH_MS / 5) e.evaluate(indexes[k].index, q, options);
    });
  }
}
const results: Record<string, unknown>[] = [];
for (const c of cases) {
  const q = request(`resource_${c.mix}_${c.count}_${c.resource}`);
  const runs = engines.map((e, k) => {
    const index = indexes[k].index;
    const d = e.evaluate(index, q, options);
    const explained = e.evaluate(index, { ...q, explain: true }, options);
    const tried = (explained.trace ?? []).filter((s) => s.detail?.collectionId !== undefined).length;
    const exhausted = (explained.trace ?? []).some((s) => s.message.includes('evaluation budget exhausted'));
    const f = () => e.evaluate(index, q, options);
    for (let i = 0; i < 200; i++) f();
    return { e, f, d, tried, exhausted, n: calibrate(f), us: [] as number[] };
  });
  const outcome = (d: Decision) => `${d.reason}${d.evaluatedPolicy ? ` ${d.evaluatedPolicy.id}` : ''}`;
  const outcomes = new Set(runs.map((r) => outcome(r.d)));
  if (outcomes.size > 1) throw new Error(`${c.mix} ${c.count} ${c.resource}: the engines decide differently: ${runs.map((r) => `${r.e.label} ${outcome(r.d)}`).join(', ')}`);
  // Batch for batch, the engines in turn: both meet the same moments of the shared machine.
  for (let run = 0; run < RUNS; run++) {
    for (const r of runs) {
      const t0 = performance.now();
      for (let i = 0; i < r.n; i++) r.f();
      r.us.push(((performance.now() - t0) * 1000) / r.n);
    }
  }
  const row: Record<string, unknown> = { mix: c.mix, collections: c.count, resource: c.resource, decision: outcome(runs[0].d) };
  for (const r of runs) row[r.e.label] = { usPerDecision: Number(median(r.us).toFixed(3)), collectionsTried: r.tried, budgetExhausted: r.exhausted };
  results.push(row);
  console.log(
    `${c.mix.padEnd(5)} ${String(c.count).padStart(5)} collections, ${c.resource.padEnd(9)}: ${runs.map((r) => `${r.e.label} ${median(r.us).toFixed(2)} µs (${r.tried} tried${r.exhausted ? ', budget exhausted' : ''})`).join(', ')}  → ${outcome(runs[0].d)}`,
  );
}
const build = Object.fromEntries(engines.map((e, k) => [e.label, Number(indexes[k].buildMs.toFixed(1))]));
const collections = (snapshot.rows.collection ?? []).length;
console.log(`index build (fastest of 3), ${collections} collections: ${Object.entries(build).map(([k, v]) => `${k} ${v} ms`).join(', ')}`);
// Heap of the derived entries of an index (its rows are the tenant's, shared by every build), per
// collection: the tenant is all collections and their policies but 16 resources. Five indexes
// held at once, the median of their deltas.
const gc = (globalThis as { gc?: () => void }).gc;
let heap: Record<string, number> | null = null;
if (gc !== undefined) {
  heap = {};
  const settled = (): number => {
    for (let k = 0; k < 3; k++) gc();
    return process.memoryUsage().heapUsed;
  };
  for (const e of engines) {
    const held: TenantIndex[] = [];
    const bytes: number[] = [];
    for (let k = 0; k < 5; k++) {
      const h0 = settled();
      held.push(e.TenantIndex.fromSnapshot(snapshot));
      bytes.push(settled() - h0);
    }
    heap[e.label] = Math.round(median(bytes) / collections);
  }
  console.log(`index heap per collection (its policy's entries included): ${Object.entries(heap).map(([k, v]) => `${k} ${v} B`).join(', ')}`);
}
cleanup();
const command = `npm run bench:collections${args.length ? ` -- ${args.join(' ')}` : ''}`;
console.log(`wrote ${writeResults('collections', { command, results: { runs: RUNS, batchMs: BATCH_MS, before: BEFORE ?? null, collections, indexBuildMs: build, indexHeapBytesPerCollection: heap, cases: results }, loadAtStart })}`);
