import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { DomainError } from '../common/errors.js';
import type { Database } from './db.js';
import { CHANGE_CHANNEL, runWrite } from './write.js';
import { changeLogData, type Row } from './kinds.js';
import { describeEachBackend, openTestDatabase } from '../../test/harness.js';

/** The rejection of `p`, which must reject. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e);
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

interface LogRow { revision: number; seq: number; op: string; kind: string; entity_id: string; data: Record<string, unknown> | null }

describeEachBackend('store writes on %s', (backend) => {
  let db: Database;
  beforeAll(async () => { db = await openTestDatabase(backend); });
  afterAll(() => db?.close());

  const q = async <T = Record<string, unknown>>(sql: string, params: unknown[] = []) =>
    (await db.orm.em.fork().execute(sql, params)) as T[];
  const revisionOf = async (tenantId: string) =>
    Number((await q<{ revision: string }>('select revision from tenants where id = ?', [tenantId]))[0].revision);
  /** The change log of a tenant as its readers see it: `data` in proto JSON form (changeLogData). */
  const rawLogOf = async (tenantId: string) =>
    (await q<LogRow>('select revision::int as revision, seq, op, kind, entity_id, data from change_log where tenant_id = ? order by revision, seq', [tenantId]));
  const logOf = async (tenantId: string) =>
    (await rawLogOf(tenantId)).map((r) => ({ ...r, data: r.data ? changeLogData(r.kind, r.data as Row) : r.data }) as LogRow);
  const countWhere = async (table: string, column: string, value: string) =>
    Number((await q<{ n: string }>(`select count(*) as n from ${table} where ${column} = ?`, [value]))[0].n);

  /** A tenant at revision 0 without a change log (tenant rows themselves are global). */
  async function freshTenant(id: string) {
    const r = await runWrite(db, (tx) => tx.insert('tenant', [{ id, name: id, scopeId: `scope_${id}`, revision: 0, createdAt: new Date(), createdBy: 'test' }]));
    expect(r.revision).toBeUndefined();
    expect(await revisionOf(id)).toBe(0);
  }
  const subject = (tenantId: string, id: string, metadata: Record<string, unknown> | null = null) =>
    ({ id, tenantId, type: 'user', externalId: id, metadata, createdAt: new Date('2024-05-06T07:08:09.123Z'), createdBy: 'test' });

  it('runs on a database migrated once: one migration, the four built-in scope types once', async () => {
    expect(db.backend).toBe(backend);
    expect(await q('select name from mikro_orm_migrations order by name')).toEqual([{ name: '0001-initial' }, { name: '0002-service-settings' }, { name: '0003-change-log-retention' }, { name: '0004-key-notify' }, { name: '0005-imports' }, { name: '0006-revision-writers' }, { name: '0007-sessions' }]);
    expect(await q('select id, name from scope_types order by name')).toEqual(
      ['environment', 'project', 'tenant', 'workspace'].map((n) => ({ id: `scope_type_${n}`, name: n })),
    );
  });

  it('concurrent writers on one tenant get revisions 1..N in commit order, each matching its change-log rows', async () => {
    const t = 'tenant_conc';
    await freshTenant(t);
    const N = 16;

    // A reader observing the tenant's revision and its change log in one statement (one snapshot)
    // while the writers run. On PostgreSQL it has its own connection; PGlite has one connection.
    const sql = `select t.revision::int as rev,
      (select coalesce(array_agg(r order by r), '{}') from (select distinct revision::int as r from change_log where tenant_id = t.id) s) as revs
      from tenants t where t.id = ?`;
    let observe: () => Promise<{ rev: number; revs: number[] }>;
    let reader: pg.Client | undefined;
    if (backend === 'postgres') {
      reader = new pg.Client({ connectionString: db.orm.config.get('clientUrl') });
      await reader.connect();
      const c = reader;
      observe = async () => (await c.query(sql.replace('?', '$1'), [t])).rows[0];
    } else {
      observe = async () => (await q<{ rev: number; revs: number[] }>(sql, [t]))[0];
    }
    const observations: { rev: number; revs: number[] }[] = [];
    let writing = true;
    const polling = (async () => {
      while (writing) observations.push(await observe());
      observations.push(await observe());
    })();

    const resolved: number[] = [];
    const results = await Promise.all(Array.from({ length: N }, async (_, i) => {
      await sleep((i * 5) % 23); // arrive in a shuffled order, spread over some 20 ms
      const r = await runWrite(db, async (tx) => {
        await tx.useTenant(t);
        await sleep((i * 7) % 5); // hold the tenant row lock so the others queue on it
        const ids = Array.from({ length: (i % 3) + 1 }, (_, j) => `subject_c${i}_${j}`);
        await tx.insert('subject', ids.slice(0, 1).map((id) => subject(t, id)));
        await tx.insert('subject', ids.slice(1).map((id) => subject(t, id)));
        return ids;
      });
      resolved.push(r.revision!);
      return r;
    }));
    writing = false;
    await polling;
    await reader?.end();

    const all = Array.from({ length: N }, (_, i) => i + 1);
    expect(results.map((r) => r.tenantId)).toEqual(results.map(() => t));
    expect(results.map((r) => r.revision!).sort((a, b) => a - b)).toEqual(all);
    expect(await revisionOf(t)).toBe(N);
    // A writer's commit returns after the previous revision's (it waited on the row lock).
    expect(resolved).toEqual(all);

    const log = await logOf(t);
    expect(log).toHaveLength(results.reduce((n, r) => n + r.result.length, 0));
    for (const r of results) {
      const mine = log.filter((e) => e.revision === r.revision);
      expect(mine.map((e) => e.entity_id)).toEqual(r.result);
      expect(mine.map((e) => e.seq)).toEqual(r.result.map((_, j) => j));
      for (const e of mine) expect(e).toMatchObject({ op: 'upsert', kind: 'subject', data: { id: e.entity_id, tenantId: t } });
    }

    // Every snapshot the reader saw: the change log holds exactly revisions 1..rev (never k+1
    // before k, never a revision the tenant row does not show), and time only moves forward.
    expect(observations.length).toBeGreaterThan(2);
    let last = 0;
    for (const o of observations) {
      expect(o.revs).toEqual(Array.from({ length: o.rev }, (_, i) => i + 1));
      expect(o.rev).toBeGreaterThanOrEqual(last);
      last = o.rev;
    }
    expect(last).toBe(N);
    // PostgreSQL's reader has its own connection and sees the writes in flight (PGlite's one
    // connection serialises everything, so there it may only see a state or two in between).
    if (backend === 'postgres') expect(new Set(observations.map((o) => o.rev)).size).toBeGreaterThan(N / 2);
  });

  it('a failing transaction leaves no rows, no change log and does not consume a revision', async () => {
    const t = 'tenant_fail';
    await freshTenant(t);
    const ok = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', [subject(t, 'subject_f0')]); });
    expect(ok.revision).toBe(1);

    const boom = await rejection(runWrite(db, async (tx) => {
      await tx.useTenant(t);
      await tx.insert('subject', [subject(t, 'subject_f1'), subject(t, 'subject_f2')]);
      await tx.delete('subject', ['subject_f0']);
      throw new Error('boom');
    }));
    expect((boom as Error).message).toBe('boom');
    // A database error part way (a duplicate id) rolls back the earlier statements too.
    const dup = await rejection(runWrite(db, async (tx) => {
      await tx.useTenant(t);
      await tx.insert('subject', [subject(t, 'subject_f3')]);
      await tx.insert('subject', [subject(t, 'subject_f0')]);
    }));
    expect(dup).toBeInstanceOf(Error);

    expect(await revisionOf(t)).toBe(1);
    for (const id of ['subject_f1', 'subject_f2', 'subject_f3']) expect(await countWhere('subjects', 'id', id)).toBe(0);
    expect(await countWhere('subjects', 'id', 'subject_f0')).toBe(1);
    expect((await logOf(t)).map((e) => [e.revision, e.entity_id])).toEqual([[1, 'subject_f0']]);

    const next = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', [subject(t, 'subject_f4')]); });
    expect(next.revision).toBe(2);
    expect((await logOf(t)).map((e) => [e.revision, e.seq, e.entity_id])).toEqual([[1, 0, 'subject_f0'], [2, 0, 'subject_f4']]);
  });

  it('a transaction that enters a tenant and changes nothing consumes no revision and logs nothing', async () => {
    const t = 'tenant_noop';
    await freshTenant(t);
    const first = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', [subject(t, 'subject_noop')]); });
    expect(first.revision).toBe(1);
    for (let i = 0; i < 3; i++) {
      const noop = await runWrite(db, async (tx) => { await tx.useTenant(t); });
      // The answer reports the revision the tenant is at: the caller's (empty) write is in it.
      expect(noop).toMatchObject({ tenantId: t, revision: 1 });
    }
    expect(await revisionOf(t)).toBe(1);
    const next = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.delete('subject', ['subject_noop']); });
    expect(next.revision).toBe(2);
    expect((await logOf(t)).map((e) => [e.revision, e.op])).toEqual([[1, 'upsert'], [2, 'delete']]);
  });

  it('entering a tenant waits for its other writer, so reads after entering see that writer\'s commit', async () => {
    const t = 'tenant_lockfirst';
    await freshTenant(t);
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let entered!: () => void;
    const firstEntered = new Promise<void>((r) => { entered = r; });
    const first = runWrite(db, async (tx) => {
      await tx.useTenant(t);
      entered();
      await held;
      await tx.insert('subject', [subject(t, 'subject_lf_1')]);
    });
    await firstEntered;
    const second = runWrite(db, async (tx) => {
      await tx.useTenant(t);
      // Read after entering: the first writer has committed by now.
      return Number((await tx.em.execute<{ n: string }[]>('select count(*) as n from subjects where tenant_id = ?', [t]))[0].n);
    });
    await sleep(50);
    release();
    expect((await first).revision).toBe(1);
    const seen = await second;
    expect(seen.result).toBe(1);
    expect(seen.revision).toBe(1);
  });

  it('a transaction touching a second tenant is refused and writes nothing', async () => {
    await freshTenant('tenant_x');
    await freshTenant('tenant_y');
    const err = await rejection(runWrite(db, async (tx) => {
      await tx.useTenant('tenant_x');
      await tx.insert('subject', [subject('tenant_x', 'subject_x1')]);
      await tx.useTenant('tenant_y', 'items[1].tenantId');
      await tx.insert('subject', [subject('tenant_y', 'subject_y1')]);
    }));
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ kind: 'invalid', field: 'items[1].tenantId' });

    // Nor may it then create a tenant (useNewTenant) once it has entered an existing one.
    const err2 = await rejection(runWrite(db, async (tx) => {
      await tx.useTenant('tenant_x');
      await tx.insert('subject', [subject('tenant_x', 'subject_x2')]);
      await tx.insert('tenant', [{ id: 'tenant_z', name: 'z', scopeId: 'scope_tenant_z', revision: 0, createdAt: new Date(), createdBy: 'test' }]);
      await tx.useNewTenant('tenant_z');
    }));
    expect(err2).toMatchObject({ kind: 'invalid', field: 'id' });
    // An unknown tenant is not_found, and nothing is written either.
    const err3 = await rejection(runWrite(db, async (tx) => { await tx.useTenant('tenant_nope'); }));
    expect(err3).toMatchObject({ kind: 'not_found' });

    expect(await revisionOf('tenant_x')).toBe(0);
    expect(await revisionOf('tenant_y')).toBe(0);
    expect(await countWhere('tenants', 'id', 'tenant_z')).toBe(0);
    for (const id of ['subject_x1', 'subject_x2', 'subject_y1']) expect(await countWhere('subjects', 'id', id)).toBe(0);
    expect(await logOf('tenant_x')).toEqual([]);
    expect(await logOf('tenant_y')).toEqual([]);
  });

  it('updates and deletes reach the change log with op, kind, id and proto JSON data', async () => {
    const t = 'tenant_ud';
    await freshTenant(t);
    const a = subject(t, 'subject_ud_a', { dept: 'eng', level: 3 });
    const b = subject(t, 'subject_ud_b');
    const created = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', [a, b]); });
    const updated = await runWrite(db, async (tx) => {
      await tx.useTenant(t);
      await tx.update('subject', a, { metadata: { dept: 'ops' }, externalId: 'alice' });
    });
    const deleted = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.delete('subject', ['subject_ud_b', 'subject_ud_a']); });
    expect([created.revision, updated.revision, deleted.revision]).toEqual([1, 2, 3]);

    const log = await logOf(t);
    expect(log.map((e) => [e.revision, e.seq, e.op, e.kind, e.entity_id])).toEqual([
      [1, 0, 'upsert', 'subject', 'subject_ud_a'],
      [1, 1, 'upsert', 'subject', 'subject_ud_b'],
      [2, 0, 'upsert', 'subject', 'subject_ud_a'],
      [3, 0, 'delete', 'subject', 'subject_ud_b'],
      [3, 1, 'delete', 'subject', 'subject_ud_a'],
    ]);
    // The full message in proto JSON form: camelCase keys, ISO 8601 timestamps, the new values.
    expect(log[0].data).toEqual({
      id: 'subject_ud_a', tenantId: t, type: 'user', externalId: 'subject_ud_a',
      metadata: { dept: 'eng', level: 3 }, createdAt: '2024-05-06T07:08:09.123Z', createdBy: 'test',
    });
    expect(log[2].data).toEqual({
      id: 'subject_ud_a', tenantId: t, type: 'user', externalId: 'alice',
      metadata: { dept: 'ops' }, createdAt: '2024-05-06T07:08:09.123Z', createdBy: 'test',
    });
    for (const e of log.slice(0, 3)) {
      expect(Object.keys(e.data!).filter((k) => k.includes('_'))).toEqual([]);
      expect(e.data!.createdAt).toMatch(ISO);
    }
    expect(log[3].data).toBeNull();
    expect(log[4].data).toBeNull();
    // The update and the deletes really happened.
    expect(await countWhere('subjects', 'tenant_id', t)).toBe(0);
  });

  it('copy writes the rows and change-log entries insert writes, COPY text escapes and all, in one revision', async () => {
    const t = 'tenant_copy';
    await freshTenant(t);
    const awkward = 'tab\there\nnew line\r\\ back\\slash "quote" \\N é 😀';
    const rows = (prefix: string) => [
      subject(t, `subject_${prefix}1`, { note: awkward, list: [1, null, { deep: '\\t' }] }),
      { ...subject(t, `subject_${prefix}2`), externalId: awkward },
      subject(t, `subject_${prefix}3`, null),
    ];
    const inserted = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', rows('i')); });
    const copied = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.copy('subject', rows('c')); await tx.copy('subject', []); });
    expect(copied.revision).toBe(inserted.revision! + 1);
    const stored = await q<Row>("select id, tenant_id, type, external_id, metadata, created_at, created_by from subjects where tenant_id = ? order by id", [t]);
    // The two sets alike but for their ids (and the external ids made from them).
    const alike = (x: unknown, prefix: string) => JSON.parse(JSON.stringify(x).replaceAll(`subject_${prefix}`, 'subject_')) as Row[];
    const byPrefix = (prefix: string) => alike(stored.filter((r) => (r.id as string).startsWith(`subject_${prefix}`)), prefix);
    expect(byPrefix('c')).toEqual(byPrefix('i'));
    expect(byPrefix('c')[1]).toMatchObject({ external_id: awkward });
    expect(byPrefix('c')[0]).toMatchObject({ metadata: { note: awkward, list: [1, null, { deep: '\\t' }] } });
    const log = await rawLogOf(t);
    const entries = (revision: number, prefix: string) => alike(log.filter((r) => r.revision === revision).map((r) => ({ ...r, revision: 0 })), prefix);
    expect(entries(copied.revision!, 'c')).toEqual(entries(inserted.revision!, 'i'));
    expect(entries(copied.revision!, 'c').map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(await logOf(t)).toHaveLength(6);
  });

  it('a policy change carries its timestamps in ISO form and its JSON fields as JSON', async () => {
    const t = 'tenant_pol';
    await freshTenant(t);
    await runWrite(db, async (tx) => {
      await tx.useTenant(t);
      const base = { tenantId: t, createdAt: new Date('2024-01-02T03:04:05.000Z'), createdBy: 'test' };
      await tx.insert('scope', [{ ...base, id: `scope_${t}`, name: 'root', typeId: 'scope_type_tenant', parentId: null }]);
      await tx.insert('policy', [{
        ...base, id: 'policy_p1', scopeId: `scope_${t}`, target: { kind: 'resource', resourceId: 'resource_r1' }, targetId: 'resource_r1',
        actions: ['read'], effect: 'allow', priority: 5, subjectCondition: null, contextCondition: { '==': [1, 1] },
        validFrom: new Date('2025-01-01T00:00:00.000Z'), validUntil: null,
      }]);
    });
    const [scope, policy] = await logOf(t);
    expect(scope).toMatchObject({ kind: 'scope', data: { id: `scope_${t}`, tenantId: t, typeId: 'scope_type_tenant', createdAt: '2024-01-02T03:04:05Z' } });
    expect(policy.kind).toBe('policy');
    expect(policy.data).toMatchObject({
      id: 'policy_p1', tenantId: t, scopeId: `scope_${t}`, target: { kind: 'resource', resourceId: 'resource_r1' }, actions: ['read'], effect: 'allow', priority: 5,
      contextCondition: { '==': [1, 1] }, validFrom: '2025-01-01T00:00:00Z', createdAt: '2024-01-02T03:04:05Z',
    });
    expect(policy.data).not.toHaveProperty('valid_from');
    expect(policy.data).not.toHaveProperty('validUntil');
    // Stored as the store row (written once, converted by readers).
    const [, stored] = await rawLogOf(t);
    expect(stored.data).toMatchObject({ id: 'policy_p1', targetId: 'resource_r1', validFrom: '2025-01-01T00:00:00.000Z', validUntil: null });
  });

  it.skipIf(backend !== 'postgres')('NOTIFY: a listener gets <tenantId>:<revision> after commit, nothing for a rollback', async () => {
    const t = 'tenant_notify';
    await freshTenant(t);
    const listener = new pg.Client({ connectionString: db.orm.config.get('clientUrl') });
    await listener.connect();
    const checker = new pg.Client({ connectionString: db.orm.config.get('clientUrl') });
    await checker.connect();
    try {
      const got: { payload: string; committed: number }[] = [];
      const waiters: (() => void)[] = [];
      listener.on('notification', (n) => {
        if (n.channel !== CHANGE_CHANNEL) return;
        // The change log of that revision must already be visible to another session.
        const [tenantId, revision] = (n.payload ?? '').split(':');
        void checker.query('select count(*)::int as n from change_log where tenant_id = $1 and revision = $2', [tenantId, revision])
          .then((r) => { got.push({ payload: n.payload ?? '', committed: r.rows[0].n }); waiters.shift()?.(); });
      });
      await listener.query(`listen ${CHANGE_CHANNEL}`);
      const next = () => new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no notification within 5 s')), 5000);
        waiters.push(() => { clearTimeout(timer); resolve(); });
      });

      let arrived = next();
      const first = await runWrite(db, async (tx) => {
        await tx.useTenant(t);
        await tx.insert('subject', [subject(t, 'subject_n1')]);
      });
      await arrived;
      expect(got).toEqual([{ payload: `${t}:${first.revision}`, committed: 1 }]);

      expect(await rejection(runWrite(db, async (tx) => {
        await tx.useTenant(t);
        await tx.insert('subject', [subject(t, 'subject_n2')]);
        throw new Error('roll back');
      }))).toBeInstanceOf(Error);
      // Notifications arrive in commit order: the next one is the marker's, not the rollback's.
      arrived = next();
      const marker = await runWrite(db, async (tx) => { await tx.useTenant(t); await tx.insert('subject', [subject(t, 'subject_n3')]); });
      await arrived;
      await sleep(50);
      expect(marker.revision).toBe(first.revision! + 1);
      expect(got).toEqual([
        { payload: `${t}:${first.revision}`, committed: 1 },
        { payload: `${t}:${marker.revision}`, committed: 1 },
      ]);
    } finally {
      await listener.end();
      await checker.end();
    }
  });
});
