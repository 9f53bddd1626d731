/**
 * The console's browser tests (console/e2e), run by `npm test` before vitest: Debian's Chromium
 * (never a downloaded browser), headless, against real control-plane processes, one on
 * PostgreSQL (DATABASE_URL) and one on the embedded database, started by global-setup.ts.
 */
import { defineConfig } from '@playwright/test';

export const CHROMIUM = process.env.AUTHZ_TEST_BROWSER ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'console/e2e',
  globalSetup: './console/e2e/global-setup.ts',
  outputDir: 'test-results/console',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  // The two projects at once, each on its own control plane and in order within itself (its
  // tests share one tenant): half the wall time on CI's 2 cores.
  workers: 2,
  retries: 0,
  reporter: [['list']],
  use: {
    headless: true,
    launchOptions: { executablePath: CHROMIUM, args: ['--no-sandbox'] },
    viewport: { width: 1280, height: 860 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
  projects: [
    { name: 'postgres', workers: 1 },
    { name: 'embedded', workers: 1 },
  ],
});
