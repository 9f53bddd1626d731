/**
 * The Watch stream as the sidecar decodes it: the envelope of each message and its snapshot
 * chunks by hand, heartbeats and changes with protobuf-es.
 *
 * Why: decoded by protobuf-es, a 2.1M-entity snapshot is 2.1M `Entity` messages built by
 * reflection and 6.3M strings, of which the sidecar keeps few (it parses each entity's JSON and
 * indexes the row): about 2.5 µs an entity, and the messages of a 4 MiB chunk live long enough
 * to be promoted, so the old generation fills with garbage that major collections then sweep.
 * Here the client decodes `WatchResponse` through a view of the schema without fields
 * ({@link RAW_SNAPSHOT_SERVICE}), so protobuf-es hands over the message's one field as bytes;
 * {@link decodeWatchResponse} reads a snapshot chunk in one pass, noting where each entity's
 * kind, id and JSON lie in the chunk's bytes (no object per entity), and the follower makes only
 * the strings it needs. Row blocks (field 8, what the sidecar asks for) are read the same way:
 * each row built straight from the block's values, with no JSON text to parse ({@link RawRowBlock}).
 *
 * It follows protobuf-es's own decoding (sidecar/snapshot-wire.test.ts compares the two on random
 * and malformed input): fields in any order; the last value of a repeated scalar wins; repeated
 * occurrences of a message merge and the last member of the oneof wins; a known field is read
 * as its type says whatever its wire type (as protobuf-es does); unknown fields, groups too, are
 * skipped; strings decode as `TextDecoder` does (invalid UTF-8 replaced, a leading BOM dropped).
 * Two differences, both stricter, both in input no encoder writes: a `WatchResponse` field sent
 * with a wire type other than length-delimited, and a field that runs past the end of the chunk,
 * heartbeat or changes message holding it, are refused (protobuf-es reads on). A message that
 * does not decode fails as one protobuf-es cannot decode does: `internal`, "parse binary: …".
 */
import { clone, create, createFileRegistry, mergeFromBinary, type DescService, type Message } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  HeartbeatSchema,
  RevisionChangesSchema,
  SnapshotService,
  file_authz_v1_snapshot_service,
  type Heartbeat,
  type RevisionChanges,
} from '../gen/authz/v1/snapshot_service_pb.js';
import { ENTITY_KINDS, type EntityKind } from '../services/engine/mod.js';

/** A Watch message as {@link decodeWatchResponse} gives it. */
export type RawWatchResponse = {
  event:
    | { case: 'snapshot'; value: RawSnapshotChunk }
    | { case: 'changes'; value: RevisionChanges }
    | { case: 'heartbeat'; value: Heartbeat }
    | { case: undefined; value?: undefined };
};

/**
 * `SnapshotService` whose `WatchResponse` has no fields: a client of it gets each message's
 * fields as protobuf-es's `$unknown` entries, for {@link decodeWatchResponse}.
 */
export const RAW_SNAPSHOT_SERVICE: typeof SnapshotService = rawService();

function rawService(): typeof SnapshotService {
  const file = clone(FileDescriptorProtoSchema, file_authz_v1_snapshot_service.proto);
  const response = file.messageType.find((m) => m.name === 'WatchResponse');
  if (!response || response.field.map((f) => `${f.number}:${f.typeName}`).join() !== '1:.authz.v1.SnapshotChunk,2:.authz.v1.RevisionChanges,3:.authz.v1.Heartbeat') {
    throw new Error('snapshot-wire: WatchResponse is not the oneof of SnapshotChunk = 1, RevisionChanges = 2, Heartbeat = 3 this module reads');
  }
  response.field = [];
  response.oneofDecl = [];
  const deps = file_authz_v1_snapshot_service.dependencies;
  const registry = createFileRegistry(file, (name) => deps.find((d) => d.proto.name === name));
  return registry.getService(SnapshotService.typeName) as DescService as typeof SnapshotService;
}

const utf8Slice = Buffer.prototype.utf8Slice as (this: Uint8Array, start: number, end: number) => string;

/** The kinds as bytes, by length, so that a kind is recognised without making a string. */
const KINDS_BY_LENGTH: { bytes: Uint8Array; kind: EntityKind }[][] = [];
for (const kind of ENTITY_KINDS) (KINDS_BY_LENGTH[kind.length] ??= []).push({ bytes: Buffer.from(kind, 'latin1'), kind });

const WIRE_VARINT = 0;
const WIRE_BIT64 = 1;
const WIRE_LEN = 2;
const WIRE_START_GROUP = 3;
const WIRE_END_GROUP = 4;
const WIRE_BIT32 = 5;

/** Ints per entity in {@link RawSnapshotChunk}'s ranges: kind, id and JSON, start and end each. */
const STRIDE = 6;

/**
 * A snapshot chunk with its entities still in its bytes: `count` entities, read by number
 * (`kind(i)`, `id(i)`, `json(i)`), each string made when asked for.
 */
export class RawSnapshotChunk {
  tenantId = '';
  revision = 0n;
  index = 0;
  last = false;
  resourceScopeGate = '';
  /** The sender's hint of the snapshot's resources (field 7; see the proto): as sent, unchecked. */
  resourceCount = 0n;
  count = 0;
  /** The chunk's row blocks (field 8), in order. */
  readonly blocks: RawRowBlock[] = [];
  /** Per entity, {@link STRIDE} offsets into `bytes`; an absent field is an empty range. */
  ranges = new Int32Array(STRIDE * 1024);

  constructor(readonly bytes: Uint8Array) {}

  /** Entity `i`'s kind when it is an engine kind, else undefined (see `kindText`). */
  kind(i: number): EntityKind | undefined {
    return kindAt(this.bytes, this.ranges[i * STRIDE], this.ranges[i * STRIDE + 1]);
  }

  /** Entity `i`'s kind as sent. */
  kindText(i: number): string {
    return text(this.bytes, this.ranges[i * STRIDE], this.ranges[i * STRIDE + 1]);
  }

  id(i: number): string {
    return text(this.bytes, this.ranges[i * STRIDE + 2], this.ranges[i * STRIDE + 3]);
  }

  json(i: number): string {
    return text(this.bytes, this.ranges[i * STRIDE + 4], this.ranges[i * STRIDE + 5]);
  }

  /** Whether `s` is entity `i`'s id, compared without decoding the id when `s` is ASCII. */
  idIs(i: number, s: string): boolean {
    let at = this.ranges[i * STRIDE + 2];
    const end = this.ranges[i * STRIDE + 3];
    if (end - at !== s.length) return this.id(i) === s;
    const b = this.bytes;
    for (let k = 0; k < s.length; k++, at++) {
      const c = s.charCodeAt(k);
      if (c >= 0x80) return this.id(i) === s;
      if (b[at] !== c) return false;
    }
    return true;
  }

  /** Notes the next entity's ranges. */
  add(kindStart: number, kindEnd: number, idStart: number, idEnd: number, jsonStart: number, jsonEnd: number): void {
    let r = this.ranges;
    const at = this.count * STRIDE;
    if (at + STRIDE > r.length) {
      r = new Int32Array(r.length * 2);
      r.set(this.ranges);
      this.ranges = r;
    }
    r[at] = kindStart;
    r[at + 1] = kindEnd;
    r[at + 2] = idStart;
    r[at + 3] = idEnd;
    r[at + 4] = jsonStart;
    r[at + 5] = jsonEnd;
    this.count++;
  }
}

/** The engine kind held in `b[start, end)` (as protobuf-es decodes strings: a leading BOM dropped), else undefined. */
function kindAt(b: Uint8Array, start: number, end: number): EntityKind | undefined {
  if (end - start >= 3 && b[start] === 0xef && b[start + 1] === 0xbb && b[start + 2] === 0xbf) start += 3;
  const candidates = KINDS_BY_LENGTH[end - start];
  if (candidates === undefined) return undefined;
  for (const { bytes, kind } of candidates) {
    let k = 0;
    while (k < bytes.length && b[start + k] === bytes[k]) k++;
    if (k === bytes.length) return kind;
  }
  return undefined;
}

/**
 * A `RowBlock` (see the proto) as decoded: its field names and JSON values made, its strings
 * noted and made when a row needs them, its rows built when asked for ({@link RawRowBlock.row}),
 * each as the object `JSON.parse` of the row's Entity JSON gives.
 *
 * A string only one cell names (an id, usually) is made for that row alone, as a row's JSON
 * would make it, so that one the index does not keep dies young; made for the whole block up
 * front, every such string of a 4 MiB chunk outlived a scavenge and was promoted, and the old
 * generation's collections grew. A string several cells name is made once.
 */
export class RawRowBlock {
  /** The kind when it is an engine kind (see `kindText`). */
  kind: EntityKind | undefined;
  kindText = '';
  readonly fields: string[] = [];
  readonly jsonValues: string[] = [];
  cells = new Uint32Array(64);
  cellCount = 0;
  /** Start and end in `bytes` of each string. */
  private ranges = new Int32Array(64);
  stringCount = 0;
  /** Per string: how many cells name it (up to 2), then, once made, those named by several. */
  private uses: Uint8Array | undefined;
  private shared: (string | undefined)[] = [];

  constructor(private readonly bytes: Uint8Array) {}

  pushCell(cell: number): void {
    if (this.cellCount === this.cells.length) {
      const bigger = new Uint32Array(this.cells.length * 2);
      bigger.set(this.cells);
      this.cells = bigger;
    }
    this.cells[this.cellCount++] = cell;
  }

  pushString(start: number, end: number): void {
    if (2 * this.stringCount + 2 > this.ranges.length) {
      const bigger = new Int32Array(this.ranges.length * 2);
      bigger.set(this.ranges);
      this.ranges = bigger;
    }
    this.ranges[2 * this.stringCount] = start;
    this.ranges[2 * this.stringCount + 1] = end;
    this.stringCount++;
  }

  /** String `i` as sent. */
  string(i: number): string {
    return text(this.bytes, this.ranges[2 * i], this.ranges[2 * i + 1]);
  }

  /** Rows in the block; throws when its fields and cells do not make whole rows of distinct, usable fields with an id. */
  rows(): number {
    const width = this.fields.length;
    if (width === 0) throw new Error('a row block without fields');
    const seen = new Set<string>();
    for (const f of this.fields) {
      // A plain object's `__proto__` is its prototype, not a field: no entity has one.
      if (f === '__proto__') throw new Error('a row block with a field named __proto__');
      if (seen.has(f)) throw new Error(`a row block with the field ${JSON.stringify(f)} twice`);
      seen.add(f);
    }
    if (!seen.has('id')) throw new Error('a row block without an id field');
    if (this.cellCount % width !== 0) throw new Error(`a row block of ${width} fields with ${this.cellCount} cells`);
    const uses = new Uint8Array(this.stringCount);
    for (let k = 0; k < this.cellCount; k++) {
      const cell = this.cells[k];
      if ((cell & 1) === 1) {
        const i = (cell - 1) >>> 1;
        if (i < uses.length && uses[i] < 2) uses[i]++;
      }
    }
    this.uses = uses;
    this.shared = new Array(this.stringCount);
    return this.cellCount / width;
  }

  /** Row `r` (after {@link rows} checked the block and counted its strings' uses); throws on a cell that names no value or a JSON value that does not parse. */
  row(r: number): Record<string, unknown> {
    const fields = this.fields;
    const width = fields.length;
    const row: Record<string, unknown> = {};
    for (let f = 0, at = r * width; f < width; f++, at++) {
      const cell = this.cells[at];
      if (cell === 0) continue;
      const i = (cell - 1) >>> 1;
      if ((cell & 1) === 1) {
        if (i >= this.stringCount) throw new Error(`row ${r} names string ${i} of ${this.stringCount}`);
        row[fields[f]] = (this.uses as Uint8Array)[i] === 1 ? this.string(i) : (this.shared[i] ??= this.string(i));
      } else {
        if (i >= this.jsonValues.length) throw new Error(`row ${r} names JSON value ${i} of ${this.jsonValues.length}`);
        // Parsed for each row, so that no two rows share an object (`{}`, the common one, made directly).
        const json = this.jsonValues[i];
        row[fields[f]] = json === '{}' ? {} : JSON.parse(json);
      }
    }
    return row;
  }
}

/** UTF-8 text of a range as protobuf-es decodes it (TextDecoder: a leading BOM is dropped). */
function text(b: Uint8Array, start: number, end: number): string {
  if (end - start >= 3 && b[start] === 0xef && b[start + 1] === 0xbb && b[start + 2] === 0xbf) start += 3;
  return start === end ? '' : utf8Slice.call(b, start, end);
}

/**
 * The event of a message received through {@link RAW_SNAPSHOT_SERVICE} (the `$unknown` fields
 * of its field-less `WatchResponse`). Throws `internal` ("parse binary: …") when it does not
 * decode.
 */
export function decodeWatchResponse(msg: Pick<Message, '$unknown'>): RawWatchResponse {
  try {
    return decodeEvent(msg.$unknown ?? []);
  } catch (err) {
    throw new ConnectError(`parse binary: ${(err as Error).message}`, Code.Internal);
  }
}

function decodeEvent(fields: readonly { no: number; wireType: number; data: Uint8Array }[]): RawWatchResponse {
  // The oneof: its last member wins, and consecutive occurrences of that member merge (as
  // protobuf-es merges them: each decoded on its own, into the same message).
  let no = 0;
  let parts: Uint8Array[] = [];
  for (const f of fields) {
    if (f.no < 1 || f.no > 3) continue;
    if (f.wireType !== WIRE_LEN) throw new Error(`WatchResponse field ${f.no} with wire type ${f.wireType}`);
    // `data` is what follows the tag: the length, then the message.
    const r = new Reader(f.data, 0, f.data.length);
    const len = r.uint32();
    if (f.no !== no) parts = [];
    no = f.no;
    parts.push(f.data.subarray(r.pos, r.pos + len));
  }
  switch (no) {
    case 0:
      return { event: { case: undefined } };
    case 1:
      return { event: { case: 'snapshot', value: decodeChunk(parts) } };
    case 2: {
      const value = create(RevisionChangesSchema);
      for (const p of parts) mergeFromBinary(RevisionChangesSchema, value, p);
      return { event: { case: 'changes', value } };
    }
    default: {
      const value = create(HeartbeatSchema);
      for (const p of parts) mergeFromBinary(HeartbeatSchema, value, p);
      return { event: { case: 'heartbeat', value } };
    }
  }
}

/** A `SnapshotChunk` (fields 1–8, see the proto) from its parts, its entities noted, not decoded; its row blocks decoded but for their rows. */
function decodeChunk(parts: Uint8Array[]): RawSnapshotChunk {
  const bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts);
  const c = new RawSnapshotChunk(bytes);
  let partStart = 0;
  for (const part of parts) {
    const r = new Reader(bytes, partStart, partStart + part.length);
    partStart += part.length;
    while (r.pos < r.end) {
      const tag = r.tag();
      const fieldNo = tag >>> 3;
      switch (fieldNo) {
        case 1:
          c.tenantId = r.string();
          break;
        case 2:
          c.revision = r.int64();
          break;
        case 3:
          c.index = r.uint32();
          break;
        case 4:
          c.last = r.bool();
          break;
        case 5:
          readEntity(r, c);
          break;
        case 6:
          c.resourceScopeGate = r.string();
          break;
        case 7:
          c.resourceCount = r.uint64();
          break;
        case 8:
          c.blocks.push(readRowBlock(r, bytes));
          break;
        default:
          r.skip(tag & 7, fieldNo);
      }
    }
  }
  return c;
}

/** One `Entity` (kind = 1, id = 2, json = 3, strings), as protobuf-es reads a nested message. */
function readEntity(r: Reader, c: RawSnapshotChunk): void {
  // The length of the entity, then fields until it is passed (a field may end past it, as in
  // protobuf-es; past the chunk, the reader throws).
  const len = r.uint32();
  const end = r.pos + len;
  let kindStart = 0;
  let kindEnd = 0;
  let idStart = 0;
  let idEnd = 0;
  let jsonStart = 0;
  let jsonEnd = 0;
  while (r.pos < end) {
    const tag = r.tag();
    const fieldNo = tag >>> 3;
    if (fieldNo > 3) {
      r.skip(tag & 7, fieldNo);
      continue;
    }
    const start = r.lengthDelimited();
    if (fieldNo === 1) {
      kindStart = start;
      kindEnd = r.pos;
    } else if (fieldNo === 2) {
      idStart = start;
      idEnd = r.pos;
    } else {
      jsonStart = start;
      jsonEnd = r.pos;
    }
  }
  c.add(kindStart, kindEnd, idStart, idEnd, jsonStart, jsonEnd);
}

/** One `RowBlock` (kind = 1, fields = 2, strings = 3, json_values = 4, strings; cells = 5, packed or not). */
function readRowBlock(r: Reader, bytes: Uint8Array): RawRowBlock {
  const len = r.uint32();
  const end = r.pos + len;
  const block = new RawRowBlock(bytes);
  let kindStart = 0;
  let kindEnd = 0;
  while (r.pos < end) {
    const tag = r.tag();
    const fieldNo = tag >>> 3;
    if (fieldNo === 5) {
      if ((tag & 7) === WIRE_LEN) {
        const packedEnd = r.uint32() + r.pos;
        while (r.pos < packedEnd) block.pushCell(r.uint32());
        r.assertBounds();
      } else block.pushCell(r.uint32());
      continue;
    }
    if (fieldNo > 5) {
      r.skip(tag & 7, fieldNo);
      continue;
    }
    const start = r.lengthDelimited();
    if (fieldNo === 1) {
      kindStart = start;
      kindEnd = r.pos;
    } else if (fieldNo === 3) block.pushString(start, r.pos);
    else (fieldNo === 2 ? block.fields : block.jsonValues).push(text(bytes, start, r.pos));
  }
  block.kind = kindAt(bytes, kindStart, kindEnd);
  block.kindText = text(bytes, kindStart, kindEnd);
  return block;
}

/** protobuf-es's BinaryReader, reading what a snapshot chunk holds (its error messages too). */
class Reader {
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}

  assertBounds(): void {
    if (this.pos > this.end) throw new RangeError('premature EOF');
  }

  /** A tag (field number and wire type); throws on an illegal one. */
  tag(): number {
    const tag = this.uint32();
    const fieldNo = tag >>> 3;
    const wireType = tag & 7;
    if (fieldNo <= 0 || wireType > 5) throw new Error(`illegal tag: field no ${fieldNo} wire type ${wireType}`);
    return tag;
  }

  /** Passes a length-delimited value; returns where it starts (it ends at `pos`). */
  lengthDelimited(): number {
    const n = this.uint32();
    const start = this.pos;
    this.pos += n;
    this.assertBounds();
    return start;
  }

  string(): string {
    const start = this.lengthDelimited();
    return text(this.buf, start, this.pos);
  }

  int64(): bigint {
    this.varint64();
    return BigInt.asIntN(64, (BigInt(this.hi >>> 0) << 32n) | BigInt(this.lo >>> 0));
  }

  uint64(): bigint {
    this.varint64();
    return (BigInt(this.hi >>> 0) << 32n) | BigInt(this.lo >>> 0);
  }

  bool(): boolean {
    this.varint64();
    return this.lo !== 0 || this.hi !== 0;
  }

  private lo = 0;
  private hi = 0;

  /** protobuf-es's varint64read, into `lo` and `hi`. */
  private varint64(): void {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const b = buf[this.pos++];
      lo |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        this.assertBounds();
        this.lo = lo;
        this.hi = hi;
        return;
      }
    }
    const middle = buf[this.pos++];
    lo |= (middle & 0x0f) << 28;
    hi = (middle & 0x70) >> 4;
    if ((middle & 0x80) === 0) {
      this.assertBounds();
      this.lo = lo;
      this.hi = hi;
      return;
    }
    for (let shift = 3; shift <= 31; shift += 7) {
      const b = buf[this.pos++];
      hi |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        this.assertBounds();
        this.lo = lo;
        this.hi = hi;
        return;
      }
    }
    throw new Error('invalid varint');
  }

  /** protobuf-es's varint32read: up to 10 bytes, the low 32 bits, unsigned. */
  uint32(): number {
    const buf = this.buf;
    let b = buf[this.pos++];
    let result = b & 0x7f;
    if ((b & 0x80) === 0) {
      this.assertBounds();
      return result;
    }
    b = buf[this.pos++];
    result |= (b & 0x7f) << 7;
    if ((b & 0x80) === 0) {
      this.assertBounds();
      return result;
    }
    b = buf[this.pos++];
    result |= (b & 0x7f) << 14;
    if ((b & 0x80) === 0) {
      this.assertBounds();
      return result;
    }
    b = buf[this.pos++];
    result |= (b & 0x7f) << 21;
    if ((b & 0x80) === 0) {
      this.assertBounds();
      return result;
    }
    b = buf[this.pos++];
    result |= (b & 0x0f) << 28;
    for (let n = 5; (b & 0x80) !== 0 && n < 10; n++) b = buf[this.pos++];
    if ((b & 0x80) !== 0) throw new Error('invalid varint');
    this.assertBounds();
    return result >>> 0;
  }

  /** protobuf-es's BinaryReader.skip. */
  skip(wireType: number, fieldNo: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        while (this.buf[this.pos++] & 0x80) {
          // the varint's bytes
        }
        break;
      case WIRE_BIT64:
        this.pos += 8;
        break;
      case WIRE_BIT32:
        this.pos += 4;
        break;
      case WIRE_LEN: {
        const n = this.uint32();
        this.pos += n;
        break;
      }
      case WIRE_START_GROUP:
        for (;;) {
          const tag = this.tag();
          const wt = tag & 7;
          if (wt === WIRE_END_GROUP) {
            if (tag >>> 3 !== fieldNo) throw new Error('invalid end group tag');
            break;
          }
          this.skip(wt, tag >>> 3);
        }
        break;
      default:
        throw new Error(`cant skip wire type ${wireType}`);
    }
    this.assertBounds();
  }
}
