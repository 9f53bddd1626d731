/**
 * The decision indexes' row budget (SERVICE_INDEX_MAX_ROWS): least recently used tenants are
 * dropped once the rows held pass it, whichever way a tenant was used last, and an index that
 * grows by catching up counts its new rows at its next use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, seedRows, seedTenant } from '../../../test/harness.js';
import type { Database } from '../../store/db.js';
import { TenantIndexes } from './indexes.js';

describe('decision indexes within their row budget', () => {
  let db: Database;
  const tenants: string[] = [];
  /** Rows of one seeded tenant's index. */
  let perTenant = 0;
  beforeAll(async () => {
    db = await openTestDatabase('embedded');
    for (const name of ['tenant_budget_a', 'tenant_budget_b', 'tenant_budget_c']) tenants.push((await seedTenant(db, name)).tenantId);
    const probe = new TenantIndexes(db, { minRevisionWaitMs: 1000, maxRows: 1e9 });
    await probe.get(tenants[0]);
    perTenant = probe.stats().rows;
  });
  afterAll(async () => {
    await db?.close();
  });

  it('drops the least recently used tenant, counting a tenant used again and again as recent', async () => {
    const [a, b, c] = tenants;
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: 1000, maxRows: 2 * perTenant });
    await indexes.get(b);
    await indexes.get(a);
    for (let i = 0; i < 5; i++) await indexes.get(a);
    expect(indexes.stats()).toEqual({ tenants: 2, rows: 2 * perTenant });
    // b was used before a: c's index takes b's place.
    await indexes.get(c);
    expect(indexes.evictions).toBe(1);
    expect(tenants.map((t) => indexes.holds(t))).toEqual([true, false, true]);

    // Held: a, then c (most recent). a used again moves ahead of c, so b's index takes c's place.
    await indexes.get(a);
    await indexes.get(b);
    expect(indexes.evictions).toBe(2);
    expect(tenants.map((t) => indexes.holds(t))).toEqual([true, true, false]);
    // Held: a, then b. a used by readyFor (the decision path's way) moves ahead too: c takes b's place.
    for (const t of tenants) await indexes.tenantOfScope(`scope_${t}`);
    expect(indexes.readyFor(`scope_${a}`, 0)?.tenantId).toBe(a);
    await indexes.get(c);
    expect(indexes.evictions).toBe(3);
    expect(tenants.map((t) => indexes.holds(t))).toEqual([true, false, true]);
    expect(indexes.stats()).toEqual({ tenants: 2, rows: 2 * perTenant });
  });

  it('counts the rows an index gained by catching up at its next use, and drops others to stay within the budget', async () => {
    const [, b, c] = tenants;
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: 1000, maxRows: 2 * perTenant + 1 });
    await indexes.get(b);
    await indexes.get(c);
    await indexes.get(c);
    expect(indexes.stats().tenants).toBe(2);
    // c, the tenant used last, grows by two rows: both no longer fit.
    const revision = await seedRows(db, c, 'scope', [1, 2].map((i) => ({ id: `scope_budget_grow_${i}`, name: `grow ${i}`, typeId: 'scope_type_tenant', parentId: `scope_${c}` })));
    expect((await indexes.get(c, revision)).revision).toBe(revision);
    expect(indexes.stats()).toEqual({ tenants: 1, rows: perTenant + 2 });
    expect(indexes.evictions).toBe(1);
    expect([indexes.holds(b), indexes.holds(c)]).toEqual([false, true]);
  });
});
