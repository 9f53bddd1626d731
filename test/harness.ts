import { expect } from 'vitest';
import { Code, ConnectError, createClient, createRouterTransport, type Client, type Interceptor } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { openDatabase, type Database } from '../services/store/db.js';
import { createScratchDatabase } from './databases.js';

export { createScratchDatabase };
import { principalKey, type Principal } from '../services/control-plane/auth/principal.js';
import type { Deps } from '../services/control-plane/handlers/kit.js';
import { runWrite } from '../services/store/write.js';
import type { KindName, Row } from '../services/store/kinds.js';
import { TenantIndexes } from '../services/control-plane/decision/indexes.js';
import type { GateMode } from '../services/engine/mod.js';
import { registerServices } from '../services/control-plane/services.js';
import { errorInterceptor } from '../services/control-plane/errors.js';

export type Backend = 'postgres' | 'embedded';

/**
 * The backends every handler suite runs against: real PostgreSQL when DATABASE_URL is set
 * (CI sets it), and always the embedded database.
 */
export const BACKENDS: Backend[] = process.env.DATABASE_URL ? ['postgres', 'embedded'] : ['embedded'];

/** A fresh database: a new PostgreSQL database (dropped on close) or an in-memory PGlite. */
export async function openTestDatabase(backend: Backend): Promise<Database> {
  if (backend === 'embedded') return openDatabase({ dataDir: 'memory://' });
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
    decision: { indexes: new TenantIndexes(db, { minRevisionWaitMs: 200, maxRows: options.indexMaxRows ?? 5_000_000 }), gate: options.gate ?? 'off' },
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
        router: { interceptors: [errorInterceptor(), as] },
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
