import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import pg from 'pg';
import { MissingDatabaseError, openDatabase, type Database } from './db.js';
import { runWrite } from './write.js';
import { seedTenant } from '../../test/harness.js';
import { createScratchDatabase } from '../../test/databases.js';

const execFileAsync = promisify(execFile);

const BUILT_IN = ['environment', 'project', 'tenant', 'workspace'];
/** db.ts's migration lock (a bigint key: classid 0, objid the value). */
const MIGRATION_LOCK = 727_431_001;

async function one<T>(db: Database, sql: string, params: unknown[] = []): Promise<T> {
  return ((await db.orm.em.fork().execute(sql, params)) as T[])[0];
}

/** What migrating left behind: applied migrations, built-in scope types, held migration locks. */
async function schemaState(db: Database) {
  const migrations = (await db.orm.em.fork().execute('select name, executed_at from mikro_orm_migrations order by id')) as
    { name: string; executed_at: Date }[];
  const scopeTypes = (await db.orm.em.fork().execute(`select id, name from scope_types where created_by = 'system' order by name`)) as
    { id: string; name: string }[];
  return { migrations, scopeTypes };
}

function expectMigratedOnce(state: Awaited<ReturnType<typeof schemaState>>) {
  expect(state.migrations.map((m) => m.name)).toEqual(['0001-initial', '0002-service-settings', '0003-change-log-retention', '0004-key-notify', '0005-imports', '0006-revision-writers', '0007-sessions']);
  expect(state.scopeTypes).toEqual(BUILT_IN.map((n) => ({ id: `scope_type_${n}`, name: n })));
}

/** Fails instead of hanging when `p` takes longer than `ms` (e.g. a migration lock never released). */
function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms); }),
  ]);
}

describe.skipIf(!process.env.DATABASE_URL)('migrations on postgres', () => {
  const admin = process.env.DATABASE_URL!;

  async function adminQuery(sql: string) {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      return await c.query(sql);
    } finally {
      await c.end();
    }
  }

  /** A new, empty database (no schema at all); `drop` removes it. */
  async function freshDatabase() {
    const name = `authz_test_mig_${randomBytes(6).toString('hex')}`;
    await adminQuery(`create database ${name}`);
    const url = new URL(admin);
    url.pathname = `/${name}`;
    return { url: url.toString(), drop: () => adminQuery(`drop database if exists ${name} with (force)`) };
  }

  const open = (databaseUrl: string) => openDatabase({ databaseUrl, dataDir: 'memory://' });

  async function heldMigrationLocks(db: Database) {
    const r = await one<{ n: number }>(db, `select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${MIGRATION_LOCK}
      and database = (select oid from pg_database where datname = current_database())`);
    return r.n;
  }

  it('a database that does not exist is not created unless asked: MissingDatabaseError naming it, nothing created', async () => {
    const name = `authz_test_missing_${randomBytes(6).toString('hex')}`;
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const exists = async () => (await adminQuery(`select count(*)::int as n from pg_database where datname = '${name}'`)).rows[0].n === 1;
    try {
      const refused = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://' }).then(() => undefined, (err: unknown) => err);
      expect(refused).toBeInstanceOf(MissingDatabaseError);
      expect((refused as MissingDatabaseError).database).toBe(name);
      expect(await exists()).toBe(false);

      const db = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://', createDatabase: true });
      try {
        expect(await exists()).toBe(true);
        expectMigratedOnce(await schemaState(db));
      } finally {
        await db.close();
      }
    } finally {
      await adminQuery(`drop database if exists ${name} with (force)`);
    }
  });

  it('opening the same database twice in turn applies the schema once and keeps the data', async () => {
    const fresh = await freshDatabase();
    const opened: Database[] = [];
    try {
      const a = await open(fresh.url);
      opened.push(a);
      await seedTenant(a, 'tenant_keep');
      const first = await schemaState(a);
      expectMigratedOnce(first);
      // The first replica released the migration lock: a second one, opened while the first
      // is still up, neither waits on it nor re-applies anything.
      expect(await heldMigrationLocks(a)).toBe(0);
      const b = await within(10_000, open(fresh.url), 'the second openDatabase');
      opened.push(b);
      expect(await schemaState(b)).toEqual(first);
      expect(await one(b, `select revision::int as revision from tenants where id = 'tenant_keep'`)).toEqual({ revision: 1 });
      await a.close();
      await b.close();
      opened.length = 0;

      const c = await within(10_000, open(fresh.url), 'the third openDatabase');
      opened.push(c);
      expect(await schemaState(c)).toEqual(first);
      expect(await one(c, `select count(*)::int as n from change_log where tenant_id = 'tenant_keep'`)).toEqual({ n: 1 });
    } finally {
      for (const d of opened) await d.close();
      await fresh.drop();
    }
  });

  it('a process opening a migrated database loads no migrator; one opening a fresh database does', async () => {
    const fresh = await freshDatabase();
    // A process of its own: whether umzug was loaded is read from its module cache.
    const loadsMigrator = async () => {
      const script = `import { createRequire } from 'node:module';
        import { openDatabase } from ${JSON.stringify(new URL('./db.ts', import.meta.url).pathname)};
        const db = await openDatabase({ databaseUrl: process.env.URL, dataDir: 'memory://' });
        await db.close();
        console.log(Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/umzug/')));`;
      const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, URL: fresh.url } });
      return stdout.trim();
    };
    try {
      expect(await loadsMigrator()).toBe('true');
      expect(await loadsMigrator()).toBe('false');
      const db = await open(fresh.url);
      try {
        expectMigratedOnce(await schemaState(db));
      } finally {
        await db.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('a connection the server drops is logged through the service logger as JSON, never printed by the driver', async () => {
    const scratch = await createScratchDatabase(admin);
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const printed = vi.spyOn(console, 'log');
    const db = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', logger });
    try {
      await one(db, 'select 1');
      const name = new URL(scratch.url).pathname.slice(1);
      await adminQuery(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}' and pid <> pg_backend_pid()`);
      // The pool finds its connection dropped when it next hands one out, and makes another.
      for (let i = 0; i < 20 && !lines.some((l) => l.includes('dropped')); i++) {
        await one(db, 'select 1').catch(() => undefined);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(printed.mock.calls.filter((c) => String(c[0]).includes('Connection Error'))).toEqual([]);
      const warned = lines.map((l) => JSON.parse(l) as { level: number; msg: string; component?: string }).filter((l) => l.component === 'database-driver');
      expect(warned.length).toBeGreaterThan(0);
      expect(warned[0].level).toBe(40);
      expect(warned[0].msg).toMatch(/terminating connection|ended unexpectedly/);
    } finally {
      printed.mockRestore();
      await db.close();
      await scratch.drop();
    }
  });

  it('builds the snapshot indexes concurrently: a build cut off (an invalid index left behind) is dropped and built again', async () => {
    const fresh = await freshDatabase();
    let db: Database | undefined;
    try {
      db = await open(fresh.url);
      // As a crash during `create index concurrently` leaves it: the index invalid, 0003 unrecorded.
      await db.orm.em.fork().execute(`update pg_index set indisvalid = false where indexrelid = 'resources_tenant_id'::regclass`);
      await db.orm.em.fork().execute(`delete from mikro_orm_migrations where name = '0003-change-log-retention'`);
      await db.close();
      db = await within(10_000, open(fresh.url), 'reopening');
      expect((await schemaState(db)).migrations.map((m) => m.name).sort()).toEqual(['0001-initial', '0002-service-settings', '0003-change-log-retention', '0004-key-notify', '0005-imports', '0006-revision-writers', '0007-sessions']);
      const invalid = await one<{ n: number }>(db, `select count(*)::int as n from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname like '%_tenant_id' and not i.indisvalid`);
      expect(invalid.n).toBe(0);
      expect(await one(db, `select count(*)::int as n from pg_class where relname = 'resources_tenant_id'`)).toEqual({ n: 1 });
    } finally {
      await db?.close();
      await fresh.drop();
    }
  });

  it('concurrent openDatabase calls on a fresh database all succeed and migrate once (advisory lock)', async () => {
    const fresh = await freshDatabase();
    const opened: Database[] = [];
    try {
      const results = await within(20_000, Promise.allSettled(Array.from({ length: 4 }, () => open(fresh.url))), 'the concurrent opens');
      for (const r of results) if (r.status === 'fulfilled') opened.push(r.value);
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(results.map(() => 'ok'));
      const first = await schemaState(opened[0]);
      expectMigratedOnce(first);
      for (const d of opened) expect(await schemaState(d)).toEqual(first);
      expect(await heldMigrationLocks(opened[0])).toBe(0);
      // And the schema works: a write through one replica is seen by another.
      await seedTenant(opened[1], 'tenant_conc_open');
      expect(await one(opened[3], `select revision::int as revision from tenants where id = 'tenant_conc_open'`)).toEqual({ revision: 1 });
      // Replicas sign list cursors with one shared key: a cursor from one is good on another.
      const cursor = opened[0].cursors.encode('subject {}', 'subject_1');
      for (const d of opened) expect(d.cursors.decode('subject {}', cursor)).toBe('subject_1');
    } finally {
      for (const d of opened) await d.close();
      await fresh.drop();
    }
  });
});

describe('embedded database on disk', () => {
  it('keeps data, change log and revision across close and reopen; migrations do not re-run', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'authz-store-'));
    let db: Database | undefined;
    try {
      db = await openDatabase({ dataDir });
      expect(db.backend).toBe('embedded');
      await seedTenant(db, 'tenant_disk'); // revision 1: tenant and root scope
      const w = await runWrite(db, async (tx) => {
        await tx.useTenant('tenant_disk');
        await tx.insert('subject', [{
          id: 'subject_disk', tenantId: 'tenant_disk', type: 'user', externalId: 'disk', metadata: { k: 'v' },
          createdAt: new Date('2024-03-04T05:06:07.089Z'), createdBy: 'test',
        }]);
      });
      expect(w.revision).toBe(2);
      const state = await schemaState(db);
      expectMigratedOnce(state);
      const log = await db.orm.em.fork().execute(`select * from change_log where tenant_id = 'tenant_disk' order by revision, seq`);
      expect(log).toHaveLength(2); // the root scope (revision 1), the subject (revision 2)
      await db.close();
      db = undefined;
      expect(existsSync(join(dataDir, 'pglite'))).toBe(true);

      db = await openDatabase({ dataDir });
      // Same applied migrations (same executed_at: nothing re-ran), same rows.
      expect(await schemaState(db)).toEqual(state);
      expect(await db.orm.em.fork().execute(`select * from change_log where tenant_id = 'tenant_disk' order by revision, seq`)).toEqual(log);
      expect(await one(db, `select revision::int as revision, scope_id from tenants where id = 'tenant_disk'`))
        .toEqual({ revision: 2, scope_id: 'scope_tenant_disk' });
      expect(await one(db, `select external_id, metadata, created_at = timestamptz '2024-03-04T05:06:07.089Z' as same_time
        from subjects where id = 'subject_disk'`)).toEqual({ external_id: 'disk', metadata: { k: 'v' }, same_time: true });
      // The revision goes on from where it was.
      const next = await runWrite(db, async (tx) => { await tx.useTenant('tenant_disk'); await tx.delete('subject', ['subject_disk']); });
      expect(next.revision).toBe(3);
    } finally {
      await db?.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
