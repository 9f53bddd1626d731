/**
 * Mutations of a valid request as binary protobuf (Connect binary, gRPC, gRPC-Web). The valid
 * request (its proto JSON, from generator.ts) is encoded with protobuf-es `toBinary`, read back
 * into a tree of wire fields named by the descriptors (each field with its JSON path), mutated at
 * the byte level and written out again, every enclosing length recomputed, so that a mutation
 * deep in a message still reaches the server inside well-formed parents:
 *
 * - `wireType`: a known field sent with another wire type (a string as a varint, a number as
 *   length-delimited, a group start);
 * - `longVarint`: an 11-byte varint as a value, a tag or a length; a 10-byte one past 64 bits;
 * - `hugeRepeated`: a repeated field far past its `max_items` (100,000 items, or as many as
 *   3.5 MiB hold), or just past it;
 * - `hugeMap`: a Struct or map field far past 10,000 entries (distinct keys or one key repeated);
 * - `unknownFields`: fields the message type does not declare: 10 (taken, as protobuf readers
 *   do), 65, 100,000, 3.5 MiB of them, 4.5 MiB (past the body limit);
 * - `deepNesting`: a Struct or list nested past the limits (129 JSON levels, 150, 5,000, 50,000);
 * - `truncated`, `lengthPastEnd`: the message cut short; a field's length past its message;
 * - `invalidUtf8`: a string field holding `ff`, overlong `c0 80`, CESU `ed a0 80`, NUL, …;
 * - `malformed`, `emptyBody`: random bytes, field number 0, wire types 6 and 7, a tag without a
 *   value; no bytes at all;
 * - `badEnvelope` (gRPC, gRPC-Web): a length prefix past the data, a prefix cut short, two
 *   messages, a compressed flag without an encoding, unknown flag bits;
 * - and the JSON mutations of json-mutations.ts that protobuf can carry (NUL, long strings,
 *   huge lists, ids of the other tenant, …), encoded as protobuf, under their JSON kind.
 */
import { fromJson, ScalarType, toBinary, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import type { Rng } from '../../services/engine/testdata/generate.js';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_ENTRIES, MAX_UNKNOWN_FIELDS } from '../../services/transport/request-limits.js';
import { maxItemsOf } from '../../services/transport/guard.js';
import { chance, int, pick, serialize, type JsonObj, type MethodInfo, type Mutation, type Path, type World } from './generator.js';
import { envelope, isGrpc, type Surface } from './http.js';
import { mutate as mutateJson } from './json-mutations.js';

export type WireKind =
  | 'wireType' | 'longVarint' | 'hugeRepeated' | 'hugeMap' | 'unknownFields' | 'deepNesting' | 'truncated'
  | 'lengthPastEnd' | 'invalidUtf8' | 'malformed' | 'emptyBody' | 'badEnvelope';

export const WIRE_KINDS: readonly WireKind[] = [
  'wireType', 'longVarint', 'hugeRepeated', 'hugeMap', 'unknownFields', 'deepNesting', 'truncated', 'lengthPastEnd', 'invalidUtf8', 'malformed', 'emptyBody', 'badEnvelope',
];

/** A request to send on a binary surface: the message bytes, or a whole gRPC body (`envelope`). */
export interface BinaryPayload {
  message: Uint8Array;
  envelope?: Uint8Array;
}

// --- varints and the wire tree ---------------------------------------------------------------------

const VARINT = 0;
const BIT64 = 1;
const LEN = 2;
const GROUP_START = 3;
const BIT32 = 5;

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}

const tag = (no: number, wire: number) => varint(no * 8 + wire);

function readVarint(b: Uint8Array, pos: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (let p = pos; p < b.length && p < pos + 10; p++) {
    v += (b[p] & 0x7f) * mul;
    mul *= 0x80;
    if ((b[p] & 0x80) === 0) return [v, p + 1];
  }
  throw new Error('not a varint');
}

/** What the children of a length-delimited field are: a message's fields, or a map entry's key and value. */
type Shape = { kind: 'message'; desc: DescMessage } | { kind: 'entry'; field: DescField & { fieldKind: 'map' } };

interface FieldNode {
  raw?: undefined;
  no: number;
  wire: number;
  /** The declared field, undefined for an unknown one or a map entry's key and value. */
  field?: DescField;
  /** The request field it belongs to (the Struct field for every part of a Struct), for naming. */
  owner?: DescField;
  /** Varint or fixed bytes, or a length-delimited payload. */
  payload: Uint8Array;
  /** A message (or map entry) field: its fields, written in place of `payload`. */
  children?: Node[];
  shape?: Shape;
  /** A string (a string field, a map key, a Struct key or string value). */
  text?: boolean;
  path: Path;
}

/** Bytes spliced in as they are (a mutated field, tag and all). */
interface RawNode {
  raw: Uint8Array;
}

type Node = FieldNode | RawNode;

/** A message of the tree: its fields, its type and where it is. */
interface Frame {
  nodes: Node[];
  shape: Shape;
  path: Path;
  owner?: DescField;
}

const WRAPPERS = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue']);
const isWrapper = (s: Shape) => s.kind === 'message' && WRAPPERS.has(s.desc.typeName);

function scalarWire(t: ScalarType): number {
  switch (t) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return LEN;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return BIT64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return BIT32;
    default:
      return VARINT;
  }
}

/** The wire type a declared field's elements are read as. */
function expectedWire(f: DescField): number {
  switch (f.fieldKind) {
    case 'scalar':
      return scalarWire(f.scalar);
    case 'enum':
      return VARINT;
    case 'list':
      return f.listKind === 'message' ? LEN : f.listKind === 'enum' ? VARINT : scalarWire(f.scalar);
    default:
      return LEN;
  }
}

const isString = (f: DescField) => (f.fieldKind === 'scalar' || (f.fieldKind === 'list' && f.listKind === 'scalar')) && f.scalar === ScalarType.STRING;

/** Reads `bytes` (a valid encoding) as a tree of fields of `shape`, each with its JSON path. */
function decode(bytes: Uint8Array, shape: Shape, path: Path, owner: DescField | undefined): Node[] {
  const out: Node[] = [];
  const seen = new Map<number, number>();
  let pos = 0;
  while (pos < bytes.length) {
    const [t, p1] = readVarint(bytes, pos);
    const no = Math.floor(t / 8);
    const wire = t % 8;
    let payload: Uint8Array;
    pos = p1;
    if (wire === VARINT) {
      const [, p2] = readVarint(bytes, pos);
      payload = bytes.subarray(pos, p2);
      pos = p2;
    } else if (wire === BIT64 || wire === BIT32) {
      const n = wire === BIT64 ? 8 : 4;
      payload = bytes.subarray(pos, pos + n);
      pos += n;
    } else {
      const [len, p2] = readVarint(bytes, pos);
      payload = bytes.subarray(p2, p2 + len);
      pos = p2 + len;
    }
    const index = seen.get(no) ?? 0;
    seen.set(no, index + 1);
    out.push(nodeOf(shape, no, wire, payload, index, path, owner));
  }
  return out;
}

function nodeOf(shape: Shape, no: number, wire: number, payload: Uint8Array, index: number, path: Path, owner: DescField | undefined): FieldNode {
  if (shape.kind === 'entry') {
    // A map entry: key (1) and value (2); the entry's path already ends with its key.
    const f = shape.field;
    if (no === 2 && f.mapKind === 'message' && wire === LEN) {
      const inner: Shape = { kind: 'message', desc: f.message };
      return { no, wire, owner, payload, path, shape: inner, children: decode(payload, inner, path, owner) };
    }
    return { no, wire, owner, payload, path, text: (no === 1 && f.mapKey === ScalarType.STRING) || (no === 2 && f.mapKind === 'scalar' && f.scalar === ScalarType.STRING) };
  }
  const desc = shape.desc;
  const f = desc.fields.find((x) => x.number === no);
  if (!f) return { no, wire, owner, payload, path };
  const wrapper = WRAPPERS.has(desc.typeName);
  const own = wrapper ? owner : f;
  let p: Path;
  if (desc.typeName === 'google.protobuf.ListValue') p = [...path, index];
  else if (wrapper) p = path;
  else if (f.fieldKind === 'list' && wire === LEN && f.listKind !== 'scalar') p = [...path, f.jsonName, index];
  else if (f.fieldKind === 'list' && f.listKind === 'scalar' && f.scalar === ScalarType.STRING) p = [...path, f.jsonName, index];
  else p = [...path, f.jsonName];
  if (f.fieldKind === 'map' && wire === LEN) {
    const keyNode = decode(payload, { kind: 'entry', field: f }, p, own).find((n) => !n.raw && n.no === 1) as FieldNode | undefined;
    const key = keyNode ? Buffer.from(keyNode.payload).toString('utf8') : '';
    // A Struct's entries are its keys (`metadata.team`), a map's are under its name.
    const entryPath = wrapper ? [...path, key] : [...p, key];
    const entry: Shape = { kind: 'entry', field: f };
    return { no, wire, field: f, owner: own, payload, path: entryPath, shape: entry, children: decode(payload, entry, entryPath, own) };
  }
  const msg = f.fieldKind === 'message' ? f.message : f.fieldKind === 'list' && f.listKind === 'message' ? f.message : undefined;
  if (msg && wire === LEN) {
    const inner: Shape = { kind: 'message', desc: msg };
    return { no, wire, field: f, owner: own, payload, path: p, shape: inner, children: decode(payload, inner, p, own) };
  }
  return { no, wire, field: f, owner: own, payload, path: p, text: isString(f) };
}

/** The bytes of a tree, every length recomputed. */
function encode(nodes: Node[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const n of nodes) {
    if (n.raw) {
      parts.push(n.raw);
      continue;
    }
    parts.push(tag(n.no, n.wire));
    if (n.wire === LEN) {
      const body = n.children ? encode(n.children) : n.payload;
      parts.push(varint(body.length), body);
    } else parts.push(n.payload);
  }
  return Buffer.concat(parts);
}

function framesOf(top: Node[], input: DescMessage): Frame[] {
  const out: Frame[] = [];
  const walk = (nodes: Node[], shape: Shape, path: Path, owner: DescField | undefined) => {
    out.push({ nodes, shape, path, owner });
    for (const n of nodes) if (!n.raw && n.children && n.shape) walk(n.children, n.shape, n.path, n.owner);
  };
  walk(top, { kind: 'message', desc: input }, [], undefined);
  return out;
}

function fieldsOf(top: Node[]): FieldNode[] {
  const out: FieldNode[] = [];
  const walk = (nodes: Node[]) => {
    for (const n of nodes) {
      if (n.raw) continue;
      out.push(n);
      if (n.children) walk(n.children);
    }
  };
  walk(top);
  return out;
}

/** The list of fields (a message of the tree) that holds `node`. */
function parentOf(top: Node[], node: FieldNode): Node[] {
  const walk = (nodes: Node[]): Node[] | undefined => {
    if (nodes.includes(node)) return nodes;
    for (const n of nodes) {
      const found = !n.raw && n.children ? walk(n.children) : undefined;
      if (found) return found;
    }
    return undefined;
  };
  return walk(top)!;
}

/** Replaces `node` in the tree with `raw` bytes. */
function replace(top: Node[], node: FieldNode, raw: Uint8Array): void {
  const nodes = parentOf(top, node);
  nodes[nodes.indexOf(node)] = { raw };
}

const ownerName = (f: DescField | undefined) => (f ? { jsonName: f.jsonName, protoName: f.name } : undefined);

// --- big bodies, built without a copy per element ---------------------------------------------------

/** What a "fill" mutation makes: most of the body limit, so the scan and not the limit refuses it. */
const FILL_BYTES = Math.floor(MAX_BODY_BYTES * 0.875);

/** `count` copies of `unit` (or as many as `bytes` hold). */
function repeat(unit: Uint8Array, count: number): Buffer {
  const b = Buffer.alloc(unit.length * count);
  b.fill(unit);
  return b;
}

/** A Struct (or map<string, …>) of `n` entries: keys `k0…` (or one key over and over), each value null. */
function structEntries(n: number, distinct: boolean, valueIsString: boolean): Buffer {
  const value = valueIsString ? Buffer.from([0x12, 0x01, 0x76]) : Buffer.from([0x12, 0x02, 0x08, 0x00]);
  if (!distinct) {
    const entry = Buffer.concat([Buffer.from([0x0a, 0x01, 0x6b]), value]);
    return repeat(Buffer.concat([Buffer.from([0x0a, entry.length]), entry]), n);
  }
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const key = Buffer.from(`k${i}`);
    const entry = Buffer.concat([Buffer.from([0x0a, key.length]), key, value]);
    parts.push(Buffer.from([0x0a, entry.length]), entry);
  }
  return Buffer.concat(parts);
}

/**
 * A Struct nested `depth` JSON levels (`{"a":{"a":…{}}}`), or a list (`[[…[]]]`), as the bytes of a
 * Struct (or ListValue) message. Every level is a prefix of the one inside it, so the headers
 * are written outermost first after their sizes are known, without copying the inside.
 */
function nested(depth: number, list: boolean): Buffer {
  const core = Buffer.alloc(0); // the innermost Struct (or list) is empty
  // Each level, from the inside out: the message bytes a header is followed by.
  const headers: Buffer[] = new Array(depth);
  let size = core.length;
  for (let i = depth - 1; i >= 0; i--) {
    // Struct { fields { key "a", value Value { struct_value … } } }, or ListValue { values Value { list_value … } }
    const h = list
      ? Buffer.concat([Buffer.from([0x0a]), varint(size + 1 + varint(size).length), Buffer.from([0x32]), varint(size)])
      : (() => {
          const value = Buffer.concat([Buffer.from([0x2a]), varint(size)]);
          const entry = 3 + 1 + varint(value.length + size).length + value.length + size;
          return Buffer.concat([Buffer.from([0x0a]), varint(entry), Buffer.from([0x0a, 0x01, 0x61, 0x12]), varint(value.length + size), value]);
        })();
    headers[i] = h;
    size += h.length;
  }
  // The outermost message is the Struct / ListValue itself: its bytes start with the first header.
  return Buffer.concat([...headers, core]);
}

// --- the mutations ------------------------------------------------------------------------------------

interface Ctx {
  r: Rng;
  top: Node[];
  frames: Frame[];
  fields: FieldNode[];
  bytes: Uint8Array;
  surface: Surface;
}

type Result = { mutation: Mutation; payload: BinaryPayload };

const encoded = (ctx: Ctx) => encode(ctx.top);

/** A declared field of a frame's message type (not of the JSON wrappers), by a test. */
function declared(frame: Frame, test: (f: DescField) => boolean): DescField[] {
  if (frame.shape.kind !== 'message' || isWrapper(frame.shape)) return [];
  return frame.shape.desc.fields.filter(test);
}

const isVarintField = (f: DescField) => (f.fieldKind === 'scalar' || f.fieldKind === 'enum') && expectedWire(f) === VARINT;
const isStructField = (f: DescField) => f.fieldKind === 'message' && f.message.typeName === 'google.protobuf.Struct';

/** The mutations that fit this request, each with what it would apply to. */
const APPLIES: Record<WireKind, (ctx: Ctx) => boolean> = {
  wireType: (c) => c.fields.some((n) => n.field && n.path.length > 0),
  longVarint: () => true,
  hugeRepeated: (c) => c.frames.some((f) => declared(f, (x) => x.fieldKind === 'list').length > 0),
  hugeMap: (c) => c.frames.some((f) => declared(f, (x) => isStructField(x) || x.fieldKind === 'map').length > 0),
  unknownFields: () => true,
  deepNesting: (c) => c.frames.some((f) => declared(f, isStructField).length > 0),
  truncated: (c) => c.top.some((n) => encode([n]).length > 1),
  lengthPastEnd: (c) => c.fields.some((n) => n.wire === LEN),
  invalidUtf8: (c) => c.fields.some((n) => n.text),
  malformed: () => true,
  emptyBody: () => true,
  badEnvelope: (c) => isGrpc(c.surface),
};

const WEIGHTS: Record<WireKind, number> = {
  wireType: 1, longVarint: 1, hugeRepeated: 1, hugeMap: 1, unknownFields: 1, deepNesting: 1, truncated: 0.8,
  lengthPastEnd: 0.8, invalidUtf8: 1, malformed: 0.6, emptyBody: 0.3, badEnvelope: 0.8,
};
/** The weight of a JSON mutation carried as protobuf, against the wire kinds above. */
const JSON_WEIGHT = 2.5;

const WIRE_NAMES = ['varint', '64-bit', 'length-delimited', 'group start', 'group end', '32-bit'];

function wireType(ctx: Ctx): Result {
  const { r } = ctx;
  const node = pick(r, ctx.fields.filter((n) => n.field && n.path.length > 0));
  const f = node.field!;
  const want = expectedWire(f);
  // A repeated number may come packed (length-delimited): that is no mistake.
  const packable = f.fieldKind === 'list' && f.listKind !== 'message' && want !== LEN;
  const choices = [VARINT, BIT64, LEN, BIT32, GROUP_START].filter((w) => w !== want && !(packable && w === LEN));
  const w = pick(r, choices);
  const body = w === VARINT ? Buffer.from([0x05]) : w === BIT64 ? Buffer.alloc(8, 1) : w === BIT32 ? Buffer.alloc(4, 1) : w === LEN ? Buffer.from([0x03, 0x61, 0x62, 0x63]) : Buffer.alloc(0);
  replace(ctx.top, node, Buffer.concat([tag(node.no, w), body]));
  return done(ctx, 'wireType', node.path, `${f.name} (${WIRE_NAMES[want]}) sent as ${WIRE_NAMES[w]}`, ownerName(node.owner ?? f));
}

const ELEVEN = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
const TEN_PAST_64 = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);

function longVarint(ctx: Ctx): Result {
  const { r } = ctx;
  const present = ctx.fields.filter((n) => n.wire === VARINT && n.field && isVarintField(n.field));
  const insertable = ctx.frames.filter((fr) => declared(fr, isVarintField).length > 0);
  const roll = r();
  if (roll < 0.6 && (present.length || insertable.length)) {
    const bytes = chance(r, 0.8) ? ELEVEN : TEN_PAST_64;
    const what = bytes === ELEVEN ? '11-byte varint' : '10-byte varint past 64 bits';
    if (present.length && (chance(r, 0.5) || !insertable.length)) {
      const node = pick(r, present);
      replace(ctx.top, node, Buffer.concat([tag(node.no, VARINT), bytes]));
      return done(ctx, 'longVarint', node.path, `${what} in ${node.field!.name}`, ownerName(node.owner ?? node.field));
    }
    const frame = pick(r, insertable);
    const f = pick(r, declared(frame, isVarintField));
    frame.nodes.push({ raw: Buffer.concat([tag(f.number, VARINT), bytes]) });
    return done(ctx, 'longVarint', [...frame.path, f.jsonName], `${what} in ${f.name}`, ownerName(frame.owner ?? f));
  }
  // An 11-byte tag, or an 11-byte length, at the end of a message: named by that message.
  const frame = pick(r, ctx.frames.filter((fr) => !isWrapper(fr.shape) && fr.shape.kind === 'message'));
  const asTag = chance(r, 0.5);
  frame.nodes.push({ raw: asTag ? ELEVEN : Buffer.concat([tag(1999, LEN), ELEVEN, Buffer.from('abc')]) });
  return done(ctx, 'longVarint', frame.path, asTag ? '11-byte tag' : '11-byte length', ownerName(frame.owner));
}

function hugeRepeated(ctx: Ctx): Result {
  const { r } = ctx;
  const frame = pick(r, ctx.frames.filter((fr) => declared(fr, (x) => x.fieldKind === 'list').length > 0));
  const f = pick(r, declared(frame, (x) => x.fieldKind === 'list')) as DescField & { fieldKind: 'list' };
  const max = maxItemsOf(f);
  const existing = frame.nodes.filter((n): n is FieldNode => !n.raw && n.no === f.number);
  const size = pick(r, ['past', 'far', 'fill'] as const);
  let unit: Buffer;
  if (f.listKind === 'message') {
    // Just past the limit: copies of a real item; far past it: empty items (`0a 00`).
    unit = size === 'past' && existing.length ? encode([existing[0]]) : Buffer.concat([tag(f.number, LEN), Buffer.from([0])]);
  } else if (f.listKind === 'scalar' && f.scalar === ScalarType.STRING) {
    unit = Buffer.concat([tag(f.number, LEN), Buffer.from([0x01, 0x78])]);
  } else unit = Buffer.concat([tag(f.number, expectedWire(f)), expectedWire(f) === VARINT ? Buffer.from([0]) : Buffer.alloc(expectedWire(f) === BIT64 ? 8 : 4)]);
  const n = size === 'past' ? max + 1 : size === 'far' ? 100_000 : Math.floor(FILL_BYTES / unit.length);
  for (const e of existing) frame.nodes.splice(frame.nodes.indexOf(e), 1);
  frame.nodes.push({ raw: repeat(unit, n) });
  return done(ctx, 'hugeRepeated', [...frame.path, f.jsonName], `${f.name}: ${n.toLocaleString('en')} items (max_items ${max})`, ownerName(frame.owner ?? f));
}

function hugeMap(ctx: Ctx): Result {
  const { r } = ctx;
  const frame = pick(r, ctx.frames.filter((fr) => declared(fr, (x) => isStructField(x) || x.fieldKind === 'map').length > 0));
  const f = pick(r, declared(frame, (x) => isStructField(x) || x.fieldKind === 'map'));
  const n = pick(r, [MAX_JSON_ENTRIES + 1, 200_000, 250_000]);
  const distinct = n !== 250_000;
  const stringValues = f.fieldKind === 'map' && f.mapKind === 'scalar' && f.scalar === ScalarType.STRING;
  const entries = structEntries(n, distinct, stringValues);
  for (const e of frame.nodes.filter((x) => !x.raw && x.no === f.number)) frame.nodes.splice(frame.nodes.indexOf(e), 1);
  // A Struct field holds one Struct whose map holds the entries; a map field is the entries itself.
  const raw = isStructField(f) ? Buffer.concat([tag(f.number, LEN), varint(entries.length), entries]) : rewrap(entries, f.number);
  frame.nodes.push({ raw });
  return done(ctx, 'hugeMap', [...frame.path, f.jsonName], `${f.name}: ${n.toLocaleString('en')} entries${distinct ? '' : ' of one key'}`, ownerName(frame.owner ?? f));
}

/** Entries made with field number 1 (a Struct's map) renumbered as map field `no`. */
function rewrap(entries: Buffer, no: number): Buffer {
  if (no === 1) return entries;
  const t = tag(no, LEN);
  const parts: Buffer[] = [];
  for (let pos = 0; pos < entries.length; ) {
    const [len, p2] = readVarint(entries, pos + 1);
    parts.push(t, entries.subarray(pos + 1, p2 + len));
    pos = p2 + len;
  }
  return Buffer.concat(parts);
}

function unknownFields(ctx: Ctx): Result {
  const { r } = ctx;
  const frame = pick(r, ctx.frames.filter((fr) => fr.shape.kind === 'message' && !isWrapper(fr.shape)));
  const [n, label] = pick(r, [
    [10, '10 (within the limit: taken and ignored)'],
    [MAX_UNKNOWN_FIELDS + 1, `${MAX_UNKNOWN_FIELDS + 1}`],
    [100_000, '100,000'],
    [Math.floor(FILL_BYTES / 3), `${Math.floor(FILL_BYTES / 3).toLocaleString('en')} (3.5 MiB)`],
    [Math.floor((MAX_BODY_BYTES * 1.1) / 3), `${Math.floor((MAX_BODY_BYTES * 1.1) / 3).toLocaleString('en')} (past the 4 MiB body limit)`],
  ] as [number, string][]);
  // Field 1999 (2-byte tag) holding varint 0: 3 bytes each.
  frame.nodes.push({ raw: repeat(Buffer.concat([tag(1999, VARINT), Buffer.from([0])]), n) });
  return done(ctx, 'unknownFields', frame.path, `${label} unknown fields in ${frame.path.length ? 'a nested message' : 'the request'}`, ownerName(frame.owner));
}

function deepNesting(ctx: Ctx): Result {
  const { r } = ctx;
  const frame = pick(r, ctx.frames.filter((fr) => declared(fr, isStructField).length > 0));
  const f = pick(r, declared(frame, isStructField));
  const list = chance(r, 0.3);
  // Past the JSON depth the guard checks after decoding, then past the nesting the scan allows
  // before it (a list level is two messages, an object level three), then far past both.
  const depth = pick(r, [MAX_JSON_DEPTH + 1, list ? 250 : 150, 5_000, 50_000]);
  // A list is a Struct holding it under "a": { "a": [[[…]]] }.
  const inner = list ? nested(depth, true) : nested(depth, false);
  const struct = list
    ? (() => {
        const value = Buffer.concat([Buffer.from([0x32]), varint(inner.length), inner]);
        const entry = Buffer.concat([Buffer.from([0x0a, 0x01, 0x61, 0x12]), varint(value.length), value]);
        return Buffer.concat([Buffer.from([0x0a]), varint(entry.length), entry]);
      })()
    : inner;
  for (const e of frame.nodes.filter((x) => !x.raw && x.no === f.number)) frame.nodes.splice(frame.nodes.indexOf(e), 1);
  frame.nodes.push({ raw: Buffer.concat([tag(f.number, LEN), varint(struct.length), struct]) });
  return done(ctx, 'deepNesting', [...frame.path, f.jsonName], `${f.name}: ${depth.toLocaleString('en')}-deep ${list ? 'list' : 'object'}`, ownerName(frame.owner ?? f));
}

function truncated(ctx: Ctx): Result {
  // Cut inside one top-level field (a cut between two fields would leave a shorter valid message).
  const sizes = ctx.top.map((n) => encode([n]).length);
  const i = pick(ctx.r, sizes.map((_, k) => k).filter((k) => sizes[k] > 1));
  const start = sizes.slice(0, i).reduce((a, b) => a + b, 0);
  const cut = start + int(ctx.r, 1, sizes[i] - 1);
  const b = encoded(ctx);
  const node = ctx.top[i];
  const name = node.raw ? 'a field' : node.field?.name ?? `field ${node.no}`;
  return { mutation: { kind: 'truncated', path: [], label: `cut after ${cut} of ${b.length} bytes, inside ${name}` }, payload: { message: b.subarray(0, cut) } };
}

function lengthPastEnd(ctx: Ctx): Result {
  const { r } = ctx;
  const node = pick(r, ctx.fields.filter((n) => n.wire === LEN));
  const body = node.children ? encode(node.children) : Buffer.from(node.payload);
  const [claim, label] = pick(r, [
    [body.length + 1, 'one byte past'],
    [body.length + 1000, '1,000 bytes past'],
    [2 ** 31 - 1, '2^31 - 1'],
    [2 ** 32 - 1, '2^32 - 1'],
    [2 ** 35, '2^35 (past 32 bits)'],
  ] as [number, string][]);
  // Last in its message, so that the length runs past the message's end (in the middle, it
  // would only swallow the fields after it, a different mistake).
  const siblings = parentOf(ctx.top, node);
  siblings.splice(siblings.indexOf(node), 1);
  siblings.push({ raw: Buffer.concat([tag(node.no, LEN), varint(claim), body]) });
  return done(ctx, 'lengthPastEnd', node.path, `length of ${node.field?.name ?? `field ${node.no}`}: ${label}`, ownerName(node.owner ?? node.field));
}

function invalidUtf8(ctx: Ctx): Result {
  const { r } = ctx;
  const node = pick(r, ctx.fields.filter((n) => n.text));
  const [bytes, label] = pick(r, [
    [[0xff], 'ff'],
    [[0x61, 0xff, 0x62], 'a ff b'],
    [[0xc0, 0x80], 'overlong c0 80'],
    [[0xed, 0xa0, 0x80], 'CESU-8 surrogate ed a0 80'],
    [[0xf4, 0x90, 0x80, 0x80], 'past U+10FFFF f4 90 80 80'],
    [[0xe2, 0x82], 'cut sequence e2 82'],
    [[0x61, 0x00, 0x62], 'NUL a 00 b'],
  ] as [number[], string][]);
  const value = Buffer.from(bytes);
  replace(ctx.top, node, Buffer.concat([tag(node.no, LEN), varint(value.length), value]));
  return done(ctx, 'invalidUtf8', node.path, `${node.field?.name ?? 'a key or value'}: ${label}`, ownerName(node.owner ?? node.field));
}

function malformed(ctx: Ctx): Result {
  const { r } = ctx;
  const b = encoded(ctx);
  const [bytes, label] = pick(r, [
    [Buffer.from(Array.from({ length: int(r, 1, 64) }, () => int(r, 0, 255))), 'random bytes'],
    [Buffer.concat([b, Buffer.from([0x00, 0x00])]), 'field number 0'],
    [Buffer.concat([b, Buffer.from([0x0e, 0x01])]), 'wire type 6'],
    [Buffer.concat([b, Buffer.from([0x0f, 0x01])]), 'wire type 7'],
    [Buffer.concat([b, tag(1999, GROUP_START), tag(1999, 4)]), 'an unknown group'],
    [Buffer.concat([b, tag(1, VARINT)]), 'a tag without its value'],
    [Buffer.concat([b, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f])]), 'a 5-byte tag past field 2^29'],
  ] as [Buffer, string][]);
  return { mutation: { kind: 'malformed', path: [], label }, payload: { message: bytes } };
}

function badEnvelope(ctx: Ctx): Result {
  const { r } = ctx;
  const b = encoded(ctx);
  const framed = Buffer.from(envelope(b));
  const withLength = (n: number) => {
    const f = Buffer.from(framed);
    f.writeUInt32BE(n, 1);
    return f;
  };
  const [bytes, label] = pick(r, [
    [withLength(b.length + 1), 'length prefix one byte past the data'],
    [withLength(b.length + 100_000), 'length prefix 100,000 bytes past the data'],
    [withLength(0xffffffff), 'length prefix 2^32 - 1'],
    [framed.subarray(0, 3), 'prefix cut to 3 bytes'],
    [framed.subarray(0, Math.max(5, framed.length - 1)), 'message cut by one byte'],
    [Buffer.concat([framed, framed]), 'two messages in a unary call'],
    [Buffer.concat([Buffer.from([1]), framed.subarray(1)]), 'compressed flag without grpc-encoding'],
    [Buffer.concat([Buffer.from([0x80]), framed.subarray(1)]), 'trailer flag on a request'],
    [Buffer.concat([Buffer.from([0x02]), framed.subarray(1)]), 'unknown flag bit 0x02'],
    [Buffer.alloc(0), 'no envelope at all'],
  ] as [Buffer, string][]);
  return { mutation: { kind: 'badEnvelope', path: [], label }, payload: { message: b, envelope: bytes } };
}

function done(ctx: Ctx, kind: WireKind, path: Path, label: string, field?: { jsonName: string; protoName: string }): Result {
  return { mutation: { kind, path, label, field }, payload: { message: encoded(ctx) } };
}

const APPLY: Record<WireKind, (ctx: Ctx) => Result> = {
  wireType, longVarint, hugeRepeated, hugeMap, unknownFields, deepNesting, truncated, lengthPastEnd, invalidUtf8, malformed,
  emptyBody: () => ({ mutation: { kind: 'emptyBody', path: [], label: 'no bytes (an empty message)' }, payload: { message: new Uint8Array() } }),
  badEnvelope,
};

// --- entry points ---------------------------------------------------------------------------------

/** A valid encoding of `desc` read as the mutations read it and written back (the same bytes). */
export function rewritten(desc: DescMessage, bytes: Uint8Array): Uint8Array {
  return encode(decode(bytes, { kind: 'message', desc }, [], undefined));
}

/** The JSON paths of the fields of a valid encoding, as the mutations name them. */
export function fieldPaths(desc: DescMessage, bytes: Uint8Array): string[] {
  return fieldsOf(decode(bytes, { kind: 'message', desc }, [], undefined)).map((n) => n.path.map(String).join('.'));
}

/** The valid request as protobuf bytes (`toBinary` of its proto JSON). */
export function validBinary(m: MethodInfo, valid: JsonObj): Uint8Array {
  return toBinary(m.method.input, fromJson(m.method.input, JSON.parse(serialize(valid)) as JsonValue));
}

/**
 * One mutation of the valid request for a binary surface: a wire mutation, or a JSON mutation
 * that protobuf can carry, encoded. `kinds` restricts them (FUZZ_MUTATION): wire kinds and JSON
 * kinds by name.
 */
export function mutateBinary(r: Rng, world: World, m: MethodInfo, valid: JsonObj, surface: Surface, kinds?: readonly string[]): Result | undefined {
  const bytes = validBinary(m, valid);
  const top = decode(bytes, { kind: 'message', desc: m.method.input }, [], undefined);
  const ctx: Ctx = { r, top, frames: framesOf(top, m.method.input), fields: fieldsOf(top), bytes, surface };
  const fits = WIRE_KINDS.filter((k) => APPLIES[k](ctx) && (!kinds?.length || kinds.includes(k)));
  const jsonAllowed = !kinds?.length || kinds.some((k) => !WIRE_KINDS.includes(k as WireKind));
  let roll = r() * (fits.reduce((n, k) => n + WEIGHTS[k], 0) + (jsonAllowed ? JSON_WEIGHT : 0));
  const kind = fits.find((k) => (roll -= WEIGHTS[k]) < 0);
  if (kind) return APPLY[kind](ctx);
  if (!jsonAllowed) return fits.length ? APPLY[fits[fits.length - 1]](ctx) : undefined;
  // A JSON mutation, when protobuf can carry it (a wrong JSON type or an unknown key cannot be encoded).
  for (let tries = 0; tries < 8; tries++) {
    const { mutation, payload } = mutateJson(r, world, m, valid, 'connect');
    if (payload.rawBody !== undefined || (kinds?.length && !kinds.includes(mutation.kind))) continue;
    let message: Uint8Array;
    try {
      message = toBinary(m.method.input, fromJson(m.method.input, JSON.parse(serialize(payload.tree)) as JsonValue));
    } catch {
      continue;
    }
    return { mutation: { ...mutation, label: `${mutation.label}, as protobuf` }, payload: { message } };
  }
  return fits.length ? APPLY[pick(r, fits)](ctx) : undefined;
}
