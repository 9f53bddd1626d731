/**
 * The scan of a binary (protobuf) request body before it is decoded. protobuf-es decodes a whole
 * message before anything can bound it (millions of repeated items, Struct entries or unknown
 * fields cost seconds), recurses once per nesting level, and reports malformed input (a field
 * sent with another wire type, an 11-byte varint) as an internal error; its strings replace
 * invalid UTF-8 with U+FFFD. The scan walks the wire format with an explicit stack, decodes
 * nothing and allocates little, and stops at the first problem, so a request is refused after at
 * most the work the limits of request-limits.ts allow:
 * - every tag, varint (at most 10 bytes) and length is well formed and inside its message;
 * - a declared field has the wire type of its type (packed or not, for repeated numbers);
 * - strings are valid UTF-8 without NUL (PostgreSQL cannot store U+0000);
 * - a repeated field holds at most its `(authz.v1.max_items)` items, a Struct or ListValue at
 *   most MAX_JSON_ENTRIES, the whole request at most MAX_REQUEST_VALUES values and
 *   MAX_UNKNOWN_FIELDS undeclared fields, nested at most MAX_BINARY_NESTING messages deep.
 * Each problem is named by the JSON path of its field (`requests[3].context.a`).
 */
import { isUtf8 } from 'node:buffer';
import { fromBinary, ScalarType, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { ConnectError } from '@connectrpc/connect';
import { DomainError } from '../common/errors.js';
import { toConnectError } from './errors.js';
import { maxItemsOf } from './guard.js';
import { jsonValueField } from './field-paths.js';
import { MAX_BINARY_NESTING, MAX_JSON_ENTRIES, MAX_JSON_VALUE_BYTES, MAX_JSON_VALUE_WIRE_BYTES, MAX_REQUEST_VALUES, MAX_UNKNOWN_FIELDS } from './request-limits.js';

export interface WireProblem {
  /** JSON path of the field at fault; empty for the body as a whole. */
  field: string;
  message: string;
  /** A limit was exceeded (as opposed to malformed input). */
  limit: boolean;
}

/** The error a wire problem is answered with: `invalid_argument` naming the field (reason LIMIT for a limit). */
export function wireProblemError(p: WireProblem): ConnectError {
  const message = p.field ? `${p.field}: ${p.message}` : `the request body ${p.message}`;
  return toConnectError(new DomainError(p.limit ? 'limit' : 'invalid', message, p.field || undefined));
}

/** Throws the error of the body's first wire problem (see binaryRequestProblem), if it has one. */
export function checkBinaryRequest(desc: DescMessage, bytes: Uint8Array): void {
  const problem = binaryRequestProblem(desc, bytes);
  if (problem) throw wireProblemError(problem);
}

/**
 * A binary request decoded after its scan. Whatever the decoder still refuses is the client's
 * mistake too: `invalid_argument`, never an internal error.
 */
export function decodeBinaryRequest<D extends DescMessage>(desc: D, bytes: Uint8Array): MessageShape<D> {
  checkBinaryRequest(desc, bytes);
  try {
    return fromBinary(desc, bytes);
  } catch (err) {
    throw wireProblemError({ field: '', message: `is not valid protobuf wire data (${err instanceof Error ? err.message : 'malformed'})`, limit: false });
  }
}

const VARINT = 0;
const BIT64 = 1;
const LEN = 2;
const BIT32 = 5;
const WIRE_NAMES = ['a varint', '64-bit', 'length-delimited', 'a group start', 'a group end', '32-bit'];

/** How one declared field is read. */
interface FieldInfo {
  /** Its name in JSON paths; empty for the wrappers of JSON values (Struct.fields, Value.struct_value, …). */
  name: string;
  /** Wire type of one element. */
  wire: number;
  kind: 'number' | 'string' | 'bytes' | 'message';
  repeated: boolean;
  /** Items a repeated field may hold. */
  max: number;
  /** A map: its entries are messages of key (1) and value (2). */
  map: boolean;
  /** A JSON value (Struct, Value, ListValue) held by a message that is not one: its bytes are bounded. */
  jsonRoot?: boolean;
  /** The type name of the message it holds. */
  innerType?: string;
  /**
   * Inside a JSON value: the fewest bytes of JSON each occurrence becomes (a string's own bytes
   * added), so that their sum is a lower bound of the value's JSON (JSON_COSTS).
   */
  json?: number;
  /** The message it holds (messages, and map entries), and that once looked up. */
  inner?: () => MessageInfo;
  innerInfo?: MessageInfo;
}

type MessageInfo = Map<number, FieldInfo>;

const JSON_TYPES = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue']);

function scalarWire(t: ScalarType): { wire: number; kind: FieldInfo['kind'] } {
  switch (t) {
    case ScalarType.STRING:
      return { wire: LEN, kind: 'string' };
    case ScalarType.BYTES:
      return { wire: LEN, kind: 'bytes' };
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return { wire: BIT64, kind: 'number' };
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return { wire: BIT32, kind: 'number' };
    default:
      return { wire: VARINT, kind: 'number' };
  }
}

/**
 * What each field of the JSON types adds, at least, to the JSON of the value it is part of: a
 * container's closing bracket (its opening one is counted by its first entry or element, or its
 * comma by the next), a key's quotes and colon, a string's quotes, `null`, `true`, a digit.
 */
const JSON_COSTS: Record<string, Record<number, number>> = {
  'google.protobuf.Struct': { 1: 1 },
  'google.protobuf.ListValue': { 1: 1 },
  'google.protobuf.Value': { 1: 4, 2: 1, 3: 2, 4: 4, 5: 1, 6: 1 },
};
/** A JSON value's own container, when it is the root (`{}` or `[]`, one bracket counted here). */
const ROOT_COSTS: Record<string, number> = { 'google.protobuf.Struct': 1, 'google.protobuf.ListValue': 1, 'google.protobuf.Value': 0 };

const infos = new WeakMap<DescMessage, MessageInfo>();
const entryInfos = new WeakMap<DescField, MessageInfo>();

/** The fields of a message type by number (built once per type). */
function infoOf(desc: DescMessage): MessageInfo {
  let info = infos.get(desc);
  if (info) return info;
  info = new Map();
  infos.set(desc, info);
  const wrapper = JSON_TYPES.has(desc.typeName);
  for (const f of desc.fields) {
    const name = wrapper ? '' : f.jsonName;
    switch (f.fieldKind) {
      case 'scalar':
        info.set(f.number, { name, ...scalarWire(f.scalar), repeated: false, max: 1, map: false });
        break;
      case 'enum':
        info.set(f.number, { name, wire: VARINT, kind: 'number', repeated: false, max: 1, map: false });
        break;
      case 'message': {
        const m = f.message;
        info.set(f.number, { name, wire: LEN, kind: 'message', repeated: false, max: 1, map: false, inner: () => infoOf(m), jsonRoot: !wrapper && JSON_TYPES.has(m.typeName), innerType: m.typeName });
        break;
      }
      case 'list': {
        // A JSON array's elements are bounded like an object's entries.
        const max = wrapper ? MAX_JSON_ENTRIES : maxItemsOf(f);
        if (f.listKind === 'message') {
          const m = f.message;
          info.set(f.number, { name, wire: LEN, kind: 'message', repeated: true, max, map: false, inner: () => infoOf(m) });
        } else {
          const element = f.listKind === 'enum' ? { wire: VARINT, kind: 'number' as const } : scalarWire(f.scalar);
          info.set(f.number, { name, ...element, repeated: true, max, map: false });
        }
        break;
      }
      case 'map': {
        const max = wrapper ? MAX_JSON_ENTRIES : maxItemsOf(f);
        info.set(f.number, { name, wire: LEN, kind: 'message', repeated: true, max, map: true, inner: () => entryOf(f) });
        break;
      }
    }
  }
  const costs = JSON_COSTS[desc.typeName];
  if (costs) for (const [no, cost] of Object.entries(costs)) info.get(Number(no))!.json = cost;
  return info;
}

/** A map entry: its key (1) and value (2). */
function entryOf(field: DescField & { fieldKind: 'map' }): MessageInfo {
  let info = entryInfos.get(field);
  if (info) return info;
  info = new Map();
  // A Struct's key becomes `"key":` (three bytes besides its own); its value is counted by the Value.
  const struct = field.parent.typeName === 'google.protobuf.Struct';
  info.set(1, { name: '', ...scalarWire(field.mapKey), repeated: false, max: 1, map: false, ...(struct ? { json: 3 } : {}) });
  if (field.mapKind === 'message') {
    const m = field.message;
    info.set(2, { name: '', wire: LEN, kind: 'message', repeated: false, max: 1, map: false, inner: () => infoOf(m), ...(struct ? { json: 0 } : {}) });
  } else {
    const value = field.mapKind === 'enum' ? { wire: VARINT, kind: 'number' as const } : scalarWire(field.scalar);
    info.set(2, { name: '', ...value, repeated: false, max: 1, map: false });
  }
  entryInfos.set(field, info);
  return info;
}

/** A message being scanned: where it ends, its fields, and how its path is named (lazily). */
interface Frame {
  end: number;
  info: MessageInfo;
  parent: Frame | undefined;
  /** The field that holds it in its parent (its name; its item index when repeated, else -1). */
  name: string;
  index: number;
  /** A map entry: where its key's bytes lie, once read. */
  entry: boolean;
  keyStart: number;
  keyEnd: number;
  /** Items seen per repeated field number (made when the first is seen). */
  counts: Map<number, number> | undefined;
  /** Inside a JSON value: its JSON bytes counted so far (a lower bound), shared by its frames. */
  budget: JsonBudget | undefined;
}

/** The JSON value a frame is part of: the frame of its field, and the fewest bytes of JSON seen. */
interface JsonBudget {
  root: Frame;
  bytes: number;
}

class Refusal extends Error {
  constructor(readonly problem: WireProblem) {
    super(problem.message);
  }
}

/**
 * Why a binary request body cannot be decoded as `desc`, or null when it can be (see the module
 * comment). Never throws.
 */
export function binaryRequestProblem(desc: DescMessage, bytes: Uint8Array): WireProblem | null {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let frame: Frame = { end: buf.length, info: infoOf(desc), parent: undefined, name: '', index: -1, entry: false, keyStart: 0, keyEnd: 0, counts: undefined, budget: undefined };
  // Frames are reused by depth (a message's frame is done with before its sibling's starts), so a
  // body of many small messages allocates one frame per level, not one per message.
  const frames: Frame[] = [frame];
  let depth = 0;
  let pos = 0;
  let values = 0;
  let unknown = 0;

  const fail = (at: Frame, name: string, message: string, limit = false): never => {
    throw new Refusal({ field: pathOf(buf, at, name), message, limit });
  };
  /** A varint that must fit 32 bits (tags, lengths); its value. */
  const varint32 = (at: Frame, name: string): number => {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (pos >= at.end) fail(at, name, 'is not valid protobuf wire data (a varint runs past the end of its message)');
      const b = buf[pos++];
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) {
        if (v > 0xffffffff) break;
        return v;
      }
    }
    return fail(at, name, 'is not valid protobuf wire data (a tag or length is out of range)');
  };
  /** Skips a varint value: at most 10 bytes, inside the message. */
  const skipVarint = (at: Frame, name: string, end: number): void => {
    for (let n = 0; n < 10; n++) {
      if (pos >= end) fail(at, name, 'is not valid protobuf wire data (a varint runs past the end of its message)');
      if ((buf[pos++] & 0x80) === 0) return;
    }
    fail(at, name, 'is not valid protobuf wire data (a varint is longer than 10 bytes)');
  };
  const skipFixed = (at: Frame, name: string, n: number): void => {
    if (pos + n > at.end) fail(at, name, 'is not valid protobuf wire data (a value runs past the end of its message)');
    pos += n;
  };
  const length = (at: Frame, name: string): number => {
    const len = varint32(at, name);
    if (pos + len > at.end) fail(at, name, 'is not valid protobuf wire data (a length runs past the end of its message)');
    return len;
  };
  /** Counts JSON bytes of a value: past MAX_JSON_VALUE_BYTES it is refused, named by its field. */
  const spend = (budget: JsonBudget, n: number): void => {
    budget.bytes += n;
    if (budget.bytes > MAX_JSON_VALUE_BYTES) fail(budget.root, '', `is larger than ${MAX_JSON_VALUE_BYTES} bytes of JSON`, true);
  };
  const count = (at: Frame, no: number, field: FieldInfo, n: number): number => {
    const counts = (at.counts ??= new Map());
    const seen = (counts.get(no) ?? 0) + n;
    counts.set(no, seen);
    if (seen > field.max) {
      fail(at, field.name, field.name === '' ? `holds more than ${field.max} entries` : `holds more than ${field.max} items; at most ${field.max} are allowed`, true);
    }
    return seen - 1;
  };

  try {
    for (;;) {
      while (pos === frame.end) {
        if (frame.parent === undefined) return null;
        frame = frame.parent;
        depth--;
      }
      const tag = varint32(frame, '');
      const no = tag >>> 3;
      const wire = tag & 7;
      if (no === 0) fail(frame, '', 'is not valid protobuf wire data (field number 0)');
      if (++values > MAX_REQUEST_VALUES) fail(frame, '', `holds more than ${MAX_REQUEST_VALUES} values in all`, true);
      const field = frame.info.get(no);
      if (field === undefined) {
        if (++unknown > MAX_UNKNOWN_FIELDS) fail(frame, '', `holds more than ${MAX_UNKNOWN_FIELDS} fields its message type does not declare`, true);
        if (wire === VARINT) skipVarint(frame, '', frame.end);
        else if (wire === BIT64) skipFixed(frame, '', 8);
        else if (wire === BIT32) skipFixed(frame, '', 4);
        else if (wire === LEN) pos += length(frame, '');
        else fail(frame, '', `is not valid protobuf wire data (wire type ${wire}: groups are not used by this API)`);
        continue;
      }
      const name = field.name;
      if (wire !== field.wire) {
        // A repeated number may come packed: one length-delimited run of elements.
        if (!(field.repeated && field.kind === 'number' && wire === LEN)) {
          fail(frame, name, `is encoded as ${WIRE_NAMES[wire] ?? `wire type ${wire}`}, but its type is read as ${WIRE_NAMES[field.wire]}`);
        }
        const end = pos + length(frame, name);
        let n = 0;
        if (field.wire === VARINT) {
          while (pos < end) {
            skipVarint(frame, name, end);
            n++;
          }
        } else {
          const size = field.wire === BIT64 ? 8 : 4;
          if ((end - pos) % size !== 0) fail(frame, name, `is not valid protobuf wire data (a packed run is not a whole number of ${size}-byte values)`);
          n = (end - pos) / size;
          pos = end;
        }
        if (n > 0) count(frame, no, field, n);
        continue;
      }
      const index = field.repeated ? count(frame, no, field, 1) : -1;
      if (frame.budget !== undefined && field.json !== undefined) spend(frame.budget, field.json);
      switch (field.kind) {
        case 'number':
          if (wire === VARINT) skipVarint(frame, name, frame.end);
          else skipFixed(frame, name, wire === BIT64 ? 8 : 4);
          break;
        case 'bytes':
          pos += length(frame, name);
          break;
        case 'string': {
          const len = length(frame, name);
          const start = pos;
          pos += len;
          if (frame.budget !== undefined && field.json !== undefined) spend(frame.budget, len);
          // A map key names its entry in paths once it is known to be text.
          const key = frame.entry && no === 1;
          // Short ASCII strings (most ids and keys) are checked here; the rest natively.
          let ascii = len <= 64;
          for (let i = start; ascii && i < pos; i++) {
            const b = buf[i];
            if (b === 0 || b > 0x7f) ascii = false;
          }
          if (!ascii) {
            const text = buf.subarray(start, pos);
            if (!isUtf8(text)) fail(frame, name, 'must be valid UTF-8');
            if (text.indexOf(0) !== -1) fail(frame, name, 'must not contain a NUL character (U+0000)');
          }
          if (key) {
            frame.keyStart = start;
            frame.keyEnd = pos;
          }
          break;
        }
        case 'message': {
          const len = length(frame, name);
          if (field.jsonRoot && len > MAX_JSON_VALUE_WIRE_BYTES) fail(frame, name, `is larger than ${MAX_JSON_VALUE_BYTES} bytes of JSON (${len} bytes of protobuf)`, true);
          if (++depth > MAX_BINARY_NESTING) {
            // Named by the request field that holds the nesting (its full path would be as deep).
            throw new Refusal({ field: jsonValueField(desc, pathOf(buf, frame, name)), message: `nests deeper than ${MAX_BINARY_NESTING} messages`, limit: true });
          }
          const info = (field.innerInfo ??= field.inner!());
          let next = frames[depth];
          if (next === undefined) frames[depth] = next = { end: 0, info, parent: frame, name, index, entry: false, keyStart: 0, keyEnd: 0, counts: undefined, budget: undefined };
          next.end = pos + len;
          next.info = info;
          next.name = name;
          next.index = index;
          next.entry = field.map;
          next.keyStart = next.keyEnd = 0;
          next.counts?.clear();
          next.budget = field.jsonRoot ? { root: next, bytes: ROOT_COSTS[field.innerType!] ?? 0 } : frame.budget;
          frame = next;
          break;
        }
      }
    }
  } catch (err) {
    if (err instanceof Refusal) return err.problem;
    return { field: '', message: `is not valid protobuf wire data (${err instanceof Error ? err.message : 'malformed'})`, limit: false };
  }
}

/** The JSON path of field `name` of the message `frame` (`requests[3].context.a`). */
function pathOf(buf: Buffer, frame: Frame, name: string): string {
  // Segments from the innermost out: names are joined with dots, indexes appended.
  const segments: string[] = name === '' ? [] : [name];
  for (let f: Frame | undefined = frame; f?.parent !== undefined; f = f.parent) {
    if (f.entry) {
      if (f.keyEnd > f.keyStart) segments.push(buf.toString('utf8', f.keyStart, f.keyEnd));
    }
    else if (f.index >= 0) segments.push(`[${f.index}]`);
    if (f.name !== '') segments.push(f.name);
  }
  let path = '';
  for (let i = segments.length - 1; i >= 0; i--) {
    const s = segments[i];
    if (s.startsWith('[')) path += s;
    else path = path === '' ? s : `${path}.${s}`;
  }
  return path.length <= 160 ? path : `${path.slice(0, 100)}…${path.slice(-50)}`;
}
