/**
 * The sidecar's own decoding of the Watch stream against protobuf-es's: the same values for every
 * message protobuf-es decodes (random ones, and hand-made encodings no encoder of ours writes),
 * and an error wherever protobuf-es fails. Where it refuses what protobuf-es reads, that is one
 * of the two cases snapshot-wire.ts names.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { HeartbeatSchema, RevisionChangesSchema, RowBlockSchema, SnapshotChunkSchema, WatchResponseSchema, Change_Op } from '../gen/authz/v1/snapshot_service_pb.js';
import { ENTITY_KINDS } from '../services/engine/mod.js';
import { RAW_SNAPSHOT_SERVICE, decodeWatchResponse } from './snapshot-wire.js';
import { mulberry32 } from '../test/seeded-random.js';

/** A seeded generator, so that a failure can be replayed. */
function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]) => xs[int(xs.length)] };
}
type Rng = ReturnType<typeof rng>;

const PIECES = ['a', 'z', '0', '_', '-', ' ', '"', '\\', '{', '}', 'é', 'ß', '€', '中', '😀', '\uFEFF', '\u0000', '\u007f', 'resource_', 'subject_'];
function randomText(r: Rng, max = 12): string {
  let s = '';
  const n = r.int(max + 1);
  for (let i = 0; i < n; i++) s += r.pick(PIECES);
  return s;
}
function randomKind(r: Rng): string {
  const x = r.next();
  return x < 0.7 ? r.pick(ENTITY_KINDS) : x < 0.8 ? '' : x < 0.9 ? `\uFEFF${r.pick(ENTITY_KINDS)}` : randomText(r, 4);
}

/** What protobuf-es decodes, in a comparable shape (a chunk's entities as [kind, id, json]). */
function viaProtobufEs(bytes: Uint8Array) {
  const m = fromBinary(WatchResponseSchema, bytes);
  switch (m.event.case) {
    case 'snapshot': {
      const c = m.event.value;
      return { case: 'snapshot', tenantId: c.tenantId, revision: c.revision, index: c.index, last: c.last, gate: c.resourceScopeGate, resourceCount: c.resourceCount, entities: c.entities.map((e) => [e.kind, e.id, e.json]), blocks: c.rowBlocks.map((b) => [b.kind, b.fields, b.strings, b.jsonValues, b.cells]) };
    }
    case 'changes':
      return { case: 'changes', bytes: toBinary(RevisionChangesSchema, m.event.value) };
    case 'heartbeat':
      return { case: 'heartbeat', bytes: toBinary(HeartbeatSchema, m.event.value) };
    default:
      return { case: undefined };
  }
}

/** What the client's transport does with a message's bytes (connect's createBinarySerialization). */
function transportDecode(bytes: Uint8Array) {
  try {
    return fromBinary(RAW_SNAPSHOT_SERVICE.method.watch.output, bytes);
  } catch (e) {
    throw new ConnectError(`parse binary: ${(e as Error).message}`, Code.Internal);
  }
}

/** What the sidecar decodes, the same shape; checks the kind and id helpers against the strings. */
function viaSidecar(bytes: Uint8Array) {
  const m = decodeWatchResponse(transportDecode(bytes));
  switch (m.event.case) {
    case 'snapshot': {
      const c = m.event.value;
      const entities: string[][] = [];
      for (let i = 0; i < c.count; i++) {
        const [kind, id] = [c.kindText(i), c.id(i)];
        expect(c.kind(i)).toBe((ENTITY_KINDS as readonly string[]).includes(kind) ? kind : undefined);
        expect(c.idIs(i, id)).toBe(true);
        expect(c.idIs(i, `${id}x`)).toBe(false);
        if (id.length > 0) expect(c.idIs(i, id.slice(0, -1) + (id.endsWith('a') ? 'b' : 'a'))).toBe(false);
        entities.push([kind, id, c.json(i)]);
      }
      const blocks = c.blocks.map((b) => {
        expect(b.kind).toBe((ENTITY_KINDS as readonly string[]).includes(b.kindText) ? b.kindText : undefined);
        return [b.kindText, b.fields, Array.from({ length: b.stringCount }, (_, i) => b.string(i)), b.jsonValues, [...b.cells.subarray(0, b.cellCount)]];
      });
      return { case: 'snapshot', tenantId: c.tenantId, revision: c.revision, index: c.index, last: c.last, gate: c.resourceScopeGate, resourceCount: c.resourceCount, entities, blocks };
    }
    case 'changes':
      return { case: 'changes', bytes: toBinary(RevisionChangesSchema, m.event.value) };
    case 'heartbeat':
      return { case: 'heartbeat', bytes: toBinary(HeartbeatSchema, m.event.value) };
    default:
      return { case: undefined };
  }
}

const outcome = (f: () => unknown): { ok: true; value: unknown } | { ok: false; error: Error } => {
  try {
    return { ok: true, value: f() };
  } catch (error) {
    return { ok: false, error: error as Error };
  }
};

function randomMessage(r: Rng): Uint8Array {
  const x = r.next();
  if (x < 0.7) {
    const entities = Array.from({ length: r.int(6) }, () => ({ kind: randomKind(r), id: randomText(r), json: randomText(r, 30) }));
    const revision = r.next() < 0.1 ? -BigInt(r.int(1000)) : r.next() < 0.1 ? 2n ** 62n + BigInt(r.int(1000)) : BigInt(r.int(1e6));
    const y = r.next();
    const resourceCount = y < 0.3 ? 0n : y < 0.8 ? BigInt(r.int(1e7)) : y < 0.9 ? 2n ** 64n - 1n - BigInt(r.int(1000)) : 2n ** 32n + BigInt(r.int(1000));
    const rowBlocks = r.next() < 0.6 ? [] : Array.from({ length: 1 + r.int(3) }, () => ({
      kind: randomKind(r),
      fields: Array.from({ length: r.int(4) }, () => r.pick(['id', 'type', randomText(r, 3)])),
      strings: Array.from({ length: r.int(5) }, () => randomText(r)),
      jsonValues: Array.from({ length: r.int(3) }, () => randomText(r, 6)),
      cells: Array.from({ length: r.int(12) }, () => (r.next() < 0.1 ? 2 ** 32 - 1 - r.int(3) : r.next() < 0.2 ? 128 + r.int(20000) : r.int(12))),
    }));
    return toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'snapshot', value: { tenantId: randomText(r), revision, index: r.int(2 ** 32), last: r.next() < 0.5, entities, resourceScopeGate: randomText(r, 3), resourceCount, rowBlocks } } }));
  }
  if (x < 0.85) {
    const changes = Array.from({ length: r.int(4) }, () => ({ op: r.pick([Change_Op.UPSERT, Change_Op.DELETE, Change_Op.UNSPECIFIED]), kind: randomKind(r), id: randomText(r), json: randomText(r, 20) }));
    return toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'changes', value: { tenantId: randomText(r), revision: BigInt(r.int(1e6)), changes, committedAt: { seconds: BigInt(r.int(1e9)), nanos: r.int(1e9) } } } }));
  }
  if (x < 0.97) return toBinary(WatchResponseSchema, create(WatchResponseSchema, { event: { case: 'heartbeat', value: { tenantId: randomText(r), revision: BigInt(r.int(1e6)), resourceScopeGate: randomText(r, 3) } } }));
  return new Uint8Array(0);
}

/** Field `no` of wire type LEN holding `body`. */
const len = (no: number, body: Uint8Array) => new BinaryWriter().tag(no, WireType.LengthDelimited).bytes(body).finish();
const cat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
const str = (no: number, s: string) => new BinaryWriter().tag(no, WireType.LengthDelimited).string(s).finish();
const raw = (...bytes: number[]) => new Uint8Array(bytes);
const blockBody = (b: { kind?: string; fields?: string[]; strings?: string[]; jsonValues?: string[]; cells?: number[] }) => toBinary(RowBlockSchema, create(RowBlockSchema, b));
const entityBody = (kind: string, id: string, json: string) => toBinary(SnapshotChunkSchema, create(SnapshotChunkSchema, { entities: [{ kind, id, json }] })).subarray(2);
/** Unknown fields of every wire type, a group with a nested field among them. */
const UNKNOWN = cat(
  new BinaryWriter().tag(9, WireType.Varint).uint64(2n ** 63n).tag(10, WireType.Bit64).fixed64(7n).tag(11, WireType.Bit32).fixed32(9).finish(),
  str(12, 'ignored'),
  new BinaryWriter().tag(13, WireType.StartGroup).tag(1, WireType.Varint).uint32(5).tag(2, WireType.LengthDelimited).string('in a group').tag(13, WireType.EndGroup).finish(),
);

describe('the sidecar decodes the Watch stream as protobuf-es does', () => {
  it('gives the same values for random messages of every kind', () => {
    const r = rng(1);
    for (let n = 0; n < 1000; n++) {
      const bytes = randomMessage(r);
      expect(viaSidecar(bytes), `message ${n}`).toEqual(viaProtobufEs(bytes));
    }
  });

  it('gives the same values for encodings no encoder of ours writes', () => {
    const e1 = entityBody('resource', 'resource_1', '{"id":"resource_1"}');
    const cases: [string, Uint8Array][] = [
      ['fields out of order, repeated scalars (the last wins)', len(1, cat(str(6, 'strict'), len(5, e1), raw(0x18, 0x07), str(1, 'tenant_b'), raw(0x10, 0x05), str(1, 'tenant_a'), raw(0x20, 0x01, 0x20, 0x00), raw(0x10, 0x09)))],
      ['an entity whose fields repeat, come out of order, or are missing', len(1, cat(len(5, cat(str(3, '{"id":"x"}'), str(2, 'y'), str(1, 'role'), str(2, 'x'))), len(5, str(2, 'only-an-id')), len(5, new Uint8Array(0))))],
      ['unknown fields of every wire type, in the response, the chunk and an entity', cat(UNKNOWN, len(1, cat(UNKNOWN, str(1, 't'), len(5, cat(UNKNOWN, e1, UNKNOWN)), UNKNOWN)), UNKNOWN)],
      ['non-minimal varints (lengths, tags, numbers)', len(1, cat(raw(0x8a, 0x80, 0x00), raw(0x03, 0x61, 0x62, 0x63), raw(0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), raw(0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), raw(0x2a, 0x85, 0x80, 0x00), raw(0x12, 0x83, 0x00, 0x61, 0x62, 0x63)))],
      ['known fields under another wire type (read as their type says)', len(1, cat(raw(0x1a, 0x05), raw(0x0d, 0x02, 0x68, 0x69), raw(0x2b, 0x03), raw(0x0a, 0x01, 0x61)))],
      ['strings with a BOM, invalid UTF-8 and NUL', len(1, cat(len(1, raw(0xef, 0xbb, 0xbf, 0x61)), len(5, cat(len(1, raw(0xef, 0xbb, 0xbf)), len(2, raw(0xc3, 0x28, 0xe2, 0x82, 0x00, 0xef, 0xbb, 0xbf)), len(3, raw(0xf0, 0x9f, 0x98))))))],
      ['a snapshot in two parts: they merge', cat(len(1, cat(str(1, 'a'), len(5, e1), raw(0x18, 0x02))), raw(0x38, 0x01), len(1, cat(len(5, e1), raw(0x20, 0x01))))],
      ['snapshot, then heartbeat: the last member of the oneof wins', cat(len(1, len(5, e1)), len(3, str(1, 'tenant_h')))],
      ['heartbeat, then two snapshot parts: only those two', cat(len(1, str(1, 'first')), len(3, str(1, 'h')), len(1, str(6, 'g')), len(1, len(5, e1)))],
      ['changes in two parts, with unknown fields', cat(len(2, cat(str(1, 't'), UNKNOWN, len(3, cat(raw(0x08, 0x01), str(2, 'role'))))), len(2, cat(raw(0x10, 0x07), len(3, raw(0x08, 0x02)))))],
      ['no event at all, only unknown fields', UNKNOWN],
      ['an empty chunk', len(1, new Uint8Array(0))],
      ['resource counts: repeated (the last wins), non-minimal, 2^64 - 1', len(1, cat(raw(0x38, 0x05), raw(0x38, 0x85, 0x80, 0x00), raw(0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)))],
      ['row blocks: cells packed and not, split in several runs, fields out of order, a block repeated (two blocks)', len(1, cat(
        len(8, cat(str(3, 's1'), raw(0x28, 0x03), str(2, 'id'), raw(0x2a, 0x03, 0x01, 0x80, 0x01), str(1, 'subject'), raw(0x2a, 0x00), raw(0x28, 0xff, 0xff, 0xff, 0xff, 0x0f), UNKNOWN, str(4, '{}'))),
        len(8, blockBody({ kind: 'resource', fields: ['id'], strings: ['r'], cells: [1] })),
        len(8, new Uint8Array(0)),
      ))],
      ['a row block whose kind has a BOM, is unknown, or repeats (the last wins)', len(1, cat(len(8, cat(len(1, raw(0xef, 0xbb, 0xbf, 0x72, 0x6f, 0x6c, 0x65)), str(2, 'id'))), len(8, cat(str(1, 'role'), str(1, 'widget'))), len(8, cat(str(1, 'widget'), str(1, 'tag')))))],
      ['a resource count past 2^32', len(1, cat(str(1, 't'), raw(0x38, 0x80, 0x80, 0x80, 0x80, 0x10)))],
    ];
    for (const [name, bytes] of cases) {
      const expected = viaProtobufEs(bytes);
      expect(viaSidecar(bytes), name).toEqual(expected);
    }
  });

  it('fails wherever protobuf-es fails, and refuses more only in the two cases it names', () => {
    const r = rng(2);
    const kinds = { same: 0, bothFail: 0, stricter: 0 };
    const base = [
      ...Array.from({ length: 40 }, () => randomMessage(r)),
      len(1, cat(UNKNOWN, str(1, 't'), len(5, cat(UNKNOWN, entityBody('scope', 's', '{}'), UNKNOWN)), raw(0x10, 0x05))),
      len(1, cat(str(1, 't'), len(8, blockBody({ kind: 'subject', fields: ['id', 'type'], strings: ['subject_1', 'user'], jsonValues: ['{}'], cells: [1, 3, 300, 2] })), raw(0x10, 0x05))),
    ];
    for (let n = 0; n < 6000; n++) {
      const bytes = Buffer.from(r.pick(base));
      let b: Uint8Array = bytes;
      const edits = 1 + r.int(3);
      for (let k = 0; k < edits && b.length > 0; k++) {
        const at = r.int(b.length);
        const x = r.next();
        if (x < 0.4) b[at] = r.int(256);
        else if (x < 0.55) b[at] ^= 1 << r.int(8);
        else if (x < 0.7) b = b.subarray(0, at);
        else if (x < 0.85) b = cat(b.subarray(0, at), raw(r.int(256), r.int(256)), b.subarray(at));
        else b = cat(b.subarray(0, at), b.subarray(at + 1 + r.int(3)));
      }
      const theirs = outcome(() => viaProtobufEs(b));
      const ours = outcome(() => viaSidecar(b));
      const hex = Buffer.from(b).toString('hex');
      if (!theirs.ok) {
        expect(ours.ok, `protobuf-es fails on ${hex} (${theirs.error.message}), the sidecar must too`).toBe(false);
        kinds.bothFail++;
      } else if (ours.ok) {
        expect(ours.value, hex).toEqual(theirs.value);
        kinds.same++;
      } else {
        // Stricter: a WatchResponse field under another wire type, or a field past the end of
        // the message holding it, which protobuf-es, reading each part on its own, refuses too.
        kinds.stricter++;
        expect(ours.error).toBeInstanceOf(ConnectError);
        expect(knownFieldUnderOtherWireType(b) || boundedFails(b), `${hex}: ${ours.error.message}`).toBe(true);
      }
    }
    // The mutations reach every outcome.
    expect(Math.min(kinds.same, kinds.bothFail, kinds.stricter)).toBeGreaterThan(20);
  });

  it('fails a message that does not decode as the transport does: internal, "parse binary"', () => {
    const err = outcome(() => viaSidecar(len(1, cat(str(1, 't'), raw(0x2a, 0x05, 0x0a)))));
    expect(err.ok).toBe(false);
    const e = (err as { error: Error }).error as ConnectError;
    expect(e).toBeInstanceOf(ConnectError);
    expect(e.code).toBe(Code.Internal);
    expect(e.rawMessage).toMatch(/^parse binary: premature EOF/);
  });
});

/** Whether the response has field 1, 2 or 3 under a wire type other than LEN (before anything fails). */
function knownFieldUnderOtherWireType(b: Uint8Array): boolean {
  const r = new BinaryReader(b);
  try {
    while (r.pos < r.len) {
      const [no, wireType] = r.tag();
      if (no >= 1 && no <= 3) {
        if (wireType !== WireType.LengthDelimited) return true;
        r.bytes();
      } else r.skip(wireType, no);
    }
  } catch {
    return false;
  }
  return false;
}

/** protobuf-es decoding each field of the response bounded to its own bytes: fails? */
function boundedFails(b: Uint8Array): boolean {
  return !outcome(() => {
    const m = fromBinary(RAW_SNAPSHOT_SERVICE.method.watch.output, b);
    for (const f of m.$unknown ?? []) {
      if (f.no < 1 || f.no > 3) continue;
      const body = new BinaryReader(f.data).bytes();
      fromBinary([SnapshotChunkSchema, RevisionChangesSchema, HeartbeatSchema][f.no - 1], body);
    }
  }).ok;
}
