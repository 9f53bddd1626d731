import { defineConfig } from 'vitest/config';
import LongestFirst from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['cmd/**/*.test.ts', 'services/**/*.test.ts', 'sidecar/**/*.test.ts', 'client/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts', 'console/src/**/*.test.{ts,tsx}', 'console/build/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A migrated database of each backend, copied by the suites' scratch databases.
    globalSetup: ['./test/global-setup.ts'],
    // Files share a worker's module cache: the control plane's modules load once per worker
    // instead of once per file (300 s of a run's 2,200 s of files). A file leaves no global
    // state behind (docs/development.md).
    isolate: false,
    // Two files at a time on CI's 2 cores: most suites wait on PostgreSQL, timers and child
    // processes, so a second worker roughly halves the wall time (vitest's default is cores − 1).
    maxWorkers: 2,
    // Longest files first (test/sequencer.ts), from test/durations.json.
    sequence: { sequencer: LongestFirst },
    // The default output, then one line when PostgreSQL tests were skipped (no DATABASE_URL).
    reporters: ['default', './test/postgres-skips.ts'],
  },
});
