/**
 * What the browser tests drive: global-setup.ts starts a control plane per backend and passes
 * this in AUTHZ_CONSOLE_E2E; `test` (below) gives each test its project's backend, with
 * `baseURL` pointing at it, and skips a backend that was not started (no DATABASE_URL).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { test as base, expect, type Page } from '@playwright/test';
import { CHROMIUM } from '../../playwright.config.js';

export interface Backend {
  readonly url: string;
  readonly platformKey: string;
  readonly tenantId: string;
  readonly rootScopeId: string;
  /** A `user` key of the tenant. */
  readonly userKey: string;
  /** Set for the PostgreSQL backend: its database, which the session-expiry test ages. */
  readonly databaseUrl?: string;
}
export type Backends = { postgres?: Backend; embedded?: Backend };

const REQUIRED = process.env.AUTHZ_TEST_BROWSER_REQUIRED === '1';
export const SCREENSHOTS = resolve(import.meta.dirname, '../../test-results/console-screenshots');

export const test = base.extend<{ backend: Backend }>({
  backend: async ({}, use, info) => {
    if (!existsSync(CHROMIUM)) {
      if (REQUIRED) throw new Error(`${CHROMIUM} not found; install Debian's chromium (apt-get install chromium) or set AUTHZ_TEST_BROWSER`);
      info.skip(true, `${CHROMIUM} not found`);
    }
    const all = JSON.parse(process.env.AUTHZ_CONSOLE_E2E ?? '{}') as Backends;
    const b = all[info.project.name as keyof Backends];
    info.skip(b === undefined, `no ${info.project.name} backend (DATABASE_URL unset)`);
    await use(b!);
  },
  baseURL: async ({ backend }, use) => use(backend.url),
});
export { expect };

/** Signs in through the form with `key` (the platform key by default) and waits for the shell. */
export async function signIn(page: Page, backend: Backend, key = backend.platformKey): Promise<void> {
  await page.goto('/console/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('button', { name: 'Sign out' })).toBeVisible();
}

/** Opens a view of the seeded tenant by its path (`scopes`, `roles`, …). */
export async function openView(page: Page, backend: Backend, path: string): Promise<void> {
  await page.goto(`/console/t/${backend.tenantId}/${path}`);
}

/** A screenshot of the page as it is, for the README and for a person reviewing a run. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: resolve(SCREENSHOTS, `${test.info().project.name}-${name}.png`), fullPage: true });
}
