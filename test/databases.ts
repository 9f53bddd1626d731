import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A new PostgreSQL database next to `admin`'s (`options`: what follows `create database <name>`),
 * and how to drop it. Empty, or under vitest (without `options`) a copy of the run's migrated
 * template (test/global-setup.ts).
 */
export async function createScratchDatabase(admin: string, prefix = 'authz_test', options = ''): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const template = process.env.AUTHZ_TEST_TEMPLATE_DATABASE;
  if (options === '' && template) options = `template ${template}`;
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`create database ${name} ${options}`.trimEnd());
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}
