/**
 * Two checkouts' decision engines side by side in one process: the same tenant (bench:engine's
 * generator, from this checkout) built by each engine, the same requests, timed in alternating
 * rounds. A change to the index is judged by the ratio of each round's two means, never by two
 * runs of bench:engine: between processes this machine's memory latency drifts by a third
 * (bench:engine prints it), which is as much as the changes measured. Both engines must give
 * every request the same decision and reason, or the run stops.
 *
 *   git worktree add /tmp/base <rev>   (with node_modules linked or installed)
 *   node --expose-gc --import tsx bench/engine-ab.ts --base /tmp/base [--head .] [--resources 1000000] [--rounds 31]
 *
 * Prints, per request set (uniform, Zipf θ 0.99, a cache-resident set of 100 resources and 10
 * subjects): each engine's median mean-per-check and the median, min and max of head ÷ base;
 * and each index's memory (heap + ArrayBuffers). Writes bench/results/engine-ab.json.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { evaluate as Evaluate, EvaluateRequest } from '../services/engine/evaluate.js';
import type { TenantIndex } from '../services/engine/tenant-index/mod.js';
import { benchArgs } from './args.js';
import { generateTenant } from './engine-tenant.js';
import { loadAverageNow, writeResults } from './results-file.js';

const args = benchArgs();
const BASE = args.get('base');
if (!BASE || BASE === 'true') throw new Error('--base <checkout directory> is required');
const HEAD = args.get('head') ?? resolve(import.meta.dirname, '..');
const RESOURCES = Number(args.get('resources') ?? 1_000_000);
const ROUNDS = Number(args.get('rounds') ?? 31);
const OPTIONS = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

interface Engine {
  dir: string;
  evaluate: typeof Evaluate;
  index: TenantIndex;
  memoryMiB: number;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function memory(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** A checkout's commit (`+dirty` when its tracked files differ from it). */
function commitOf(dir: string): string {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: dir, encoding: 'utf8' }).trim();
  return git('rev-parse', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') === '' ? '' : '+dirty');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const round3 = (x: number) => Math.round(x * 1000) / 1000;

async function engine(dir: string, snapshot: ReturnType<typeof generateTenant>['snapshot']): Promise<Engine> {
  const at = (path: string) => pathToFileURL(resolve(dir, path)).href;
  const { evaluate } = (await import(at('services/engine/evaluate.ts'))) as { evaluate: typeof Evaluate };
  const { TenantIndex: Index } = (await import(at('services/engine/tenant-index/mod.ts'))) as { TenantIndex: typeof TenantIndex };
  const before = memory();
  const index = Index.fromSnapshot(snapshot);
  return { dir, evaluate, index, memoryMiB: Math.round((memory() - before) / 2 ** 20) };
}

/** Mean µs per check over one pass of `requests`. */
function pass(e: Engine, requests: EvaluateRequest[]): number {
  const t0 = process.hrtime.bigint();
  for (const r of requests) e.evaluate(e.index, r, OPTIONS);
  return Number(process.hrtime.bigint() - t0) / 1000 / requests.length;
}

const loadAtStart = loadAverageNow();
const shape = { name: 'ab', resources: RESOURCES, subjects: 100_000, roles: 1_000, policies: Math.max(1, Math.round(RESOURCES / 100)) };
const gen = generateTenant(shape, 13);
const base = await engine(BASE, gen.snapshot);
const head = await engine(HEAD, gen.snapshot);
console.log(`base ${commitOf(BASE).slice(0, 7)}, head ${commitOf(HEAD).slice(0, 7)}`);
console.log(`index memory: base ${base.memoryMiB} MiB, head ${head.memoryMiB} MiB (${RESOURCES} resources, 100k subjects)`);

const sets: Record<string, EvaluateRequest[]> = {
  uniform: gen.requests(100_000, 102),
  zipf: gen.requests(100_000, 402, { zipf: 0.99 }),
  resident: gen.requests(100_000, 302, { resources: 100, subjects: 10 }),
};
// Same decisions, and a warm-up of both.
for (const requests of Object.values(sets)) {
  for (const r of requests) {
    const a = base.evaluate(base.index, r, OPTIONS);
    const b = head.evaluate(head.index, r, OPTIONS);
    if (a.allowed !== b.allowed || a.reason !== b.reason) throw new Error(`decisions differ on ${JSON.stringify(r)}: base ${a.reason}, head ${b.reason}`);
  }
}

const results: Record<string, { baseUs: number; headUs: number; ratio: { median: number; min: number; max: number } }> = {};
for (const [name, requests] of Object.entries(sets)) {
  const b: number[] = [];
  const h: number[] = [];
  const ratios: number[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    // Which engine goes first alternates, so neither always runs on the other's warm caches.
    const [x, y] = k % 2 === 0 ? [pass(base, requests), pass(head, requests)] : [0, pass(head, requests)];
    const baseUs = k % 2 === 0 ? x : pass(base, requests);
    b.push(baseUs);
    h.push(y);
    ratios.push(y / baseUs);
  }
  results[name] = {
    baseUs: round3(median(b)),
    headUs: round3(median(h)),
    ratio: { median: round3(median(ratios)), min: round3(Math.min(...ratios)), max: round3(Math.max(...ratios)) },
  };
  const r = results[name];
  console.log(`${name}: µs per check base ${r.baseUs}, head ${r.headUs}; head ÷ base median ${r.ratio.median} (min ${r.ratio.min}, max ${r.ratio.max}, ${ROUNDS} rounds)`);
}

const file = writeResults('engine-ab', {
  command: `node --expose-gc --import tsx bench/engine-ab.ts --base <checkout> --resources ${RESOURCES} --rounds ${ROUNDS}`,
  loadAtStart,
  results: { baseCommit: commitOf(BASE), headCommit: commitOf(HEAD), shape, indexMemoryMiB: { base: base.memoryMiB, head: head.memoryMiB }, sets: results },
});
console.log(`wrote ${file}`);
