import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { MikroORM } from '@mikro-orm/postgresql';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ALL_ENTITIES } from './schema.js';
import { MIGRATION_NAMES, loadMigrations } from './migrations/mod.js';
import { CursorCodec } from './cursors.js';
import { CHANGE_CHANNEL, KEY_CHANNEL, Notifications } from './notifications.js';
import { startEmbedded, type EmbeddedDatabase } from './embedded.js';

export interface DatabaseOptions {
  /** Where the notifications connection logs (silent when absent). */
  logger?: Logger;
  /** `postgres://…`; when absent the embedded PostgreSQL (PGlite) under `dataDir` is used. */
  databaseUrl?: string;
  /** Where the embedded database persists; `memory://` keeps it in memory (tests). */
  dataDir: string;
  /**
   * With `memory://`: a file of {@link Database.saveEmbeddedImage} the database starts from,
   * rather than an empty cluster and every migration (the test suites' databases: a quarter of
   * the time to open).
   */
  embeddedImage?: string;
  /**
   * Create the database `databaseUrl` names when it does not exist; otherwise opening it throws
   * MissingDatabaseError (a typo in the URL must not give an empty, working service).
   */
  createDatabase?: boolean;
}

/** The database a `postgres://` URL names does not exist (and was not to be created). */
export class MissingDatabaseError extends Error {
  constructor(readonly database: string) {
    super(`database ${JSON.stringify(database)} does not exist`);
    this.name = 'MissingDatabaseError';
  }
}

export interface Database {
  orm: MikroORM;
  /** `postgres` or `embedded`. */
  backend: 'postgres' | 'embedded';
  /** Signs and checks list cursors, with the key every replica of this database shares. */
  cursors: CursorCodec;
  /**
   * NOTIFY wake-ups of every process writing this database (not listening until `start()`;
   * this process's own commits are delivered by `runWrite` either way).
   */
  notifications: Notifications;
  /** Whether a trivial query succeeds (readiness). */
  ping(): Promise<boolean>;
  /** The embedded database's data directory as a file, for `embeddedImage`; undefined on PostgreSQL. */
  saveEmbeddedImage?(path: string): Promise<void>;
  /** The connection pool now (metrics); undefined once closed. */
  poolStats(): PoolStats | undefined;
  /** Calls `f` with the seconds each pool acquire waited (metrics); returns the unsubscribe. */
  onAcquire(f: (seconds: number) => void): () => void;
  close(): Promise<void>;
}

/** The ORM's connection pool (knex's tarn pool), as metrics read it. */
export interface PoolStats {
  /** Connections lent out (a query or transaction runs on each). */
  used: number;
  /** Open connections waiting in the pool. */
  free: number;
  /** Callers waiting for a connection. */
  pendingAcquires: number;
  /** Connections being opened. */
  pendingCreates: number;
  max: number;
}

/** What knex keeps of tarn's pool: the counters and its events. */
interface TarnPool {
  max: number;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  on(event: 'acquireRequest' | 'acquireFail', f: (eventId: number) => void): void;
  on(event: 'acquireSuccess', f: (eventId: number) => void): void;
  removeListener(event: string, f: (...args: never[]) => void): void;
}

/** knex's pool under the ORM (undefined when it has none, e.g. after close). */
function tarnPool(orm: MikroORM): TarnPool | undefined {
  const knex = orm.em.getConnection().getKnex() as unknown as { client?: { pool?: TarnPool } };
  return knex.client?.pool ?? undefined;
}

/** SQLSTATEs of a database that cannot serve now: connection exceptions (class 08), shutdowns and
 * refused connections (57P01-57P05), insufficient resources (class 53), an unknown database. */
const UNAVAILABLE_STATES = /^(08...|57P0[1-5]|53...|3D000)$/;
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// "Transaction query already complete": when a transaction's BEGIN fails because its connection
// was just dropped, knex 3 swallows that error, marks the transaction complete and still runs the
// transaction's body, whose first query then fails with this message (the real cause goes to a
// promise nobody returns). Every transaction here is forked per request and never used after its
// commit, so this message only ever means a connection lost under the transaction.
const UNAVAILABLE_MESSAGES =
  /connection terminated|connection ended unexpectedly|not currently accepting connections|not queryable|timeout acquiring a connection|timeout exceeded when trying to connect|transaction query already complete/i;

/**
 * Whether an error says the database cannot be reached or cannot serve right now (rather than
 * that a query is wrong): callers answer `unavailable` so that clients retry. Follows `cause`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e = err as { name?: string; code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++, e = e.cause as typeof e) {
    if (e.name === 'ConnectionException' || e.name === 'KnexTimeoutError') return true;
    if (typeof e.code === 'string' && (UNAVAILABLE_STATES.test(e.code) || UNAVAILABLE_ERRNOS.has(e.code))) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  }
  return false;
}

/** The channels this database's writers NOTIFY on. */
const NOTIFY_CHANNELS = [CHANGE_CHANNEL, KEY_CHANNEL];

/** An arbitrary constant: the advisory lock that serialises migrations across replicas. */
const MIGRATION_LOCK = 727_431_001;

/**
 * Opens the database and applies pending migrations (safe to run twice, and safe when
 * several replicas start at once: they queue on an advisory lock).
 *
 * Without `databaseUrl` the service runs on PGlite, on a thread of its own, served over a
 * loopback socket by pglite-socket, so MikroORM's one PostgreSQL driver (and one SQL dialect)
 * serves both. PGlite is single-connection, hence a pool of one.
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const logger = opts.logger ?? pino({ level: 'silent' });
  let embedded: EmbeddedDatabase | undefined;
  let clientUrl = opts.databaseUrl;
  if (!clientUrl) {
    const dir = opts.dataDir === 'memory://' ? undefined : resolve(opts.dataDir, 'pglite');
    if (dir) mkdirSync(dir, { recursive: true });
    embedded = await startEmbedded(dir, (why) => logger.error({ why }, 'the embedded database is gone: every request now fails'), dir ? undefined : opts.embeddedImage);
    clientUrl = embedded.url;
  } else {
    await requireDatabase(clientUrl, opts.createDatabase ?? false);
  }
  const orm = await MikroORM.init({
    clientUrl,
    // Whether it may be created is decided above: MikroORM would create a missing one silently.
    ensureDatabase: false,
    entities: ALL_ENTITIES,
    pool: embedded ? { min: 1, max: 1 } : { min: 0, max: 10 },
    // knex prints its warnings (a pooled connection the server dropped, found when the pool next
    // hands it out) with console.log: plain text amid the JSON log lines. They go to the
    // service's logger instead; its debug messages are query traces, left off.
    driverOptions: {
      log: {
        warn: (m: unknown) => logger.warn({ component: 'database-driver' }, `database connection dropped or refused: ${String(m).replace(/^Connection Error: /, '')}`),
        error: (m: unknown) => logger.error({ component: 'database-driver' }, String(m)),
        deprecate: (m: unknown) => logger.warn({ component: 'database-driver' }, String(m)),
        debug: () => undefined,
      },
    },
    allowGlobalContext: false,
    debug: false,
    discovery: { disableDynamicFileAccess: true, requireEntitiesArray: true },
    // The list itself is given by `migrate`, when one is missing (migrations/mod.ts).
    migrations: {
      // Each migration in a transaction of its own (all at once would rule out 0003's
      // concurrent index builds, which cannot run inside one); the advisory lock still
      // serialises replicas.
      transactional: true,
      allOrNothing: false,
      snapshot: false,
      silent: true,
    },
  });
  let cursors: CursorCodec;
  try {
    await migrate(orm, embedded ? undefined : clientUrl);
    cursors = new CursorCodec(Buffer.from(await setting(orm, 'cursor_key', CursorCodec.newKey()), 'hex'));
  } catch (err) {
    await orm.close(true);
    if (embedded) await embedded.stop();
    throw err;
  }
  const notifications = new Notifications({
    url: embedded ? undefined : clientUrl,
    channels: NOTIFY_CHANNELS,
    logger,
  });
  return {
    orm,
    backend: embedded ? 'embedded' : 'postgres',
    cursors,
    notifications,
    async ping() {
      try {
        await orm.em.execute('select 1');
        return true;
      } catch {
        return false;
      }
    },
    saveEmbeddedImage: embedded?.saveImage,
    poolStats() {
      const pool = tarnPool(orm);
      if (!pool) return undefined;
      return { used: pool.numUsed(), free: pool.numFree(), pendingAcquires: pool.numPendingAcquires(), pendingCreates: pool.numPendingCreates(), max: pool.max };
    },
    onAcquire(f) {
      const pool = tarnPool(orm);
      if (!pool) return () => {};
      // tarn numbers each acquire and names it in its request and in its success or failure.
      const asked = new Map<number, number>();
      const request = (id: number) => void asked.set(id, performance.now());
      const success = (id: number) => {
        const at = asked.get(id);
        if (at === undefined) return;
        asked.delete(id);
        f((performance.now() - at) / 1000);
      };
      const fail = (id: number) => void asked.delete(id);
      pool.on('acquireRequest', request);
      pool.on('acquireSuccess', success);
      pool.on('acquireFail', fail);
      return () => {
        pool.removeListener('acquireRequest', request);
        pool.removeListener('acquireSuccess', success);
        pool.removeListener('acquireFail', fail);
      };
    },
    async close() {
      await notifications.close();
      await orm.close(true);
      if (embedded) await embedded.stop();
    },
  };
}

/** SQLSTATE invalid_catalog_name: the database named does not exist. */
const NO_SUCH_DATABASE = '3D000';
/** SQLSTATE duplicate_database: another replica created it meanwhile. */
const DATABASE_EXISTS = '42P04';

/**
 * Connects to the database `url` names once; when it does not exist, creates it (from the
 * `postgres` maintenance database, with the same credentials) if `create`, else throws
 * MissingDatabaseError. Other connection failures are thrown as they are.
 */
async function requireDatabase(url: string, create: boolean): Promise<void> {
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    await probe.end();
    return;
  } catch (err) {
    await probe.end().catch(() => undefined);
    if ((err as { code?: unknown }).code !== NO_SUCH_DATABASE) throw err;
  }
  const name = databaseName(url);
  if (!create) throw new MissingDatabaseError(name);
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  try {
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  } catch (err) {
    if ((err as { code?: unknown }).code !== DATABASE_EXISTS) throw err;
  } finally {
    await admin.end();
  }
}

/** The database a `postgres://` URL names: its path, else (as libpq does) its user name. */
function databaseName(url: string): string {
  const u = new URL(url);
  return decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres';
}

/** Whether every migration this build knows is recorded as applied. */
async function migrated(orm: MikroORM): Promise<boolean> {
  const em = orm.em.fork();
  const table = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
  const [{ exists }] = (await em.execute('select to_regclass(?) is not null as exists', [table])) as { exists: boolean }[];
  if (!exists) return false;
  const rows = (await em.execute(`select name from ${table}`)) as { name: string }[];
  const applied = new Set(rows.map((r) => r.name));
  return MIGRATION_NAMES.every((name) => applied.has(name));
}

/** Applies the pending migrations with MikroORM's migrator, loaded now with the migrations. */
async function applyMigrations(orm: MikroORM): Promise<void> {
  const [{ Migrator }, migrationsList] = await Promise.all([import('@mikro-orm/migrations'), loadMigrations()]);
  orm.config.set('migrations', { ...orm.config.get('migrations'), migrationsList });
  await new Migrator(orm.em as unknown as EntityManager).up();
}

/**
 * Applies pending migrations, if any (a database that has them all loads no migrator). On
 * PostgreSQL the session advisory lock is held on a dedicated connection, so lock and unlock
 * cannot land on different pooled connections. PGlite has one connection and no one to race with.
 */
async function migrate(orm: MikroORM, lockUrl: string | undefined) {
  if (await migrated(orm)) return;
  if (!lockUrl) return applyMigrations(orm);
  const lock = new pg.Client({ connectionString: lockUrl });
  await lock.connect();
  try {
    // Polled rather than waited for in one statement: a replica blocked inside
    // `pg_advisory_lock` holds a snapshot, which the holder's concurrent index builds (0003)
    // would wait on, and neither would move.
    while (!(await lock.query('select pg_try_advisory_lock($1) as got', [MIGRATION_LOCK])).rows[0].got) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await applyMigrations(orm);
  } finally {
    await lock.end(); // ending the session releases the lock
  }
}

/** A service setting: the stored value, or `initial` stored now when there is none (first replica wins). */
async function setting(orm: MikroORM, name: string, initial: string): Promise<string> {
  const em = orm.em.fork();
  await em.execute('insert into service_settings (name, value) values (?, ?) on conflict (name) do nothing', [name, initial]);
  const rows = (await em.execute('select value from service_settings where name = ?', [name])) as { value: string }[];
  return rows[0].value;
}
