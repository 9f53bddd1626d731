/**
 * The one way a benchmark writes its results: `bench/results/<name>.json`, the last run of that
 * benchmark worth keeping, under one schema (bench/README.md):
 *
 *   { "schema": 1, "benchmark": "engine", "command": "npm run bench:engine",
 *     "date": "2026-11-21T04:06:18.297Z", "commit": "22527a1…" | "22527a1…+dirty" | null,
 *     "machine": { "cpus": 2, "model": "…", "node": "v20.20.2", "platform": "linux 6.1…",
 *                  "memoryGiB": 24, "loadAverage": { "start": [1.7, 1.8, 1.5], "end": [1.3, 1.6, 1.5] } },
 *     "baseline": { "nodeHttpRps": 74048 } | null,
 *     "results": { …the benchmark's own figures… } }
 *
 * `baseline` is the constant `node:http` server's figure measured in the same run, for the
 * benchmarks that run one: absolute rates move between machines, ratios to it less. A field
 * that was not recorded is null, never guessed.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join, resolve } from 'node:path';

export const RESULTS_SCHEMA = 1;
const ROOT = resolve(import.meta.dirname, '..');
export const RESULTS_DIR = join(ROOT, 'bench/results');

export interface Machine {
  cpus: number | null;
  model: string | null;
  node: string | null;
  platform: string | null;
  memoryGiB: number | null;
  loadAverage: { start: number[] | null; end: number[] | null } | null;
}

/** What a benchmark measured its baseline as, in the same run. */
export interface Baseline {
  /** Requests per second of the constant `node:http` server (bench/constant-servers.ts). */
  nodeHttpRps?: number;
  /** Its user-space instructions per request, under callgrind. */
  nodeHttpInstructionsPerRequest?: number;
}

export interface ResultsFile<R = unknown> {
  schema: typeof RESULTS_SCHEMA;
  benchmark: string;
  /** What reproduces the run; null where it was not recorded. */
  command: string | null;
  date: string | null;
  commit: string | null;
  machine: Machine;
  baseline: Baseline | null;
  results: R;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** The 1-, 5- and 15-minute load averages now. */
export function loadAverageNow(): number[] {
  return loadavg().map(round2);
}

/** This machine: CPUs, their model, Node, the kernel, memory; the load average from `loadAtStart` to now. */
export function thisMachine(loadAtStart?: number[]): Machine {
  const list = cpus();
  return {
    cpus: list.length,
    model: list[0]?.model.trim() ?? null,
    node: process.version,
    platform: `${platform()} ${release()}`,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: { start: loadAtStart ?? null, end: loadAverageNow() },
  };
}

/** The checkout's commit, `+dirty` when files differ from it; null outside a git checkout. */
export function thisCommit(): string | null {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+dirty` : head;
  } catch {
    return null;
  }
}

/**
 * Writes `bench/results/<name>.json` for a run of this process (commit, date and machine
 * filled in) and returns its path relative to the repository.
 */
export function writeResults<R>(name: string, run: { command: string; results: R; baseline?: Baseline; loadAtStart?: number[] }): string {
  const file: ResultsFile<R> = {
    schema: RESULTS_SCHEMA,
    benchmark: name,
    command: run.command,
    date: new Date().toISOString(),
    commit: thisCommit(),
    machine: thisMachine(run.loadAtStart),
    baseline: run.baseline ?? null,
    results: run.results,
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${name}.json`), `${JSON.stringify(file, null, 1)}\n`);
  return `bench/results/${name}.json`;
}

/** A results file as written (for the docs test and for benchmarks that compare with their last run). */
export function readResults(name: string): ResultsFile {
  return JSON.parse(readFileSync(join(RESULTS_DIR, `${name}.json`), 'utf8')) as ResultsFile;
}
