/**
 * A vitest reporter: a run without DATABASE_URL ends with one line saying how many PostgreSQL
 * tests it skipped and how to run them. A suite that needs PostgreSQL names it in its title
 * (describeEachBackend's `… on postgres` does).
 */
import type { Reporter, TestModule, Vitest } from 'vitest/node';

export default class PostgresSkips implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (process.env.DATABASE_URL) return;
    let skipped = 0;
    for (const m of modules) for (const test of m.children.allTests('skipped')) if (/postgres/i.test(test.fullName)) skipped++;
    if (skipped === 0) return;
    this.vitest?.logger.log(
      `${skipped} PostgreSQL tests skipped: DATABASE_URL is not set. Run them with DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm test (a role that may create databases: each suite makes its own).`,
    );
  }
}
