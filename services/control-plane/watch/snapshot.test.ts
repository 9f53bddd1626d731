/**
 * The snapshot's plain-SQL batches give exactly the proto JSON the ORM route gave (em.find, then
 * messageToChangeData), byte for byte, over every engine kind: rows made through the API and
 * rows written straight into the tables with nulls, empty and nested JSON, whole-second and
 * millisecond timestamps, dates far in the past and future.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { DriverException } from '@mikro-orm/core';
import { EntitySchema, SnapshotChunkSchema, WatchResponseSchema, type SnapshotChunk } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { ENTITY_KINDS, type EntityKind } from '../../engine/mod.js';
import { KINDS, changeDataOfText, changeDataText, messageToChangeData, type KindDef, type Row } from '../../store/kinds.js';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';
import { tenantRows, type RowColumns } from '../../store/tenant-rows.js';
import { ENGINE_STORE_KINDS, STORE_KIND } from '../engine-kinds.js';
import { ChunkEntities, chunkBytes, fieldsOfKind, rowEntity, snapshotChunks } from './snapshot.js';
import { populate, restClient } from '../../../test/watch-fixtures.js';

/** A JSON value with its objects' keys sorted, to compare rows whatever their key order. */
const sortKeys = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(sortKeys) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])])) : v;
type CP = Awaited<ReturnType<typeof startTestControlPlane>>;

describeEachBackend('Watch snapshot rows (%s)', (backend) => {
  let cp: CP;
  let tenantId: string;

  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
    const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
    const w = await populate(rest, 'rows');
    tenantId = w.tenantId;
    const role = (await rest('POST', '/roles', { scopeId: w.scopeId, key: 'owner', name: 'Owner', description: 'owns ✓' })).id;
    const em = cp.db.orm.em.fork();
    const t = tenantId;
    const base = (id: string, at: string) => [id, t, at, 'test'];
    const sql = async (text: string, ...params: unknown[]) => em.execute(text, params);
    // Rows the API would not write in these shapes: nulls, empty JSON, odd timestamps.
    await sql(`insert into resources values (?, ?, ?, ?, ?, ?, 'raw-null', null, null), (?, ?, ?, ?, ?, ?, 'raw-empty', '', '{}'),
      (?, ?, ?, ?, ?, ?, 'raw-nested', 'Ünïcode "quoted" \\ name', ?::jsonb), (?, ?, ?, ?, ?, ?, 'raw-huge', null, ?::jsonb)`,
    ...base('resource_raw_1', '2026-01-01T00:00:00Z'), w.typeId, w.scopeId,
    ...base('resource_raw_2', '1999-12-31T23:59:59.999Z'), w.typeId, w.scopeId,
    ...base('resource_raw_3', '0001-01-01T00:00:00.001Z'), w.typeId, w.scopeId,
    JSON.stringify({ n: 1.5, big: 1e21, neg: -0.25, list: [1, 'two', null, { deep: [true, false] }], emoji: '😀', esc: 'a\u0001b', empty: {}, none: [] }),
    // A number no double holds (JSON.parse: Infinity; the JSON route writes null).
    ...base('resource_raw_4', '2026-01-01T00:00:00Z'), w.typeId, w.scopeId, `{"huge": 1${'0'.repeat(400)}, "n": 1}`);
    await sql(`insert into subjects values (?, ?, ?, ?, 'user', 'null-meta', null), (?, ?, ?, ?, 'service', 'empty-meta', '{}')`,
      ...base('subject_raw_1', '2026-06-30T12:34:56.7Z'), ...base('subject_raw_2', '9999-12-31T23:59:59.999Z'));
    await sql(`insert into ownership_grants values (?, ?, ?, ?, ?, ?, ?)`, ...base('ownership_grant_raw_1', '2026-02-03T04:05:06.078Z'), 'subject_raw_1', 'resource_raw_1', role);
    await sql(`insert into scope_overrides values (?, ?, ?, ?, ?, ?, 'deny', null), (?, ?, ?, ?, ?, ?, 'allow', '["a","b"]')`,
      ...base('scope_override_raw_1', '2026-01-01T00:00:00Z'), w.scopeId, role, ...base('scope_override_raw_2', '2026-01-01T00:00:00.5Z'), w.scopeId, role);
    await sql(`insert into resource_edges values (?, ?, ?, ?, 'resource_raw_1', 'resource_raw_2', null, 'none'), (?, ?, ?, ?, 'resource_raw_1', 'resource_raw_3', 'child', 'delete')`,
      ...base('resource_edge_raw_1', '2026-01-01T00:00:00Z'), ...base('resource_edge_raw_2', '2026-01-01T00:00:00Z'));
    await sql(`insert into resource_scope_links values (?, ?, ?, ?, 'resource_raw_1', ?, 'shared', null), (?, ?, ?, ?, 'resource_raw_2', ?, 'shared', '{"k":[1]}')`,
      ...base('resource_scope_link_raw_1', '2026-01-01T00:00:00Z'), w.scopeId, ...base('resource_scope_link_raw_2', '2026-01-01T00:00:00Z'), w.scopeId);
    await sql(`insert into tag_groups values (?, ?, ?, ?, ?, 'G', 'g-raw', '', 'custom', 2147483647, true)`, ...base('tag_group_raw_1', '2026-01-01T00:00:00Z'), w.scopeId);
    await sql(`insert into resource_collections values (?, ?, ?, ?, ?, ?, 'c1', '', null), (?, ?, ?, ?, ?, ?, 'c2', 'd', '{"all":[{"attr":"n","eq":1}]}')`,
      ...base('collection_raw_1', '2026-01-01T00:00:00Z'), w.scopeId, w.typeId, ...base('collection_raw_2', '2026-01-01T00:00:00Z'), w.scopeId, w.typeId);
    await sql(`insert into resource_policies values
      (?, ?, ?, ?, ?, '{"type":"resource"}', 'resource_raw_1', '["read"]', 'allow', 0, null, null, null, null),
      (?, ?, ?, ?, ?, '{}', 'x', '[]', 'deny', -5, '{"a":1}', '{"b":[]}', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00.123Z')`,
    ...base('policy_raw_1', '2026-01-01T00:00:00Z'), w.scopeId, ...base('policy_raw_2', '2026-01-01T00:00:00Z'), w.scopeId);
  });
  afterAll(async () => {
    await cp?.close();
  });

  /** Every row of a kind as the ORM route made it: [id, json]. */
  async function ormRoute(kind: (typeof ENTITY_KINDS)[number]): Promise<[string, string][]> {
    const d = KINDS[STORE_KIND[kind]] as KindDef;
    const rows = (await cp.db.orm.em.fork().find(d.entity, { tenantId } as never, { orderBy: { id: 'asc' } as never, disableIdentityMap: true })) as Row[];
    return rows.map((r) => [r.id as string, JSON.stringify(messageToChangeData(d, r))]);
  }

  /** Every row of the tenant through tenantRows, by kind (hydrated, and as text), and the batches' sizes. */
  async function batchRoute(rows: number) {
    const byKind = new Map<EntityKind, Row[]>();
    const texts: { columns: RowColumns; text: (string | null)[] }[] = [];
    const sizes: number[] = [];
    let revision = -1;
    for await (const batch of tenantRows(cp.db, tenantId, ENGINE_STORE_KINDS, { rows }, (r) => (revision = r))) {
      sizes.push(batch.texts.length);
      byKind.set(batch.kind, [...(byKind.get(batch.kind) ?? []), ...batch.texts.map((t) => batch.columns.row(t))]);
      for (const text of batch.texts) texts.push({ columns: batch.columns, text });
    }
    return { byKind, texts, sizes, revision };
  }

  it('batches of two rows give the ORM route\'s JSON for every kind, at the tenant\'s revision', async () => {
    const { byKind, sizes, revision } = await batchRoute(2);
    expect(sizes.every((n) => n >= 1 && n <= 2)).toBe(true);
    expect(sizes.filter((n) => n === 2).length).toBeGreaterThan(5);
    const tenant = await cp.db.orm.em.fork().execute('select revision from tenants where id = ?', [tenantId]);
    expect(revision).toBe(Number(tenant[0].revision));
    let total = 0;
    for (const kind of ENTITY_KINDS) {
      const got = (byKind.get(kind) ?? []).map((row) => {
        const e = rowEntity(kind, row);
        return [e.id, e.json];
      });
      const want = await ormRoute(kind);
      expect(got, kind).toEqual(want);
      total += want.length;
    }
    // Every kind written above is there (the comparison is not vacuous).
    expect(total).toBeGreaterThan(30);
    for (const kind of ['resource', 'subject', 'ownership_grant', 'scope_override', 'resource_edge', 'resource_scope_link', 'tag_group', 'collection', 'policy', 'tag', 'tag_assignment', 'role_assignment'] as const) {
      expect((await ormRoute(kind)).length, kind).toBeGreaterThan(0);
    }
  });

  it('an unknown tenant is not_found, and its connection goes back to the pool', async () => {
    // More attempts than the pool holds connections: a leaked one would make a later one wait.
    for (let i = 0; i < 12; i++) {
      await expect(tenantRows(cp.db, 'tenant_nope', ENGINE_STORE_KINDS, { rows: 10 }, () => undefined).next()).rejects.toMatchObject({ kind: 'not_found' });
    }
    expect((await batchRoute(1000)).byKind.size).toBeGreaterThan(5);
  });

  it.runIf(backend === 'postgres')('every batch is of the revision the read began at, whatever is written meanwhile', async () => {
    const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
    const gen = tenantRows(cp.db, tenantId, ENGINE_STORE_KINDS, { rows: 1 }, () => undefined);
    const first = await gen.next();
    expect(first.done).toBe(false);
    // Written between two batches of the scope kind, before the subject kind is read.
    const made = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'written-meanwhile' });
    const seen: string[] = [];
    for await (const batch of gen) for (const text of batch.texts) seen.push(batch.columns.id(text));
    expect(seen.length).toBeGreaterThan(20);
    expect(seen).not.toContain(made.id);
    // A read that begins after the write sees it.
    expect((await batchRoute(1000)).byKind.get('subject')!.map((r) => r.id)).toContain(made.id);
    await rest('DELETE', `/subjects/${made.id as string}`);
  });

  it.runIf(backend === 'postgres')('a connection lost half-way fails the read instead of hanging it, and the pool goes on', async () => {
    const gen = tenantRows(cp.db, tenantId, ENGINE_STORE_KINDS, { rows: 1 }, () => undefined);
    try {
      expect((await gen.next()).done).toBe(false);
      // The reader's backend, between two fetches of its cursor.
      const killed = await cp.db.orm.em.fork().execute(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid() and query like '%order by tenant_id, id'`,
      );
      expect(killed).toHaveLength(1);
      const sizes: number[] = [];
      const error = await (async () => {
        for await (const batch of gen) sizes.push(batch.texts.length);
      })().then(() => undefined, (e: unknown) => e);
      // As MikroORM's typed exception like every other read: PostgreSQL's error for a terminated
      // backend when the driver read it before the socket closed, else the driver's own for the
      // closed connection (which one comes first is a race between the two).
      expect(error).toBeInstanceOf(DriverException);
      const { code, message } = error as DriverException;
      expect(
        (code === '57P01' && message === 'terminating connection due to administrator command') || /^Connection terminated/.test(message),
        `${code}: ${message}`,
      ).toBe(true);
      expect(sizes.filter((n) => n > 1)).toEqual([]);
    } finally {
      await gen.return(undefined);
    }
    expect((await batchRoute(1000)).byKind.size).toBeGreaterThan(5);
  });

  it('the chunks carry every row once, in kind then id order, at every page size', async () => {
    const want: string[] = [];
    for (const kind of ENTITY_KINDS) for (const [id, json] of await ormRoute(kind)) want.push(`${kind} ${id} ${json}`);
    for (const batchRows of [1, 3, 10_000]) {
      const got: string[] = [];
      let last = false;
      let index = 0;
      for await (const made of snapshotChunks(cp.db, tenantId, { batchRows, chunkBytes: 2_000, gate: 'off' })) {
        // As a client gets it: through the wire, inside a WatchResponse.
        const bin = toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: made } }));
        const c = (fromBinary(WatchResponseSchema, bin).event.value as SnapshotChunk);
        expect(last).toBe(false);
        expect(c.$unknown ?? []).toEqual([]);
        expect(c.entities.length).toBeGreaterThan(0);
        if (c.entities.length > 1) expect(toBinary(SnapshotChunkSchema, c).length).toBeLessThanOrEqual(2_000);
        expect(chunkBytes(made)).toBeGreaterThanOrEqual(toBinary(SnapshotChunkSchema, c).length);
        expect({ ...c, entities: [], $unknown: undefined }).toEqual({ ...made, entities: [], $unknown: undefined });
        // Chunk 0 carries the number of resources, the others none.
        expect(c.resourceCount).toBe(index++ === 0 ? BigInt(want.filter((w) => w.startsWith('resource ')).length) : 0n);
        for (const e of c.entities) got.push(`${e.kind} ${e.id} ${e.json}`);
        last = c.last;
      }
      expect(last).toBe(true);
      expect(got).toEqual(want);
    }
  });

  it('with row blocks, the chunks carry the same rows, every kind in blocks, within the chunk size', async () => {
    const want: string[] = [];
    for (const kind of ENTITY_KINDS) for (const [id, json] of await ormRoute(kind)) want.push(`${kind} ${id} ${JSON.stringify(sortKeys(JSON.parse(json)))}`);
    for (const [batchRows, chunk] of [[3, 400], [10_000, 2_000], [10_000, 4 * 1024 * 1024]]) {
      const got: string[] = [];
      let chunks = 0;
      for await (const made of snapshotChunks(cp.db, tenantId, { batchRows, chunkBytes: chunk, gate: 'off', rowBlocks: true })) {
        const bin = toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: made } }));
        const c = fromBinary(WatchResponseSchema, bin).event.value as SnapshotChunk;
        chunks++;
        expect(c.entities).toEqual([]);
        const rows = c.rowBlocks.reduce((n, b) => n + b.cells.length / b.fields.length, 0);
        if (rows > 1) expect(toBinary(SnapshotChunkSchema, c).length).toBeLessThanOrEqual(chunk);
        expect(chunkBytes(made)).toBeGreaterThanOrEqual(toBinary(SnapshotChunkSchema, c).length);
        for (const b of c.rowBlocks) {
          // Every field of the kind's message, in its order.
          expect(b.fields).toEqual((KINDS[STORE_KIND[b.kind as EntityKind]] as KindDef).message.fields.map((f) => f.jsonName));
          for (let r = 0; r < b.cells.length / b.fields.length; r++) {
            const row: Record<string, unknown> = {};
            b.fields.forEach((f, i) => {
              const cell = b.cells[r * b.fields.length + i];
              if (cell !== 0) row[f] = cell % 2 === 1 ? b.strings[(cell - 1) / 2] : JSON.parse(b.jsonValues[cell / 2 - 1]);
            });
            got.push(`${b.kind} ${row.id} ${JSON.stringify(sortKeys(row))}`);
          }
        }
      }
      expect(chunks).toBeGreaterThan(chunk === 400 ? 10 : 0);
      expect(got.sort()).toEqual([...want].sort());
    }
  });

  it('row values read from the text are exactly those of the JSON object, for every kind', async () => {
    const direct = new Set<string>();
    const generic: [string, string][] = [];
    for (const { columns, text } of (await batchRoute(10_000)).texts) {
      const d = columns.def;
      const { fields, index } = fieldsOfKind(d.kind);
      const id = columns.id(text);
      const values = new Array<string | undefined>(fields.length).fill(undefined);
      const isString = new Array<boolean>(fields.length).fill(false);
      if (!changeDataText(columns, text, index, values, isString)) {
        generic.push([d.kind, id]);
        continue;
      }
      direct.add(d.kind);
      const want = new Array<unknown>(fields.length).fill(undefined);
      const wantString = new Array<boolean>(fields.length).fill(false);
      for (const [key, v] of Object.entries(messageToChangeData(d, columns.row(text)))) {
        want[index.get(key)!] = v;
        wantString[index.get(key)!] = typeof v === 'string';
      }
      // Strings exactly; other values as PostgreSQL's JSON text of the same value.
      expect(values.map((v, i) => (v === undefined || isString[i] ? v : JSON.parse(v))), `${d.kind} ${id}`).toEqual(want);
      expect(isString, `${d.kind} ${id}`).toEqual(wantString);
    }
    // The kinds a tenant holds by the hundred thousand take the direct route.
    for (const kind of ['resource', 'ownership_grant', 'subject', 'membership', 'role_assignment', 'resource_edge', 'tag_group', 'scope_override'] as const) expect(direct, kind).toContain(kind);
    // Of the kinds read from the text, only a time past 9999-12-31T23:59:59Z and a number no
    // double holds take the generic route (policies, with a oneof, always do).
    expect(generic.filter(([kind]) => direct.has(kind)).map(([, id]) => id).sort()).toEqual(['resource_raw_4', 'subject_raw_2']);
  });

  it('the change data read from the text equals the JSON object, for every kind, or gives way to it', async () => {
    const direct = new Set<string>();
    let generic = 0;
    for (const { columns, text } of (await batchRoute(10_000)).texts) {
      const want = messageToChangeData(columns.def, columns.row(text));
      const got = changeDataOfText(columns, text);
      if (got === undefined) {
        generic++;
        continue;
      }
      direct.add(columns.def.kind);
      expect(got, `${columns.def.kind} ${columns.id(text)}`).toStrictEqual(want);
    }
    for (const kind of ['resource', 'ownership_grant', 'subject', 'membership', 'role_assignment', 'resource_edge', 'tag_group', 'scope_override'] as const) expect(direct, kind).toContain(kind);
    expect(generic).toBeGreaterThan(0); // policies, and the rows the test above names
  });

  it('pre-encoded entities are the bytes protobuf-es writes for the same Entity', () => {
    const cases = [
      ['resource', 'resource_1', '{"a":1}'], ['', 'x', ''], ['k', '', '{}'], ['tag', 'ü€😀', JSON.stringify({ s: 'ü'.repeat(100) })],
      ['policy', 'p', 'x'.repeat(127)], ['policy', 'p', 'x'.repeat(128)], ['policy', 'p', 'y'.repeat(20_000)], ['policy', 'p', 'z'.repeat(3_000_000)],
    ] as const;
    const enc = new ChunkEntities(4096);
    for (const [kind, id, json] of cases) enc.add(kind, id, json);
    const entries = enc.take();
    expect(entries).toHaveLength(cases.length);
    cases.forEach(([kind, id, json], n) => {
      const want = new BinaryWriter().bytes(toBinary(EntitySchema, create(EntitySchema, { kind, id, json }))).finish();
      expect(entries[n].no).toBe(5);
      expect(Buffer.from(entries[n].data).equals(Buffer.from(want)), `case ${n}`).toBe(true);
    });
    // The chunk decodes into the same entities, in order, and holds only what it was given.
    const chunk = create(SnapshotChunkSchema, { tenantId: 't', index: 1 });
    chunk.$unknown = entries;
    const back = fromBinary(SnapshotChunkSchema, toBinary(SnapshotChunkSchema, chunk));
    expect(back.entities.map((e) => [e.kind, e.id, e.json])).toEqual(cases.map((c) => [...c]));
    expect(enc.take()).toEqual([]);
  });

  it('a snapshot given up half-way ends its transaction', async () => {
    const gen = snapshotChunks(cp.db, tenantId, { batchRows: 1, chunkBytes: 500, gate: 'off' });
    await gen.next();
    await gen.return(undefined);
    // The pool is not left with a connection inside a transaction.
    const rows = await cp.db.orm.em.fork().execute(`select count(*)::int n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`);
    expect(rows[0].n).toBe(0);
  });
});
