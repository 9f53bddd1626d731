import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['cmd/**/*.test.ts', 'services/**/*.test.ts', 'sidecar/**/*.test.ts', 'client/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts', 'console/src/**/*.test.{ts,tsx}', 'console/build/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A migrated database of each backend, copied by the suites' scratch databases.
    globalSetup: ['./test/global-setup.ts'],
    // Two files at a time on CI's 2 cores: most suites wait on PostgreSQL, timers and child
    // processes, so a second worker roughly halves the wall time (vitest's default is cores − 1).
    maxWorkers: 2,
    // The default output, then one line when PostgreSQL tests were skipped (no DATABASE_URL).
    reporters: ['default', './test/postgres-skips.ts'],
  },
});
