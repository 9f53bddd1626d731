import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../common/errors.js';
import type { Database } from './db.js';
import { DEFAULT_PAGE, MAX_PAGE, listPage, type Page } from './read.js';
import { runWrite } from './write.js';
import { describeEachBackend, openTestDatabase, seedTenant } from '../../test/harness.js';

/** The rejection of `p`, which must reject. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e);
}

describeEachBackend('listPage on %s', (backend) => {
  let db: Database;
  const t = 'tenant_page';
  const ids: string[] = [];
  beforeAll(async () => {
    db = await openTestDatabase(backend);
    await seedTenant(db, t);
    await seedTenant(db, 'tenant_other');
    const row = (tenantId: string, id: string) => ({ id, tenantId, type: 'user', externalId: id, metadata: null, createdAt: new Date(), createdBy: 'test' });
    // 1200 subjects of the tenant, inserted out of id order, plus another tenant's in between.
    for (let i = 0; i < 1200; i++) ids.push(`subject_${String((i * 7919) % 1200).padStart(4, '0')}`);
    await runWrite(db, async (tx) => {
      await tx.useTenant(t);
      for (let i = 0; i < ids.length; i += 400) await tx.insert('subject', ids.slice(i, i + 400).map((id) => row(t, id)));
    });
    await runWrite(db, async (tx) => {
      await tx.useTenant('tenant_other');
      await tx.insert('subject', ['subject_0100x', 'subject_0200x', 'subject_9999'].map((id) => row('tenant_other', id)));
    });
    ids.sort();
    // A tenant of exactly 250 subjects.
    await seedTenant(db, 't250');
    await runWrite(db, async (tx) => {
      await tx.useTenant('t250');
      await tx.insert('subject', Array.from({ length: 250 }, (_, i) => row('t250', `subject_q${String((i * 101) % 250).padStart(3, '0')}`)));
    });
  });
  afterAll(() => db?.close());

  const page = (p: Page, where: Record<string, unknown> = { tenantId: t }) => listPage(db.orm.em.fork(), db.cursors, 'subject', where, p);
  /** The signed cursor listPage issues after `lastId` for that filter, and its inverse. */
  const encodeCursor = (lastId: string, where: Record<string, unknown> = { tenantId: t }) => db.cursors.encode(`subject ${JSON.stringify(where)}`, lastId);
  const decodeCursor = (cursor: string, where: Record<string, unknown> = { tenantId: t }) => db.cursors.decode(`subject ${JSON.stringify(where)}`, cursor);
  const idsOf = (r: { rows: Record<string, unknown>[] }) => r.rows.map((x) => x.id as string);

  it(`defaults to ${DEFAULT_PAGE} rows (limit absent or 0) and allows up to ${MAX_PAGE}`, async () => {
    for (const p of [{}, { limit: 0 }, { limit: undefined }]) {
      const r = await page(p);
      expect(idsOf(r)).toEqual(ids.slice(0, DEFAULT_PAGE));
      expect(r.nextCursor).not.toBe('');
    }
    const max = await page({ limit: MAX_PAGE });
    expect(idsOf(max)).toEqual(ids.slice(0, MAX_PAGE));
    const one = await page({ limit: 1 });
    expect(idsOf(one)).toEqual([ids[0]]);
    expect(decodeCursor(one.nextCursor)).toBe(ids[0]);
    // Rows of other tenants never show up, however the ids interleave.
    expect(idsOf(max).every((id) => !id.endsWith('x'))).toBe(true);
  });

  it('rejects a bad limit as invalid, naming limit', async () => {
    for (const limit of [MAX_PAGE + 1, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e9]) {
      const err = await rejection(page({ limit }));
      expect(err, `limit ${limit}`).toBeInstanceOf(DomainError);
      expect(err).toMatchObject({ kind: 'invalid', field: 'limit' });
      expect((err as Error).message).toContain('limit');
    }
  });

  it('walks 250 rows in 3 pages with no overlap or gap, and the last page has no cursor', async () => {
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 10; n++) {
      const r = await page({ limit: 100, cursor }, { tenantId: 't250' });
      seen.push(...idsOf(r));
      sizes.push(r.rows.length);
      if (!r.nextCursor) break;
      cursor = r.nextCursor;
      expect(decodeCursor(cursor, { tenantId: 't250' })).toBe(seen[seen.length - 1]);
    }
    expect(sizes).toEqual([100, 100, 50]);
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => `subject_q${String(i).padStart(3, '0')}`));
  });

  it('keeps the caller\'s own id condition under a cursor; exact and MAX_PAGE pages; empty cursor', async () => {
    const first250 = ids.slice(0, 250);
    const where = { tenantId: t, id: { $lte: first250[249] } };
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 10; n++) {
      const r = await page({ limit: 100, cursor }, where);
      seen.push(...idsOf(r));
      if (!r.nextCursor) break;
      cursor = r.nextCursor;
    }
    expect(seen).toEqual(first250);
    // Exactly a full last page: still no cursor after it.
    const r = await page({ limit: 50, cursor: encodeCursor(ids[199], where) }, where);
    expect(idsOf(r)).toEqual(ids.slice(200, 250));
    expect(r.nextCursor).toBe('');
    // The whole tenant, by MAX_PAGE: two pages, 1200 rows, in order.
    const a = await page({ limit: MAX_PAGE });
    const b = await page({ limit: MAX_PAGE, cursor: a.nextCursor });
    expect([...idsOf(a), ...idsOf(b)]).toEqual(ids);
    expect(b.nextCursor).toBe('');
    // No filter at all (every tenant's rows) pages too.
    const any = await page({ limit: 3, cursor: encodeCursor('subject_0099', {}) }, {});
    expect(idsOf(any)).toEqual(['subject_0100', 'subject_0100x', 'subject_0101']);
    // An empty cursor is the first page.
    expect(idsOf(await page({ limit: 3, cursor: '' }))).toEqual(ids.slice(0, 3));
  });

  it('rejects a forged cursor, or one of another listing, as invalid, naming cursor', async () => {
    const good = (await page({ limit: 5 })).nextCursor;
    const [position, mac] = good.split('.');
    const forged = [
      Buffer.from(ids[10]).toString('base64url'), // an id alone, unsigned (the old format)
      `${Buffer.from(ids[500]).toString('base64url')}.${mac}`, // another position under a real MAC
      `${position}.${Buffer.alloc(16).toString('base64url')}`, // the right position, a made-up MAC
      (await page({ limit: 5 }, { tenantId: 'tenant_other' })).nextCursor || encodeCursor(ids[4], { tenantId: 'tenant_other' }), // another filter's
      (await page({ limit: 5 }, {})).nextCursor, // no filter: would page over every tenant

      'not a cursor!', '%%%', `${good}=`, `${good}.`, Buffer.from('subject_a?').toString('base64'), // padding / alphabet
      'AAAA', // decodes to NUL bytes, which PostgreSQL refuses as text
      Buffer.from('\u0001subject').toString('base64url'),
      Buffer.from([0xff, 0xfe, 0x41]).toString('base64url'), // not UTF-8
    ];
    for (const cursor of forged) {
      const err = await rejection(page({ cursor }));
      expect(err, `cursor ${JSON.stringify(cursor)}`).toBeInstanceOf(DomainError);
      expect(err).toMatchObject({ kind: 'invalid', field: 'cursor' });
    }
    // The database is still fine after all that.
    expect(await db.ping()).toBe(true);
    expect(idsOf(await page({ limit: 5, cursor: good }))).toEqual(ids.slice(5, 10));
  });
});
