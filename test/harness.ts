import { describe, expect } from 'vitest';
import { Code, ConnectError, createClient, createRouterTransport, type Client, type Interceptor } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { openDatabase, type Database } from '../services/store/db.js';
import { startControlPlane, type ControlPlane, type InternalOptions } from '../services/control-plane/app.js';
import { loadConfig } from '../services/control-plane/config.js';
import { createLogger } from '../services/transport/observability.js';
import { createScratchDatabase } from './databases.js';

export { createScratchDatabase };
import { principalKey, type Principal } from '../services/control-plane/auth/principal.js';
import type { Deps } from '../services/control-plane/handlers/deps.js';
import { runWrite } from '../services/store/write.js';
import type { KindName, Row } from '../services/store/kinds.js';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import { PastIndexes } from '../services/control-plane/decision/past-indexes.js';
import { ControlPlaneSource } from '../services/control-plane/decision/source.js';
import type { GateMode } from '../services/engine/mod.js';
import { registerServices } from '../services/control-plane/services.js';
import { errorInterceptor } from '../services/transport/errors.js';
import { requestGuard } from '../services/transport/guard.js';

export type Backend = 'postgres' | 'embedded';

/**
 * The backends every suite that touches the store runs against: real PostgreSQL (CI sets
 * DATABASE_URL) and the embedded database. Without DATABASE_URL the PostgreSQL variants show as
 * skipped (see describeEachBackend), and the run ends with one line saying how many.
 */
export const BACKENDS: readonly Backend[] = ['postgres', 'embedded'];

/** Whether `backend` can run here: PostgreSQL needs DATABASE_URL. */
export function backendAvailable(backend: Backend): boolean {
  return backend === 'embedded' || Boolean(process.env.DATABASE_URL);
}

/**
 * `describe` once per backend, `%s` in the title naming it; a backend that cannot run here is
 * registered as skipped, so that a run without DATABASE_URL shows what it left out.
 */
export function describeEachBackend(title: string, body: (backend: Backend) => void): void;
/** The same over some backends only. */
export function describeEachBackend(title: string, backends: readonly Backend[], body: (backend: Backend) => void): void;
export function describeEachBackend(title: string, ...rest: [(backend: Backend) => void] | [readonly Backend[], (backend: Backend) => void]): void {
  const [backends, body] = rest.length === 1 ? [BACKENDS, rest[0]] : rest;
  for (const backend of backends) describe.skipIf(!backendAvailable(backend))(title.replace('%s', backend), () => body(backend));
}

/** A fresh database: a new PostgreSQL database (dropped on close) or an in-memory PGlite. */
export async function openTestDatabase(backend: Backend): Promise<Database> {
  if (backend === 'embedded') return openDatabase({ dataDir: 'memory://', embeddedImage: process.env.AUTHZ_TEST_EMBEDDED_IMAGE });
  const scratch = await createScratchDatabase(process.env.DATABASE_URL!);
  const db = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://' });
  const close = db.close.bind(db);
  db.close = async () => {
    await close();
    await scratch.drop();
  };
  return db;
}

export const PLATFORM: Principal = { keyId: 'apk_test_platform', kind: 'platform', subjectId: 'subject_test_platform' };
export const userOf = (tenantId: string): Principal => ({ keyId: 'apk_test_user', kind: 'user', tenantId, subjectId: 'subject_test_user' });
export const serviceOf = (tenantId: string): Principal => ({ keyId: 'apk_test_service', kind: 'service', tenantId, subjectId: 'subject_test_service' });

export interface TestApp {
  db: Database;
  deps: Deps;
  /** A Connect client of the real handlers, in process, calling as `principal`. */
  client<S extends DescService>(service: S, principal?: Principal): Client<S>;
  close(): Promise<void>;
}

/** Handlers over a real database, called in process (tier checks are the server's job). */
export async function createTestApp(backend: Backend, options: { gate?: GateMode; indexMaxRows?: number } = {}): Promise<TestApp> {
  const db = await openTestDatabase(backend);
  const deps: Deps = {
    db,
    decision: new ControlPlaneSource(new TenantIndexes(db, { minRevisionWaitMs: 200, maxRows: options.indexMaxRows ?? 5_000_000 }), new PastIndexes(db, { maxIndexes: 2, maxRows: 5_000_000 }), options.gate ?? 'off'),
  };
  return {
    db,
    deps,
    client(service, principal = PLATFORM) {
      const as: Interceptor = (next) => (req) => {
        req.contextValues.set(principalKey, principal);
        return next(req);
      };
      const transport = createRouterTransport((router) => registerServices(router, deps), {
        router: { interceptors: [errorInterceptor(), as, requestGuard()] },
      });
      return createClient(service, transport);
    },
    close: () => db.close(),
  };
}

/**
 * Writes a tenant and its root scope (`scope_<tenantId>`) straight to the store, so a suite
 * can start without going through TenancyService.
 */
export async function seedTenant(db: Database, id: string): Promise<{ tenantId: string; rootScopeId: string }> {
  const rootScopeId = `scope_${id}`;
  await runWrite(db, async (tx) => {
    const now = new Date();
    await tx.insert('tenant', [{ id, name: id, scopeId: rootScopeId, revision: 0, createdAt: now, createdBy: 'test' }]);
    await tx.useTenant(id);
    await tx.insert('scope', [{ id: rootScopeId, tenantId: id, name: 'root', typeId: 'scope_type_tenant', createdAt: now, createdBy: 'test' }]);
  });
  return { tenantId: id, rootScopeId };
}

/** Rows of `table` whose `column` equals `value` (to check what a write left behind). */
export async function countRows(db: Database, table: string, column: string, value: string): Promise<number> {
  const rows = (await db.orm.em.fork().execute(`select count(*) as n from ${table} where ${column} = ?`, [value])) as { n: string }[];
  return Number(rows[0].n);
}

/** Asserts that a call fails with `code` (and a message containing `text`); returns the error. */
export async function expectCode(p: Promise<unknown>, code: Code, text?: string): Promise<ConnectError> {
  let err: ConnectError | undefined;
  try {
    await p;
  } catch (e) {
    err = ConnectError.from(e);
  }
  if (!err) throw new Error(`expected the call to fail with ${Code[code]}`);
  expect(Code[err.code], err.rawMessage).toBe(Code[code]);
  if (text) expect(err.rawMessage).toContain(text);
  return err;
}

/**
 * Writes rows of one kind of a tenant straight through the store (so they reach the change
 * log), filling tenantId/createdAt/createdBy; returns the tenant's new revision.
 */
export async function seedRows(db: Database, tenantId: string, kind: KindName, rows: Row[]): Promise<number> {
  const { revision } = await runWrite(db, async (tx) => {
    await tx.useTenant(tenantId);
    await tx.insert(kind, rows.map((r) => ({ tenantId, createdAt: new Date(), createdBy: 'test', ...r })));
  });
  return revision!;
}

/** The platform key of every control plane started by startTestControlPlane. */
export const TEST_BOOTSTRAP_KEY = 'azk_test_bootstrap_secret_0123456789abcdefghij';

/**
 * A real control plane on a free port over a fresh database of `backend` (a new PostgreSQL
 * database, dropped by close(), or an in-memory embedded one), with TEST_BOOTSTRAP_KEY as its
 * platform key. `env` adds configuration variables.
 */
export async function startTestControlPlane(
  backend: Backend,
  env: Record<string, string> = {},
  internal: InternalOptions = {},
): Promise<ControlPlane & { url: string }> {
  let drop = async () => {};
  const vars: Record<string, string> = { SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY, SERVICE_DATA_DIR: 'memory://', ...env };
  // A second control plane on the same database (DATABASE_URL given): the database is not ours to drop.
  if (backend === 'postgres' && !env.DATABASE_URL) {
    const scratch = await createScratchDatabase(process.env.DATABASE_URL!);
    vars.DATABASE_URL = scratch.url;
    drop = scratch.drop;
  }
  let cp: ControlPlane;
  try {
    cp = await startControlPlane(loadConfig(vars, []), createLogger({ logLevel: 'silent' }), { embeddedImage: process.env.AUTHZ_TEST_EMBEDDED_IMAGE, ...internal });
  } catch (err) {
    await drop();
    throw err;
  }
  return {
    ...cp,
    url: cp.server.url,
    async close() {
      await cp.close();
      await drop();
    },
  };
}

/**
 * What the store holds, in a few numbers that any write changes: rows of every table, change-log
 * rows and the sum of tenant revisions (to check that a refused request wrote nothing).
 */
export async function storeDigest(db: Database): Promise<{ rows: number; changeLog: number; revisions: number }> {
  const em = db.orm.em.fork();
  const tables = (await em.execute(
    `select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name <> 'mikro_orm_migrations'`,
  )) as { t: string }[];
  const counts = (await em.execute(tables.map((x) => `select count(*)::int as n from "${x.t}"`).join(' union all '))) as { n: number }[];
  const [log] = (await em.execute('select count(*)::int as n from change_log')) as { n: number }[];
  const [rev] = (await em.execute('select coalesce(sum(revision), 0)::int as n from tenants')) as { n: number }[];
  return { rows: counts.reduce((a, c) => a + c.n, 0), changeLog: log.n, revisions: rev.n };
}

/**
 * Every tenant whose change log does not hold exactly revisions (compactedThrough, revision]
 * (each revision with at least one row, none above the tenant's; compactedThrough is 0 unless
 * the log was compacted), with what it holds; empty when all are whole.
 */
export async function revisionGaps(db: Database): Promise<{ tenantId: string; revision: number; compactedThrough: number; logged: number[] }[]> {
  const rows = (await db.orm.em.fork().execute(`
    select t.id as "tenantId", t.revision::int as revision, coalesce(h.compacted_through, 0)::int as "compactedThrough",
      coalesce((select array_agg(distinct c.revision::int order by c.revision::int) from change_log c where c.tenant_id = t.id), '{}') as logged
    from tenants t left join change_log_horizons h on h.tenant_id = t.id`)) as { tenantId: string; revision: number; compactedThrough: number; logged: number[] }[];
  return rows.filter((r) => r.logged.length !== r.revision - r.compactedThrough || r.logged.some((v, i) => v !== r.compactedThrough + i + 1));
}
