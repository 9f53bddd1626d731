/**
 * The control plane's hand-encoded row blocks against protobuf-es: the bytes protobuf-es writes
 * for the same RowBlock, rows that decode back to what JSON would carry, an exact running size and
 * a bound that is never below what a row adds. Rows are generated (seeded), with shared and unique
 * values, absent fields, non-string values, multi-byte text, and enough values and rows to cross
 * every varint length boundary of cells, strings and blocks.
 */
import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { RowBlockSchema, SnapshotChunkSchema, type RowBlock } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { pick, type Rng } from '../../engine/testdata/generate.js';
import { mulberry32 } from '../../../test/seeded-random.js';
import { ChunkRowBlocks } from './row-blocks.js';

const KIND_FIELDS: Record<string, string[]> = {
  resource: ['id', 'tenantId', 'resourceTypeId', 'scopeId', 'externalResourceId', 'displayName', 'attributes', 'createdBy', 'createdAt'],
  ownership_grant: ['id', 'tenantId', 'subjectId', 'resourceId', 'roleId', 'createdAt', 'expiresAt'],
  'kind ü': ['id', 'naïve', ''],
};
const fieldsOf = (kind: string) => {
  const fields = KIND_FIELDS[kind];
  return { fields, index: new Map(fields.map((f, i) => [f, i])) };
};

/** Reads a block as the proto says, independently of the sidecar's decoder. */
function rowsOf(b: RowBlock): JsonObject[] {
  const out: JsonObject[] = [];
  for (let r = 0; r < b.cells.length / b.fields.length; r++) {
    const row: JsonObject = {};
    b.fields.forEach((f, i) => {
      const cell = b.cells[r * b.fields.length + i];
      if (cell !== 0) row[f] = cell % 2 === 1 ? b.strings[(cell - 1) / 2] : JSON.parse(b.jsonValues[cell / 2 - 1]);
    });
    out.push(row);
  }
  return out;
}

function randomRow(r: Rng, kind: string, n: number): JsonObject {
  const below = (k: number) => Math.floor(r() * k);
  const shared = ['tenant_a', 'scope_1', '2026-01-01T00:00:00.000Z', '', 'ü€😀'];
  const row: JsonObject = {};
  for (const f of KIND_FIELDS[kind]) {
    const x = r();
    if (f === 'id') row.id = `${kind}_${n}_${'x'.repeat(below(3) === 0 ? 200 : 10)}`;
    else if (x < 0.1) continue;
    else if (x < 0.5) row[f] = pick(r, shared);
    else if (x < 0.7) row[f] = `${f}-${n}-${'é'.repeat(below(60))}`;
    else if (x < 0.86) row[f] = pick<JsonValue>(r, [{}, { a: [1, 'two', null] }, true, 0, -1.5, null, [], { deep: { x: 'ü' } }]);
    else if (x < 0.9) row[f] = { n, s: 'v'.repeat(below(300)) };
    else row[f] = n;
  }
  return row;
}

describe('row blocks (control plane encoder)', () => {
  it('are the bytes protobuf-es writes, decode to the rows given, and count their size exactly', () => {
    const r = mulberry32(7);
    for (const rows of [1, 3, 70, 5_000]) {
      const enc = new ChunkRowBlocks(fieldsOf);
      const given: [string, JsonObject][] = [];
      for (let n = 0; n < rows; n++) {
        const kind = pick(r, Object.keys(KIND_FIELDS));
        const row = randomRow(r, kind, n);
        const before = enc.bytes;
        const bound = enc.bound(kind, row);
        expect(bound).toBeDefined();
        enc.add(kind);
        expect(enc.bytes - before).toBeLessThanOrEqual(bound!);
        given.push([kind, row]);
      }
      expect(enc.count).toBe(rows);
      const size = enc.bytes;
      const entries = enc.take();
      // Exact: one tag byte and the data (length, then the block) per entry.
      expect(entries.reduce((n, e) => n + 1 + e.data.length, 0)).toBe(size);
      for (const e of entries) {
        expect([e.no, e.wireType]).toEqual([8, 2]);
        const reader = new BinaryReader(e.data);
        const body = reader.bytes();
        expect(reader.pos).toBe(e.data.length);
        const block = fromBinary(RowBlockSchema, body);
        expect(Buffer.from(toBinary(RowBlockSchema, block)).equals(Buffer.from(body)), `${block.kind}: protobuf-es's bytes`).toBe(true);
        expect(block.fields).toEqual(KIND_FIELDS[block.kind]);
        expect(rowsOf(block)).toEqual(given.filter(([k]) => k === block.kind).map(([, row]) => JSON.parse(JSON.stringify(row))));
        // Shared values are written once (the generator's repeat often enough to stay shared).
        expect(block.strings.length).toBe(new Set(block.strings).size);
        expect(block.jsonValues.length).toBe(new Set(block.jsonValues).size);
      }
      // A chunk carrying the entries decodes into the same blocks.
      const chunk = create(SnapshotChunkSchema, { tenantId: 't' });
      chunk.$unknown = entries;
      const back = fromBinary(SnapshotChunkSchema, toBinary(SnapshotChunkSchema, chunk));
      expect(back.rowBlocks.flatMap(rowsOf)).toHaveLength(rows);
      expect(enc.take()).toEqual([]);
      expect(enc.bytes).toBe(0);
    }
  });

  it('a chunk taken is left as it was while later chunks reuse the buffers its blocks grew', () => {
    const r = mulberry32(11);
    const enc = new ChunkRowBlocks(fieldsOf);
    const taken: { entries: ReturnType<ChunkRowBlocks['take']>; copies: Buffer[]; rows: JsonObject[] }[] = [];
    for (let chunk = 0; chunk < 4; chunk++) {
      const rows: JsonObject[] = [];
      for (let n = 0; n < 3_000; n++) {
        const kind = chunk % 2 === 0 ? 'resource' : 'ownership_grant';
        const row = randomRow(r, kind, chunk * 10_000 + n);
        enc.bound(kind, row);
        enc.add(kind);
        rows.push(JSON.parse(JSON.stringify(row)) as JsonObject);
      }
      const entries = enc.take();
      taken.push({ entries, copies: entries.map((e) => Buffer.from(e.data)), rows });
    }
    for (const { entries, copies, rows } of taken) {
      // Compared as booleans: a diff of megabytes would take minutes to print.
      expect(entries.every((e, i) => Buffer.from(e.data).equals(copies[i]))).toBe(true);
      const decoded = entries.flatMap((e) => rowsOf(fromBinary(RowBlockSchema, new BinaryReader(e.data).bytes())));
      expect(JSON.stringify(decoded) === JSON.stringify(rows)).toBe(true);
    }
  });

  it('shares a value across the rows of a block, not across blocks or chunks', () => {
    const enc = new ChunkRowBlocks(fieldsOf);
    const add = (kind: string, row: JsonObject) => {
      enc.bound(kind, row);
      enc.add(kind);
    };
    for (let n = 0; n < 3; n++) add('resource', { id: `r${n}`, tenantId: 't', attributes: {}, createdAt: '2026' });
    add('ownership_grant', { id: 'g', tenantId: 't' });
    const [res, grant] = enc.take().map((e) => fromBinary(RowBlockSchema, new BinaryReader(e.data).bytes()));
    expect([res.kind, res.strings, res.jsonValues]).toEqual(['resource', ['r0', 't', '2026', 'r1', 'r2'], ['{}']]);
    expect(res.cells).toEqual([1, 3, 0, 0, 0, 0, 2, 0, 5, 7, 3, 0, 0, 0, 0, 2, 0, 5, 9, 3, 0, 0, 0, 0, 2, 0, 5]);
    expect([grant.strings, grant.cells]).toEqual([['g', 't'], [1, 3, 0, 0, 0, 0, 0]]);
    add('resource', { id: 'r3', tenantId: 't' });
    expect(fromBinary(RowBlockSchema, new BinaryReader(enc.take()[0].data).bytes()).strings).toEqual(['r3', 't']);
  });

  it('stops looking up a field whose values do not repeat, and still decodes every row', () => {
    const enc = new ChunkRowBlocks(fieldsOf);
    const given: JsonObject[] = [];
    for (let n = 0; n < 200; n++) {
      // externalResourceId and attributes: unique for 100 rows (sharing is dropped for them),
      // then two values by turns (no longer looked up, so written each time).
      const row = { id: `r${n}`, tenantId: 't', externalResourceId: n < 100 ? `ext-${n}` : `same-${n % 2}`, attributes: (n < 100 ? { n } : { same: n % 2 }) as JsonObject };
      enc.bound('resource', row);
      enc.add('resource');
      given.push(row);
    }
    const block = fromBinary(RowBlockSchema, new BinaryReader(enc.take()[0].data).bytes());
    expect(rowsOf(block)).toEqual(given);
    expect(block.strings.filter((v) => v === 't')).toHaveLength(1);
    expect(block.strings.filter((v) => v.startsWith('same-'))).toHaveLength(100);
    expect(block.jsonValues.filter((v) => v.startsWith('{"same"'))).toHaveLength(100);
  });

  it('writes a value repeated by consecutive rows once, even in a field no longer looked up, and keeps strings and JSON apart', () => {
    const enc = new ChunkRowBlocks(fieldsOf);
    const given: JsonObject[] = [];
    for (let n = 0; n < 300; n++) {
      // Unique for 100 rows (look-ups dropped), then runs of 50 equal values; then a string and
      // a JSON value with the same text, one after the other, in one field.
      const ext: JsonValue = n < 100 ? `ext-${n}` : n < 200 ? `run-${Math.floor(n / 50)}` : n % 2 === 0 ? '{}' : {};
      const row = { id: `r${n}`, externalResourceId: ext };
      enc.bound('resource', row);
      enc.add('resource');
      given.push(row);
    }
    const block = fromBinary(RowBlockSchema, new BinaryReader(enc.take()[0].data).bytes());
    expect(rowsOf(block)).toEqual(given);
    expect(block.strings.filter((v) => v.startsWith('run-'))).toEqual(['run-2', 'run-3']);
  });

  it('leaves a row with a key its kind does not have to the caller (an Entity), and reads an undefined value as absent', () => {
    const enc = new ChunkRowBlocks(fieldsOf);
    expect(enc.bound('resource', { id: 'r', unknownField: 1 })).toBeUndefined();
    expect(enc.bound('resource', { id: 'r', displayName: undefined } as unknown as JsonObject)).toBe(enc.bound('resource', { id: 'r' }));
    enc.add('resource');
    const block = fromBinary(RowBlockSchema, new BinaryReader(enc.take()[0].data).bytes());
    expect(rowsOf(block)).toEqual([{ id: 'r' }]);
  });
});
