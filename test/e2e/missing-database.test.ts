/**
 * A DATABASE_URL naming a database that does not exist stops the control plane (exit 2, naming
 * the database and the setting that would create it) and creates nothing; with
 * SERVICE_DATABASE_CREATE=true the database is created and the control plane becomes ready.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';

const admin = process.env.DATABASE_URL;

async function query(sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

describe.skipIf(!admin)('a PostgreSQL DATABASE_URL naming a database that does not exist', () => {
  const name = `authz_test_typo_${randomBytes(6).toString('hex')}`;
  const url = new URL(admin ?? 'postgres://localhost');
  url.pathname = `/${name}`;
  const env = { DATABASE_URL: url.toString(), SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: 'azk_missing_database_bootstrap_0123456789' };
  const exists = async () => (await query('select count(*)::int as n from pg_database where datname = $1', [name])).rows[0].n === 1;
  const running: RunningProcess[] = [];

  afterAll(async () => {
    for (const p of running) await p.stop();
    await query(`drop database if exists ${name} with (force)`);
  });

  it('stops the control plane with exit 2, naming the database and SERVICE_DATABASE_CREATE; nothing is created', async () => {
    const failed = await startProcess('control-plane', env).then(
      (p) => (running.push(p), 'started'),
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited \(2\) before listening/);
    expect(failed).toContain(`configuration error: DATABASE_URL: database "${name}" does not exist`);
    expect(failed).toContain('SERVICE_DATABASE_CREATE=true');
    expect(await exists()).toBe(false);
  });

  it('is created with SERVICE_DATABASE_CREATE=true, and the control plane becomes ready', async () => {
    const cp = await startProcess('control-plane', { ...env, SERVICE_DATABASE_CREATE: 'true' });
    running.push(cp);
    await waitFor200(`${cp.url}/readyz`);
    expect(await exists()).toBe(true);
  });
});
