/**
 * Writes test/durations.json from a vitest JSON report (`--reporter=json --outputFile=…`): the
 * seconds of each file that took at least 3 s, for test/sequencer.ts.
 * Usage: npm run test:durations -- /tmp/vitest.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const report = process.argv[2];
if (!report) {
  console.error('usage: npm run test:durations -- <vitest JSON report>');
  process.exit(2);
}
interface FileResult {
  readonly name: string;
  readonly startTime: number;
  readonly endTime: number;
}
const files: FileResult[] = JSON.parse(readFileSync(report, 'utf8')).testResults;
const rows = files
  .map((f) => [relative(process.cwd(), f.name), Math.round((f.endTime - f.startTime) / 100) / 10] as const)
  .filter(([, s]) => s >= 3)
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
writeFileSync(new URL('./durations.json', import.meta.url), `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`);
console.log(`test/durations.json: ${rows.length} files`);
