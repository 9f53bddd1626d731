/**
 * A run's summary (what it sent, what it cost the processes, the coverage of valid requests per
 * RPC and surface) and its failures, grouped; and the coverage floor.
 */
import { SURFACES, type Surface } from './http.js';
import { KNOWN_DEFECTS, refusedForKnownDefect } from './known-defects.js';
import type { Coverage, CostSummary, Failure, MethodStats, RunResult, Target } from './types.js';

/** The target for the CPU of a refused request (ms); the bound the suite enforces has a margin (runner.ts). */
export const TARGET_CPU_MS = 20;

/** The share of valid requests that must succeed, per RPC and surface, RPC, and surface. */
export const COVERAGE_FLOOR = 0.9;
/** Valid requests an RPC on one surface needs before its share is judged: fewer say little. */
export const MIN_PAIR_SAMPLES = 5;
/** An RPC over all surfaces: valid requests all succeed (every run so far), so three tell. */
export const MIN_METHOD_SAMPLES = 3;
/** A surface over every RPC. */
export const MIN_SURFACE_SAMPLES = 10;

/**
 * RPCs whose valid requests legitimately cannot succeed, with why (none is exempt today: a
 * valid request of every RPC succeeds on both processes). A new entry needs its reason.
 */
export const CANNOT_SUCCEED: Record<string, string> = {};

const share = (c: Coverage) => (c.sent ? c.ok / c.sent : 1);
const pct = (c: Coverage) => (c.sent ? `${((100 * c.ok) / c.sent).toFixed(1)}%` : '-');
const add = (a: Coverage, b: Coverage | undefined): Coverage => ({ sent: a.sent + (b?.sent ?? 0), ok: a.ok + (b?.ok ?? 0) });
const short = (name: string) => name.split('.').slice(-2).join('.');

/** Where valid requests succeed less often than the floor (each a sentence), judged where there are enough of them. */
export function coverageShortfalls(byMethod: RunResult['byMethod']): string[] {
  const out: string[] = [];
  for (const target of Object.keys(byMethod) as Target[]) {
    const bySurface: Partial<Record<Surface, Coverage>> = {};
    for (const [name, st] of Object.entries(byMethod[target])) {
      if (name in CANNOT_SUCCEED) continue;
      let all: Coverage = { sent: 0, ok: 0 };
      for (const surface of SURFACES) {
        const c = st.valid[surface];
        if (!c) continue;
        all = add(all, c);
        if (!refusedForKnownDefect(name)) bySurface[surface] = add(bySurface[surface] ?? { sent: 0, ok: 0 }, c);
        if (c.sent >= MIN_PAIR_SAMPLES && share(c) < COVERAGE_FLOOR) out.push(`${target} ${short(name)} over ${surface}: ${c.ok}/${c.sent} valid requests succeeded (${pct(c)})`);
      }
      if (all.sent >= MIN_METHOD_SAMPLES && share(all) < COVERAGE_FLOOR) out.push(`${target} ${short(name)}: ${all.ok}/${all.sent} valid requests succeeded (${pct(all)}) over all surfaces`);
    }
    for (const [surface, c] of Object.entries(bySurface) as [Surface, Coverage][]) {
      if (c.sent >= MIN_SURFACE_SAMPLES && share(c) < COVERAGE_FLOOR) out.push(`${target} over ${surface}: ${c.ok}/${c.sent} valid requests succeeded (${pct(c)}) over all RPCs`);
    }
  }
  return out;
}

/** The coverage table: valid requests that succeeded / sent, per service (RPCs summed) and surface. */
export function coverageTable(byMethod: RunResult['byMethod']): string[] {
  const rows: string[] = [];
  const cell = (c: Coverage | undefined) => (c && c.sent ? `${c.ok}/${c.sent}` : '-').padStart(9);
  rows.push(`    ${'valid requests ok/sent'.padEnd(38)}${SURFACES.map((s) => s.padStart(9)).join(' ')}`);
  for (const target of Object.keys(byMethod) as Target[]) {
    const services = new Map<string, Partial<Record<Surface, Coverage>>>();
    for (const [name, st] of Object.entries(byMethod[target])) {
      const service = name.split('.').slice(0, -1).join('.').replace(/^authz\.v1\./, '');
      const row = services.get(service) ?? {};
      for (const s of SURFACES) if (st.valid[s]) row[s] = add(row[s] ?? { sent: 0, ok: 0 }, st.valid[s]);
      services.set(service, row);
    }
    for (const [service, row] of [...services].sort()) rows.push(`    ${`${target} ${service}`.padEnd(38)}${SURFACES.map((s) => cell(row[s])).join(' ')}`);
  }
  const refused = Object.entries(byMethod).flatMap(([target, ms]) =>
    Object.entries(ms as Record<string, MethodStats>).flatMap(([name, st]) =>
      SURFACES.filter((s) => (st.valid[s]?.sent ?? 0) > (st.valid[s]?.ok ?? 0)).map((s) => `${target === 'sidecar' ? 'sidecar ' : ''}${short(name)}/${s} ${st.valid[s]!.sent - st.valid[s]!.ok}/${st.valid[s]!.sent}`),
    ),
  );
  if (refused.length) rows.push(`    valid requests refused: ${refused.join(', ')}`);
  return rows;
}

function costLine(name: string, c: CostSummary, res: RunResult): string {
  if (c.measured === 0) return `  cost, ${name}: not measured (no /proc)`;
  const top = c.top.slice(0, 3).map((t) => `${Math.round(t.ms)} ms ${short(t.method)}/${t.surface} ${t.mutation.slice(0, 60)}`).join('; ');
  return [
    `  cost, ${name}: CPU per refused request (${c.refused}) p99 ${c.refusedCpuP99Ms} ms, max ${c.refusedCpuMaxMs} ms (bound ${res.bounds.cpuMs} ms, ${c.overCpu} over);`,
    ` any request max ${Math.round(c.anyCpuMaxMs)} ms; event-loop delay p99 ${c.loopP99Ms} ms, max ${c.loopMaxMs} ms,`,
    ` of the process's own p99 ${c.stallP99Ms} ms, max ${c.stallMaxMs} ms (bound ${res.bounds.stallMs} ms, ${c.overStall} over);`,
    ` ${c.confirmed} over a bound confirmed, ${c.unconfirmed.length} not reproduced`,
    top ? `\n    costliest refusals: ${top}` : '',
    refusalsOverTarget(c),
    c.longest.length ? `\n    longest stalls: ${c.longest.slice(0, 3).map((t) => `${Math.round(t.ms)} ms ${short(t.method)}/${t.surface} (${t.status}) ${t.mutation.slice(0, 50)}`).join('; ')}` : '',
  ].join('');
}

/** Mutation kinds whose refusals took more than the target at their slowest: median / max CPU ms. */
function refusalsOverTarget(c: CostSummary): string {
  const over = Object.entries(c.refusedByKind).filter(([, k]) => k.maxMs > TARGET_CPU_MS).sort((a, b) => b[1].maxMs - a[1].maxMs);
  if (over.length === 0) return '';
  return `\n    refusals over ${TARGET_CPU_MS} ms of CPU at their slowest, median/max ms: ${over.map(([kind, k]) => `${kind} ${k.medianMs}/${Math.round(k.maxMs)} (${k.n})`).join(', ')}`;
}

/** Failures grouped by class, each with its first example and a count. */
export function failureClasses(failures: Failure[]): { first: Failure; count: number }[] {
  const by = new Map<string, { first: Failure; count: number }>();
  for (const f of failures) {
    const e = by.get(f.classKey);
    if (e) e.count++;
    else by.set(f.classKey, { first: f, count: 1 });
  }
  return [...by.values()];
}

export function formatFailure(f: Failure, count = 1): string {
  return [
    `[${f.invariant}] ${f.method}${f.target === 'sidecar' ? ' at the sidecar' : ''} over ${f.surface} (${f.key === 'none' ? 'no' : f.key} key), case ${f.caseIndex}${count > 1 ? ` (and ${count - 1} more like it)` : ''}`,
    `  seed ${f.seed} on ${f.backend}; mutation: ${f.mutation}; field: ${f.field}${f.known ? `; known defect ${f.known}` : ''}`,
    `  ${f.what}`,
    `  request: ${f.request.replace(/\n/g, '\n           ')}`,
    `  answer:  ${f.answer}`,
    ...(f.logs.length ? [`  server log: ${f.logs.map((l) => l.slice(0, 400)).join('\n              ')}`] : []),
  ].join('\n');
}

/**
 * Failure classes grouped once more across methods and surfaces (same invariant, mutation kind
 * and answer): one example each, with the methods it was seen in.
 */
export function formatFailures(failures: Failure[], max = 20): string {
  const groups = new Map<string, { first: Failure; count: number; where: Set<string> }>();
  for (const f of failures) {
    const k = `${f.invariant} | ${f.mutation.split(':')[0]} | ${f.outcome}`;
    const g = groups.get(k) ?? { first: f, count: 0, where: new Set<string>() };
    g.count++;
    g.where.add(`${f.target === 'sidecar' ? 'sidecar ' : ''}${f.method.split('.').pop()}/${f.surface}`);
    groups.set(k, g);
  }
  const sorted = [...groups.values()].sort((a, b) => b.where.size - a.where.size);
  const out = sorted.slice(0, max).map((g) => {
    const where = [...g.where].sort();
    return `${formatFailure(g.first)}\n  seen ${g.count}× in ${where.length} method/surface pairs: ${where.slice(0, 12).join(', ')}${where.length > 12 ? ', …' : ''}`;
  });
  if (sorted.length > max) out.push(`… and ${sorted.length - max} more groups (FUZZ_REPORT_DIR=<dir> writes every failure)`);
  return out.join('\n\n');
}

export function formatResult(res: RunResult): string {
  const known = new Map<string, number>();
  for (const f of res.known) known.set(f.known!, (known.get(f.known!) ?? 0) + 1);
  return [
    `fuzz ${res.backend}, seed ${res.seed}: sequence ${res.sequence}, ${res.cases} cases in ${Math.round((res.elapsedMs - res.setupMs) / 1000)} s (+${Math.round(res.setupMs / 1000)} s setup)`,
    `  valid requests: ${res.valid.ok}/${res.valid.sent} succeeded (${pct(res.valid)}); floor ${COVERAGE_FLOOR * 100}% per RPC and surface (judged from ${MIN_PAIR_SAMPLES} requests), per RPC (from ${MIN_METHOD_SAMPLES}) and per surface (from ${MIN_SURFACE_SAMPLES})`,
    ...coverageTable(res.byMethod),
    `  time: requests ${Math.round(res.timing.requests / 1000)} s, measuring ${Math.round(res.timing.measuring / 1000)} s, invariant checks ${Math.round(res.timing.checks / 1000)} s, spares ${Math.round(res.timing.spares / 1000)} s, replays ${Math.round(res.timing.replays / 1000)} s`,
    costLine('control plane', res.costs['control-plane'], res),
    ...(res.costs.sidecar.measured ? [costLine('sidecar', res.costs.sidecar, res)] : []),
    ...(known.size ? [`  known defects (not failed; FUZZ_KNOWN_DEFECTS=fail fails them): ${[...known].map(([id, n]) => `${id} ×${n}`).join(', ')}`] : []),
    `  failures: ${res.failures.length} in ${failureClasses(res.failures).length} classes`,
  ].join('\n');
}

/** The known defects seen in a run, described. */
export function formatKnown(res: RunResult): string {
  const ids = new Set(res.known.map((f) => f.known));
  return KNOWN_DEFECTS.filter((d) => ids.has(d.id)).map((d) => `${d.id}: ${d.what}`).join('\n');
}
