/**
 * The request guard: what every request message must satisfy before a handler sees it,
 * whatever surface it came by (REST, Connect JSON or binary, gRPC, gRPC-Web). It refuses what
 * the store or the response encoder cannot take, so that no such input can fail a write half
 * way or after its commit:
 * - strings (fields, map keys, JSON keys and values) hold no NUL (PostgreSQL refuses U+0000 in
 *   text and jsonb) and no lone surrogate (not Unicode: it cannot be stored as UTF-8);
 * - JSON values (`google.protobuf.Struct` fields: metadata, attributes, context, conditions,
 *   match definitions) hold only finite numbers (JSON has no NaN or Infinity; `1e309` parses as
 *   Infinity) and nest at most {@link MAX_JSON_DEPTH} levels;
 * - timestamps lie in 0001-01-01 .. 9999-12-31T23:59:59.999Z, the range RFC 3339 can write at the
 *   millisecond precision they are stored at;
 * - a repeated field holds at most its `(authz.v1.max_items)` items, {@link DEFAULT_MAX_ITEMS}
 *   without the option.
 * Each refusal is `invalid_argument` naming the field's JSON path (`items[3].metadata.a`).
 */
import { getOption, hasOption, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import type { Interceptor } from '@connectrpc/connect';
import { invalid, limitExceeded } from '../common/errors.js';
import { MAX_BATCH } from '../common/validate.js';
import { max_items } from '../../gen/authz/v1/options_pb.js';

/** Items a repeated request field may hold without a `max_items` option (the batch limit). */
export const DEFAULT_MAX_ITEMS = MAX_BATCH;
/** Nesting levels of a JSON value: above any JSON Logic rule or match definition the engine accepts. */
export const MAX_JSON_DEPTH = 128;

/** The range of timestamps as stored: to the millisecond, 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z. */
const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** In `u` mode a paired surrogate is one code point, so only a lone one is of category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why a string cannot be stored, or null. */
export function stringProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain a NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode (it holds a lone surrogate)';
  return null;
}

/** A path inside a JSON value as errors name it: keys are the client's, so long ones are clipped. */
function clipPath(path: string): string {
  return path.length <= 160 ? path : `${path.slice(0, 100)}…${path.slice(-50)}`;
}

/** Throws `invalid_argument` at `path` when the string cannot be stored. */
export function checkString(s: string, path: string): void {
  const problem = stringProblem(s);
  if (problem) throw invalid(path, problem);
}

/**
 * Checks a JSON value (iteratively: a hostile nesting cannot exhaust the stack): depth, finite
 * numbers, storable keys and strings. `path` names the value in errors.
 */
export function checkJsonValue(value: unknown, path: string): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path, depth: 0 }];
  while (stack.length > 0) {
    const { v, path: full, depth } = stack.pop()!;
    const at = clipPath(full);
    if (typeof v === 'string') checkString(v, at);
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw invalid(at, 'must be a finite number (JSON has no NaN or Infinity; 1e309 is out of range)');
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_JSON_DEPTH) throw limitExceeded(path, `nests deeper than ${MAX_JSON_DEPTH} levels`);
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${at}[${i}]`, depth: depth + 1 });
      } else {
        for (const [k, x] of Object.entries(v)) {
          const p = join(at, k);
          checkString(k, p);
          stack.push({ v: x, path: p, depth: depth + 1 });
        }
      }
    }
  }
}

const maxItemsCache = new WeakMap<DescField, number>();

/** The most items a repeated field may hold. */
export function maxItemsOf(field: DescField): number {
  let n = maxItemsCache.get(field);
  if (n === undefined) {
    n = hasOption(field, max_items) ? getOption(field, max_items) : DEFAULT_MAX_ITEMS;
    maxItemsCache.set(field, n);
  }
  return n;
}

/** Checks one value of a field (a list element, a map value or the field's own value). */
function checkValue(field: DescField, kind: 'scalar' | 'enum' | 'message', v: unknown, path: string): void {
  if (kind === 'scalar') {
    if (typeof v === 'string') checkString(v, path);
    return;
  }
  if (kind !== 'message' || v === undefined || v === null) return;
  const desc = (field as { message: DescMessage }).message;
  switch (desc.typeName) {
    case 'google.protobuf.Struct':
    case 'google.protobuf.Value':
    case 'google.protobuf.ListValue':
      return checkJsonValue(v as JsonValue, path);
    case 'google.protobuf.Timestamp': {
      const t = v as { seconds: bigint; nanos: number };
      // Stored to the millisecond, as timestampDate rounds: 9999-12-31T23:59:59.9999Z would be year 10000.
      const ms = Number(t.seconds) * 1000 + Math.round(t.nanos / 1_000_000);
      if (!(ms >= MIN_MS && ms <= MAX_MS) || t.nanos < 0 || t.nanos > 999_999_999) {
        throw invalid(path, 'must be a timestamp between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z');
      }
      return;
    }
    default:
      return checkRequestMessage(desc, v as Record<string, unknown>, path);
  }
}

/** Checks a decoded request message (see the module comment); `path` prefixes field paths. */
export function checkRequestMessage(desc: DescMessage, message: Record<string, unknown>, path = ''): void {
  for (const field of desc.fields) {
    const v = field.oneof ? oneofValue(message, field) : message[field.localName];
    if (v === undefined || v === null) continue;
    const p = join(path, field.jsonName);
    switch (field.fieldKind) {
      case 'scalar':
        checkValue(field, 'scalar', v, p);
        break;
      case 'enum':
        break;
      case 'message':
        checkValue(field, 'message', v, p);
        break;
      case 'list': {
        const list = v as unknown[];
        const max = maxItemsOf(field);
        if (list.length > max) throw limitExceeded(p, `holds ${list.length} items; at most ${max} are allowed`);
        for (let i = 0; i < list.length; i++) checkValue(field, field.listKind, list[i], `${p}[${i}]`);
        break;
      }
      case 'map':
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          checkString(k, p);
          checkValue(field, field.mapKind, x, `${p}.${k}`);
        }
        break;
    }
  }
}

function oneofValue(message: Record<string, unknown>, field: DescField): unknown {
  const o = message[field.oneof!.localName] as { case?: string; value?: unknown } | undefined;
  return o?.case === field.localName ? o.value : undefined;
}

/**
 * The guard as an interceptor: checks the request message of unary and server-streaming calls
 * before the handler runs. Put it after authentication, so an unauthenticated caller learns
 * nothing from validation.
 */
export function requestGuard(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) checkRequestMessage(req.method.input, req.message as unknown as Record<string, unknown>);
    return next(req);
  };
}

/**
 * Message nesting a binary request may have before it is decoded. The decoder recurses once per
 * level (a JSON level is three: Struct, map entry, Value), so a hostile nesting must be refused
 * before decoding; the guard then holds JSON values to MAX_JSON_DEPTH.
 */
export const MAX_BINARY_NESTING = 3 * MAX_JSON_DEPTH + 32;

/**
 * Why a binary request body cannot be decoded as `desc` (malformed wire data, or nested too
 * deep for the decoder), naming the field, or null when it can. Scans the wire format with an
 * explicit stack and decodes nothing, so it cannot exhaust the stack or allocate much.
 */
export function binaryRequestProblem(desc: DescMessage, bytes: Uint8Array): { field: string; message: string } | null {
  const stack: Frame[] = [{ reader: new BinaryReader(bytes), fields: fieldsOf(desc), path: '', depth: 0 }];
  let at = '';
  try {
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const { reader } = top;
      if (reader.pos >= reader.len) {
        stack.pop();
        continue;
      }
      at = top.path;
      const [no, wireType] = reader.tag();
      const field = top.fields(no);
      const path = field?.name ? join(top.path, field.name) : top.path;
      at = path;
      if (wireType !== WireType.LengthDelimited || field?.inner === undefined) {
        reader.skip(wireType, no);
        continue;
      }
      if (top.depth + 1 > MAX_BINARY_NESTING) return { field: rootOf(path), message: `nests deeper than ${MAX_BINARY_NESTING} messages` };
      stack.push({ reader: new BinaryReader(reader.bytes()), fields: field.inner, path, depth: top.depth + 1 });
    }
  } catch (err) {
    return { field: at, message: `is not valid protobuf wire data (${err instanceof Error ? err.message : 'malformed'})` };
  }
  return null;
}

/** A message being scanned: its reader and how to look up its fields by number. */
interface Frame {
  reader: BinaryReader;
  fields: FieldLookup;
  path: string;
  depth: number;
}

/** A field by number: its JSON name, and the lookup of the message it holds (if it holds one). */
type FieldLookup = (no: number) => { name: string; inner?: FieldLookup } | undefined;

const lookups = new WeakMap<DescMessage, FieldLookup>();

/** The field lookup of a message type (cached per type). */
function fieldsOf(desc: DescMessage): FieldLookup {
  let f = lookups.get(desc);
  if (!f) {
    const byNumber = new Map(desc.fields.map((x) => [x.number, x]));
    f = (no) => {
      const field = byNumber.get(no);
      if (!field) return undefined;
      if (field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message')) return { name: field.jsonName, inner: fieldsOf(field.message) };
      if (field.fieldKind === 'map') return { name: field.jsonName, inner: mapEntry(field) };
      return { name: field.jsonName };
    };
    lookups.set(desc, f);
  }
  return f;
}

/** A map entry: key (1) and value (2), the value a message when the map's values are. */
function mapEntry(field: DescField & { fieldKind: 'map' }): FieldLookup {
  const value = field.mapKind === 'message' ? fieldsOf(field.message) : undefined;
  return (no) => (no === 2 && value ? { name: '', inner: value } : { name: '' });
}

/** The top-level field of a path (`metadata` of `metadata.a.b`). */
function rootOf(path: string): string {
  const i = path.search(/[.[]/);
  return i === -1 ? path : path.slice(0, i);
}
