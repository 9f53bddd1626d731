/**
 * Many tenants building their indexes at once must not take every pool connection: a tenant
 * already indexed may still need the database (a scope not seen yet, a catch-up after a write),
 * and it must not wait behind other tenants' builds. Builds are held on a table lock here, so
 * the figures are counts (builds holding a connection), not times.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, seedRows, seedTenant } from '../../../test/harness.js';
import type { Database } from '../../store/db.js';
import { TenantIndexes } from './indexes.js';

const MAX_BUILDS = 4;
/** More cold tenants than the pool (10) has connections. */
const COLD = 12;

describe.skipIf(!process.env.DATABASE_URL)('index builds at once (postgres)', () => {
  let db: Database;
  beforeAll(async () => {
    db = await openTestDatabase('postgres');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('leaves pool connections to tenants already indexed while others build', async () => {
    const ids: string[] = [];
    for (let i = 0; i <= COLD; i++) ids.push((await seedTenant(db, `tenant_builds_${i}`)).tenantId);
    const [cached, ...cold] = ids;
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: 1000, maxRows: 1e9, maxBuilds: MAX_BUILDS });
    await indexes.get(cached);
    // A write the cached tenant's index must catch up with, and a scope of it not seen yet.
    const revision = await seedRows(db, cached, 'scope', [{ id: 'scope_builds_team', name: 'team', typeId: 'scope_type_tenant', parentId: `scope_${cached}` }]);

    const url = db.orm.config.get('clientUrl') as string;
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    try {
      // Every build stops at tag bindings, holding its connection, until the lock goes.
      await locker.query('begin');
      await locker.query('lock table tag_bindings in access exclusive mode');
      const builds = cold.map((t) => indexes.get(t));
      // pg_locks, not pg_stat_activity: the latter is read once per transaction.
      const blocked = async () => Number((await locker.query(
        `select count(*) as n from pg_locks where relation = 'tag_bindings'::regclass and not granted`,
      )).rows[0].n);
      for (let i = 0; i < 200 && (await blocked()) < MAX_BUILDS; i++) await new Promise((r) => setTimeout(r, 25));
      expect(indexes.builds()).toEqual({ running: MAX_BUILDS, waiting: COLD - MAX_BUILDS });

      // The cached tenant is answered while the builds wait (a pool without a free connection
      // would hold these until the lock goes: the race would then end on 'blocked').
      const answered = Promise.all([indexes.tenantOfScope('scope_builds_team'), indexes.get(cached, revision)]).then(() => 'answered');
      const outcome = await Promise.race([answered, new Promise((r) => setTimeout(() => r('blocked'), 10_000))]);
      expect(outcome).toBe('answered');
      expect(await blocked()).toBe(MAX_BUILDS);

      await locker.query('commit');
      const built = await Promise.all(builds);
      expect(built.map((i) => i.revision)).toEqual(cold.map(() => 1));
      expect(indexes.stats().tenants).toBe(COLD + 1);
      expect(indexes.builds()).toEqual({ running: 0, waiting: 0 });
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await locker.end();
    }
  }, 60_000);
});
