import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ALL_ENTITIES } from './schema.js';
import { Migration0001Initial } from './migrations/0001-initial.js';

export interface DatabaseOptions {
  /** `postgres://…`; when absent the embedded PostgreSQL (PGlite) under `dataDir` is used. */
  databaseUrl?: string;
  /** Where the embedded database persists; `memory://` keeps it in memory (tests). */
  dataDir: string;
}

export interface Database {
  orm: MikroORM;
  /** `postgres` or `embedded`. */
  backend: 'postgres' | 'embedded';
  /** Whether a trivial query succeeds (readiness). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** An arbitrary constant: the advisory lock that serialises migrations across replicas. */
const MIGRATION_LOCK = 727_431_001;

/**
 * Opens the database and applies pending migrations (safe to run twice, and safe when
 * several replicas start at once: they queue on an advisory lock).
 *
 * Without `databaseUrl` the service runs on PGlite, served over a loopback socket by
 * pglite-socket, so MikroORM's one PostgreSQL driver (and one SQL dialect) serves both.
 * PGlite is single-connection, hence a pool of one.
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  let embedded: { pglite: PGlite; server: PGLiteSocketServer } | undefined;
  let clientUrl = opts.databaseUrl;
  if (!clientUrl) {
    const dir = opts.dataDir === 'memory://' ? undefined : resolve(opts.dataDir, 'pglite');
    if (dir) mkdirSync(dir, { recursive: true });
    const pglite = await PGlite.create(dir);
    const server = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port: 0 });
    await server.start();
    embedded = { pglite, server };
    clientUrl = `postgres://postgres@${server.getServerConn()}/postgres`;
  }
  const orm = await MikroORM.init({
    clientUrl,
    entities: ALL_ENTITIES,
    extensions: [Migrator],
    pool: embedded ? { min: 1, max: 1 } : { min: 0, max: 10 },
    allowGlobalContext: false,
    debug: false,
    discovery: { disableDynamicFileAccess: true, requireEntitiesArray: true },
    migrations: {
      migrationsList: [{ name: '0001-initial', class: Migration0001Initial }],
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
  });
  try {
    await migrate(orm, embedded ? undefined : clientUrl);
  } catch (err) {
    await orm.close(true);
    if (embedded) await stopEmbedded(embedded);
    throw err;
  }
  return {
    orm,
    backend: embedded ? 'embedded' : 'postgres',
    async ping() {
      try {
        await orm.em.execute('select 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await orm.close(true);
      if (embedded) await stopEmbedded(embedded);
    },
  };
}

/**
 * Applies pending migrations. On PostgreSQL the session advisory lock is held on a
 * dedicated connection, so lock and unlock cannot land on different pooled connections.
 * PGlite has one connection and no one to race with.
 */
async function migrate(orm: MikroORM, lockUrl: string | undefined) {
  if (!lockUrl) return void (await orm.getMigrator().up());
  const lock = new pg.Client({ connectionString: lockUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await orm.getMigrator().up();
  } finally {
    await lock.end(); // ending the session releases the lock
  }
}

async function stopEmbedded(e: { pglite: PGlite; server: PGLiteSocketServer }) {
  await e.server.stop();
  await e.pglite.close();
}
