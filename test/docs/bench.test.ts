/**
 * The benchmarks' documentation against the benchmarks: bench/README.md names every benchmark
 * file and `bench:*` script, every results file follows the one schema of bench/results-file.ts,
 * and docs/performance.md shows each results file with its date and commit.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readResults, RESULTS_DIR, RESULTS_SCHEMA } from '../../bench/results-file.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BENCH_README = readFileSync(join(ROOT, 'bench/README.md'), 'utf8');
const PERFORMANCE = readFileSync(join(ROOT, 'docs/performance.md'), 'utf8');
const RESULTS = readdirSync(RESULTS_DIR).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length));

describe('bench/README.md', () => {
  it('names every file of bench/ and every bench:* script of package.json', () => {
    const files = readdirSync(join(ROOT, 'bench')).filter((f) => f.endsWith('.ts'));
    expect(files.filter((f) => !BENCH_README.includes(`\`${f}\``))).toEqual([]);
    const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts).filter((s) => s.startsWith('bench:'));
    expect(scripts.filter((s) => !BENCH_README.includes(`npm run ${s}\``))).toEqual([]);
  });
});

describe.each(RESULTS)('bench/results/%s.json', (name) => {
  const file = readResults(name);

  it('follows the results schema: commit, date and machine, known or null', () => {
    expect(Object.keys(file)).toEqual(['schema', 'benchmark', 'command', 'date', 'commit', 'machine', 'baseline', 'results']);
    expect(file.schema).toBe(RESULTS_SCHEMA);
    expect(file.benchmark).toBe(name);
    expect(file.command === null || typeof file.command === 'string').toBe(true);
    expect(file.date === null || !Number.isNaN(Date.parse(file.date))).toBe(true);
    expect(file.commit === null || /^[0-9a-f]{40}(\+dirty)?$/.test(file.commit)).toBe(true);
    expect(Object.keys(file.machine)).toEqual(['cpus', 'model', 'node', 'platform', 'memoryGiB', 'loadAverage']);
    expect(file.baseline === null || Object.keys(file.baseline).every((k) => k === 'nodeHttpRps' || k === 'nodeHttpInstructionsPerRequest')).toBe(true);
    expect(typeof file.results).toBe('object');
  });

  it('is in docs/performance.md with its date and commit', () => {
    const section = PERFORMANCE.split('\n## ').find((s) => s.includes(`bench/results/${name}.json`) || s.includes(`\`${name}.json\``));
    expect(section, `docs/performance.md names bench/results/${name}.json`).toBeDefined();
    expect(section).toContain(`| ${file.date?.slice(0, 10) ?? 'not recorded'} |`);
    expect(section).toContain(`| ${file.commit === null ? 'not recorded' : file.commit.slice(0, 7)} |`);
  });
});
