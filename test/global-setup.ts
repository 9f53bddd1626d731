/**
 * Once per `vitest run`: a migrated database of each backend that the suites' scratch databases
 * are copied from, so that each opens in a fraction of the time initdb and every migration take
 * (an embedded one in about 1 s instead of 4; a PostgreSQL one skips 0.35 s of migrations).
 * Made fresh by each run and removed after it: no test depends on what an earlier run left.
 * The workers find them through the environment (test/databases.ts, test/harness.ts); the
 * suites that test migrations themselves make their databases without them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../services/store/db.js';
import { createScratchDatabase } from './databases.js';

/** Rows that opening a database adds and each copy must make for itself (its cursor key). */
async function forgetInstanceRows(db: Database): Promise<void> {
  await db.orm.em.fork().execute(`delete from service_settings where name = 'cursor_key'`);
}

export default async function setup(): Promise<() => Promise<void>> {
  const cleanups: (() => Promise<void>)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'authz-test-images-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));

  const embedded = await openDatabase({ dataDir: 'memory://' });
  try {
    await forgetInstanceRows(embedded);
    const image = join(dir, 'embedded.tar');
    await embedded.saveEmbeddedImage!(image);
    process.env.AUTHZ_TEST_EMBEDDED_IMAGE = image;
  } finally {
    await embedded.close();
  }

  if (process.env.DATABASE_URL) {
    const template = await createScratchDatabase(process.env.DATABASE_URL, 'authz_test_template');
    cleanups.push(template.drop);
    const db = await openDatabase({ databaseUrl: template.url, dataDir: 'memory://' });
    try {
      await forgetInstanceRows(db);
    } finally {
      await db.close();
    }
    process.env.AUTHZ_TEST_TEMPLATE_DATABASE = decodeURIComponent(new URL(template.url).pathname.slice(1));
  }
  return async () => {
    for (const c of cleanups.reverse()) await c();
  };
}
