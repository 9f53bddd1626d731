/**
 * Memory and build time of one large tenant index, the sidecar's case: 1,000,000 resources,
 * 1,000,000 ownership grants and 100,000 subjects (each with a membership and 1–2 role
 * assignments), plus a small rest (261 scopes, 5 resource types, 203 roles, 400 permissions,
 * 1,200 role permissions, 3 collections, 20 policies, 5 tag groups, 25 tags, 2,000 tag
 * assignments, 2 tag bindings) and parent edges for 10% of the resources (under 1% folders).
 *
 *   node --expose-gc --import tsx bench/index-scale.ts [--streamed] [--resources N] [--grants N] [--subjects N] [--no-per-kind] [--out NAME]
 *   npm run bench:index-scale [-- --streamed]
 *
 * Rows are generated deterministically in the shape the Watch stream carries them (every field
 * of the message, UUIDv7-style ids), turned into one JSON string each and parsed back one at a
 * time, as the sidecar does (sidecar/follower.ts parseRow); the parse is timed separately from
 * `TenantIndex.fromSnapshot` (all rows parsed first, then indexed) or, with
 * `--streamed`, from `TenantIndex.builder().add` (each row indexed as it is parsed). Then the parsed rows are dropped and, after GC, the figures are
 * those of a process holding only the index: JS heap used, ArrayBuffers (the IdTables), RSS.
 * A second pass builds the same tenant kind by kind through `apply` to attribute bytes to kinds.
 * Last, decision latency for four typical checks (role through a membership, ownership grant,
 * inheritance from a granted folder, a denied check that walks) and hash lookups per check.
 * Writes bench/results/index-scale.json (index-scale-streamed.json with `--streamed`; `<NAME>.json` with `--out`).
 */
import os from 'node:os';
import { evaluate, type EvaluateRequest } from '../services/engine/evaluate.js';
import { IdTable } from '../services/engine/id-table.js';
import { TenantIndex } from '../services/engine/tenant-index/mod.js';
import type { Change, EntityKind, TenantSnapshot } from '../services/engine/model.js';
import { writeResults } from './results-file.js';
import { indexScaleTenant } from './index-scale-tenant.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const N_RESOURCES = arg('resources', 1_000_000);
const N_GRANTS = arg('grants', 1_000_000);
const N_SUBJECTS = arg('subjects', 100_000);
const PER_KIND = !process.argv.includes('--no-per-kind');
const STREAMED = process.argv.includes('--streamed');
const MiB = 2 ** 20;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) g();
}

interface Mem {
  heapUsedMiB: number;
  /** Heap V8 holds (used or not). */
  heapTotalMiB: number;
  arrayBuffersMiB: number;
  rssMiB: number;
}
function mem(): Mem {
  gc();
  const m = process.memoryUsage();
  return { heapUsedMiB: round3(m.heapUsed / MiB), heapTotalMiB: round3(m.heapTotal / MiB), arrayBuffersMiB: round3(m.arrayBuffers / MiB), rssMiB: round3(m.rss / MiB) };
}

/** Every row of a kind as the sidecar gets it: one JSON string each, parsed on arrival. */
function parsedRows(gen: () => Iterable<Record<string, unknown>>): { rows: unknown[]; parseMs: number } {
  const rows: unknown[] = [];
  let parseNs = 0n;
  for (const row of gen()) {
    const json = JSON.stringify(row);
    const t0 = process.hrtime.bigint();
    rows.push(JSON.parse(json));
    parseNs += process.hrtime.bigint() - t0;
  }
  return { rows, parseMs: Number(parseNs) / 1e6 };
}

/** Upserts every row of a kind as one revision (its own frame, so nothing of it outlives the call). */
function applyKind(idx: TenantIndex, revision: number, kind: EntityKind, gen: () => Iterable<Record<string, unknown>>): number {
  const changes = (parsedRows(gen).rows as { id: string }[]).map((row) => ({ op: 'upsert', kind, id: row.id, row }) as Change);
  idx.apply(revision, changes);
  return changes.length;
}

// --- decisions -----------------------------------------------------------------------------------

const OPTIONS = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

interface Sample {
  medianUs: number;
  p99Us: number;
  reasons: Record<string, number>;
  lookupsPerCheck: number;
}

function sample(index: TenantIndex, requests: EvaluateRequest[], rounds = 5): Sample {
  const reasons: Record<string, number> = {};
  for (const q of requests) {
    const d = evaluate(index, q, OPTIONS);
    reasons[d.reason] = (reasons[d.reason] ?? 0) + 1;
  }
  const times = new Float64Array(requests.length * rounds);
  let k = 0;
  for (let r = 0; r < rounds; r++) {
    for (const q of requests) {
      const t0 = process.hrtime.bigint();
      evaluate(index, q, OPTIONS);
      times[k++] = Number(process.hrtime.bigint() - t0) / 1000;
    }
  }
  times.sort();
  return { medianUs: round3(times[times.length >> 1]), p99Us: round3(times[Math.floor(times.length * 0.99)]), reasons, lookupsPerCheck: lookups(index, requests.slice(0, 2000)) };
}

/** Hash lookups (Map/Set get and has, IdTable slotOf) per check, counted by wrapping them. */
function lookups(index: TenantIndex, requests: EvaluateRequest[]): number {
  let count = 0;
  const originals = [Map.prototype.get, Map.prototype.has, Set.prototype.has] as const;
  const slotOf = IdTable.prototype.slotOf;
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals[0].call(this, key);
  };
  Map.prototype.has = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals[1].call(this, key);
  };
  Set.prototype.has = function (this: Set<unknown>, key: unknown) {
    count++;
    return originals[2].call(this, key);
  };
  IdTable.prototype.slotOf = function (this: IdTable<unknown>, key: string) {
    count++;
    return slotOf.call(this, key);
  };
  try {
    for (const q of requests) evaluate(index, q, OPTIONS);
  } finally {
    [Map.prototype.get, Map.prototype.has, Set.prototype.has] = originals as unknown as [typeof Map.prototype.get, typeof Map.prototype.has, typeof Set.prototype.has];
    IdTable.prototype.slotOf = slotOf;
  }
  return round3(count / requests.length);
}

// --- run -------------------------------------------------------------------------------------------

const LOAD_AT_START = os.loadavg().map(round3);

function main(): void {
  const started = Date.now();
  const empty = mem();
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}; empty process: heap ${empty.heapUsedMiB} MiB, RSS ${empty.rssMiB} MiB`);
  const t = indexScaleTenant({ resources: N_RESOURCES, grants: N_GRANTS, subjects: N_SUBJECTS });

  // 1. The snapshot, from JSON rows: all parsed, then fromSnapshot, or with --streamed each row
  // parsed and handed to TenantIndex.builder at once (what sidecar/follower.ts does).
  const counts: Record<string, number> = {};
  let parseMs = 0;
  let buildMs = 0;
  let buildCpuMs = 0;
  let withRows: Mem | undefined;
  let index: TenantIndex | undefined;
  if (STREAMED) {
    // Rows are stringified in chunks of 4,096 (untimed), then each chunk is timed as the
    // sidecar spends it: parse a row, hand it to the builder. Parse alone is timed on a copy.
    const b = TenantIndex.builder(N_RESOURCES);
    let chunkNs = 0n;
    let cpuUs = 0;
    const CHUNK = 4096;
    const run = (kind: EntityKind, jsons: string[]) => {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      for (const json of jsons) b.add(kind, JSON.parse(json));
      chunkNs += process.hrtime.bigint() - t0;
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system;
      const t1 = process.hrtime.bigint();
      for (const json of jsons) JSON.parse(json);
      parseMs += Number(process.hrtime.bigint() - t1) / 1e6;
    };
    for (const [kind, gen] of t.kinds) {
      let n = 0;
      let jsons: string[] = [];
      for (const row of gen()) {
        jsons.push(JSON.stringify(row));
        n++;
        if (jsons.length === CHUNK) {
          run(kind, jsons);
          jsons = [];
        }
      }
      run(kind, jsons);
      counts[kind] = n;
    }
    const t2 = process.hrtime.bigint();
    index = b.build(1);
    chunkNs += process.hrtime.bigint() - t2;
    buildCpuMs = cpuUs / 1000;
    // Parse plus add, less the parse measured alone: the builder's share.
    buildMs = Number(chunkNs) / 1e6 - parseMs;
  } else {
    const rows: TenantSnapshot['rows'] = {};
    for (const [kind, gen] of t.kinds) {
      const p = parsedRows(gen);
      (rows as Record<string, unknown[]>)[kind] = p.rows;
      counts[kind] = p.rows.length;
      parseMs += p.parseMs;
    }
    withRows = mem();
    const cpu0 = process.cpuUsage();
    const b0 = process.hrtime.bigint();
    index = TenantIndex.fromSnapshot({ revision: 1, rows });
    buildMs = Number(process.hrtime.bigint() - b0) / 1e6;
    const cpu = process.cpuUsage(cpu0);
    buildCpuMs = (cpu.user + cpu.system) / 1000;
    for (const k of Object.keys(rows)) delete (rows as Record<string, unknown>)[k];
  }
  const totalRows = Object.values(counts).reduce((a, b) => a + b, 0);
  const held = mem();
  const heldBytes = (held.heapUsedMiB + held.arrayBuffersMiB - empty.heapUsedMiB - empty.arrayBuffersMiB) * MiB;
  const build = {
    mode: STREAMED ? 'streamed: each row parsed, then TenantIndex.builder().add' : 'snapshot: every row parsed, then TenantIndex.fromSnapshot',
    rows: totalRows,
    counts,
    jsonParseMs: Math.round(parseMs),
    buildMs: Math.round(buildMs),
    /** CPU time of the build, all threads (GC helpers included): less sensitive to other load than wall time. */
    buildCpuMs: Math.round(buildCpuMs),
    /** JSON strings to a built index: parse plus build (streamed: the timed chunks themselves). */
    fromJsonMs: Math.round(parseMs + buildMs),
    parsedRowsHeapMiB: withRows ? round3(withRows.heapUsedMiB - empty.heapUsedMiB) : null,
    indexHeapUsedMiB: round3(held.heapUsedMiB - empty.heapUsedMiB),
    indexArrayBuffersMiB: round3(held.arrayBuffersMiB - empty.arrayBuffersMiB),
    heapTotalAfterGcMiB: held.heapTotalMiB,
    rssAfterGcMiB: held.rssMiB,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    bytesPerRow: Math.round(heldBytes / totalRows),
    bytesPerResourcePlusGrant: Math.round(heldBytes / (N_RESOURCES + N_GRANTS)),
  };
  console.log(`build: ${JSON.stringify(build)}`);

  // 2. Decisions on that index.
  const requests = t.decisionRequests(20_000);
  const decisions: Record<string, Sample> = {};
  for (const [kind, reqs] of Object.entries(requests)) {
    decisions[kind] = sample(index, reqs);
    console.log(`decision ${kind}: ${JSON.stringify(decisions[kind])}`);
  }
  const rssAfterDecisions = mem().rssMiB;
  index = undefined;

  // 3. Bytes per kind: the same rows applied one kind at a time.
  const perKind: Record<string, { rows: number; bytesPerRow: number; MiB: number }> = {};
  if (PER_KIND) {
    gc();
    const before = mem();
    let at = before.heapUsedMiB + before.arrayBuffersMiB;
    const idx = TenantIndex.fromSnapshot({ revision: 1, rows: {} });
    let revision = 1;
    for (const [kind, gen] of t.kinds) {
      const n = applyKind(idx, ++revision, kind, gen);
      const m = mem();
      const now = m.heapUsedMiB + m.arrayBuffersMiB;
      perKind[kind] = { rows: n, bytesPerRow: Math.round(((now - at) * MiB) / n), MiB: round3(now - at) };
      at = now;
    }
    console.log(`per kind: ${JSON.stringify(perKind)}`);
    const rebuilt = mem();
    console.log(`incremental build holds ${round3(rebuilt.heapUsedMiB + rebuilt.arrayBuffersMiB - before.heapUsedMiB - before.arrayBuffersMiB)} MiB`);
    if (idx.revision < 0) console.log('unreachable'); // keep idx alive until here
  }

  const results = {
    shape: { resources: N_RESOURCES, grants: N_GRANTS, subjects: N_SUBJECTS },
    emptyProcess: empty,
    build,
    rssAfterDecisionsMiB: rssAfterDecisions,
    decisions,
    perKind,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  const name = process.argv.includes('--out')
    ? String(process.argv[process.argv.indexOf('--out') + 1])
    : `index-scale${STREAMED ? '-streamed' : ''}`;
  const command = ['npm run bench:index-scale --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
  console.log(`wrote ${writeResults(name, { command, results, loadAtStart: LOAD_AT_START })} (${results.seconds} s)`);
}

main();
