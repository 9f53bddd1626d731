/**
 * Orders test files longest first, from the durations a past run recorded (test/durations.json),
 * so that the longest files start while the other worker has others to run, instead of one of
 * them starting last and leaving a worker idle for its length. A fresh clone has no vitest cache,
 * whose order (unknown files by size) put the fuzz suite last: a run ended with one worker busy
 * for two minutes. Files the list does not name keep vitest's order, after the named ones.
 * `npm run test:durations -- <vitest JSON report>` rewrites the list.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const durations: Record<string, number> = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8'));

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = (f: TestSpecification) => durations[relative(root, f.moduleId)] ?? 0;
    // Array.prototype.sort is stable: unnamed files (0) stay in vitest's order.
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a));
  }
}
