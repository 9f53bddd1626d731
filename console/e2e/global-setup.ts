/**
 * Starts the control planes the browser tests drive, as real processes: one on a new PostgreSQL
 * database (when DATABASE_URL is set) and one on the embedded database in a temporary
 * directory. Each gets a tenant made from examples/documents/model.yaml by the real `authz`
 * CLI, and a `user` key of that tenant. What the tests need is passed in
 * AUTHZ_CONSOLE_E2E (JSON of `Backends`); the returned function stops everything.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { createScratchDatabase } from '../../test/databases.js';
import { freePort, startProcess, waitFor200, type RunningProcess } from '../../test/processes.js';
import { CHROMIUM } from '../../playwright.config.js';
import type { Backend, Backends } from './backends.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PLATFORM_KEY = `azk_console_e2e_${'k'.repeat(32)}`;

export async function api<T>(url: string, path: string, body: unknown, key = PLATFORM_KEY): Promise<T> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function seed(url: string, name: string): Promise<Backend> {
  const tenant = await api<{ id: string; scopeId: string }>(url, '/tenants', { name });
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'apply', '-f', 'examples/documents/model.yaml', '--yes'], {
    cwd: ROOT, env: { ...process.env, AUTHZ_URL: url, AUTHZ_API_KEY: PLATFORM_KEY, AUTHZ_TENANT: tenant.id },
  });
  const user = await api<{ secretKey: string; id: string }>(url, '/api-keys', { name: 'console e2e user', kind: 'user', tenantId: tenant.id });
  return { url, platformKey: PLATFORM_KEY, tenantId: tenant.id, rootScopeId: tenant.scopeId, userKey: user.secretKey };
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  const stops: (() => Promise<void>)[] = [];
  const backends: Backends = {};
  if (!existsSync(CHROMIUM)) return async () => {};
  const start = async (env: Record<string, string>): Promise<RunningProcess> => {
    const cp = await startProcess('control-plane', {
      SERVICE_PORT: String(await freePort()), SERVICE_BOOTSTRAP_API_KEY: PLATFORM_KEY, SERVICE_INDEX_MAX_ROWS: '1000000', ...env,
    });
    stops.push(() => cp.stop());
    await waitFor200(`${cp.url}/readyz`, 60_000);
    return cp;
  };
  try {
    if (process.env.DATABASE_URL) {
      const db = await createScratchDatabase(process.env.DATABASE_URL, 'authz_console_e2e');
      stops.push(db.drop);
      const cp = await start({ DATABASE_URL: db.url });
      backends.postgres = { ...(await seed(cp.url, 'acme')), databaseUrl: db.url };
    }
    const dir = mkdtempSync(join(tmpdir(), 'authz-console-e2e-'));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    const cp = await start({ SERVICE_DATA_DIR: dir, DATABASE_URL: '' });
    backends.embedded = await seed(cp.url, 'acme');
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    throw err;
  }
  process.env.AUTHZ_CONSOLE_E2E = JSON.stringify(backends);
  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
  };
}
