/**
 * Descriptor-driven JSON helpers of the REST gateway: checking a request body against the
 * request message (unknown fields and wrong JSON types are `invalid_argument` naming the
 * field), converting path and query strings by field type, and turning 64-bit integers in a
 * response into JSON numbers.
 */
import { ScalarType, fromJson, type DescField, type DescMessage, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { TimestampSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { connectErrorWithInfo, toConnectError } from '../errors.js';
import { checkJsonValue as checkJsonStorable, checkString, maxItemsOf, stringProblem } from '../guard.js';
import { limitExceeded } from '../../common/errors.js';

/** An `invalid_argument` error naming the field at fault. */
export function invalidField(field: string, message: string): ConnectError {
  return connectErrorWithInfo(field ? `${field}: ${message}` : message, Code.InvalidArgument, ErrorReason.INVALID_FIELD, field);
}

const INT32_TYPES = new Set([ScalarType.INT32, ScalarType.SINT32, ScalarType.SFIXED32, ScalarType.UINT32, ScalarType.FIXED32]);
const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64, ScalarType.UINT64, ScalarType.FIXED64]);
const UNSIGNED = new Set([ScalarType.UINT32, ScalarType.FIXED32, ScalarType.UINT64, ScalarType.FIXED64]);

/** Well-known types whose JSON form is not an object of their fields. */
const WKT_JSON: Record<string, 'string' | 'object' | 'array' | 'any' | ScalarType> = {
  'google.protobuf.Struct': 'object',
  'google.protobuf.Value': 'any',
  'google.protobuf.ListValue': 'array',
  'google.protobuf.Timestamp': 'string',
  'google.protobuf.Duration': 'string',
  'google.protobuf.FieldMask': 'string',
  'google.protobuf.Any': 'object',
  'google.protobuf.Empty': 'object',
  'google.protobuf.DoubleValue': ScalarType.DOUBLE,
  'google.protobuf.FloatValue': ScalarType.FLOAT,
  'google.protobuf.Int64Value': ScalarType.INT64,
  'google.protobuf.UInt64Value': ScalarType.UINT64,
  'google.protobuf.Int32Value': ScalarType.INT32,
  'google.protobuf.UInt32Value': ScalarType.UINT32,
  'google.protobuf.BoolValue': ScalarType.BOOL,
  'google.protobuf.StringValue': ScalarType.STRING,
  'google.protobuf.BytesValue': ScalarType.BYTES,
};

const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkScalar(type: ScalarType, v: unknown, path: string): void {
  if (type === ScalarType.STRING || type === ScalarType.BYTES) {
    if (typeof v !== 'string') throw invalidField(path, `must be a string, got ${jsonType(v)}`);
    if (type === ScalarType.STRING) storableString(v, path);
  } else if (type === ScalarType.BOOL) {
    if (typeof v !== 'boolean') throw invalidField(path, `must be a boolean, got ${jsonType(v)}`);
  } else if (INT32_TYPES.has(type) || INT64_TYPES.has(type)) {
    const ok =
      (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && /^-?\d+$/.test(v.trim()));
    if (!ok) throw invalidField(path, `must be an integer, got ${typeof v === 'string' ? JSON.stringify(v) : jsonType(v)}`);
    if (UNSIGNED.has(type) && Number(v) < 0) throw invalidField(path, 'must not be negative');
    if (INT32_TYPES.has(type)) {
      const n = Number(v);
      const [min, max] = UNSIGNED.has(type) ? [0, 0xffffffff] : [-0x80000000, 0x7fffffff];
      if (n < min || n > max) throw invalidField(path, `must be between ${min} and ${max}`);
    } else {
      // The decoder refuses a 64-bit integer out of range without naming the field.
      const n = BigInt(typeof v === 'number' ? v : (v as string).trim());
      const [min, max] = UNSIGNED.has(type) ? [0n, 2n ** 64n - 1n] : [-(2n ** 63n), 2n ** 63n - 1n];
      if (n < min || n > max) throw invalidField(path, `must be between ${min} and ${max}`);
    }
  } else {
    // float, double
    const ok = typeof v === 'number' || (typeof v === 'string' && (v === 'NaN' || v === 'Infinity' || v === '-Infinity' || v.trim() !== '' && !Number.isNaN(Number(v))));
    if (!ok) throw invalidField(path, `must be a number, got ${jsonType(v)}`);
  }
}

function checkEnum(v: unknown, path: string, names: ReadonlySet<string>): void {
  if (typeof v === 'number' && Number.isInteger(v)) return;
  if (typeof v === 'string' && names.has(v)) return;
  throw invalidField(path, `must be one of ${[...names].join(', ')}`);
}

function checkMessageValue(desc: DescMessage, v: unknown, path: string): void {
  const wkt = WKT_JSON[desc.typeName];
  if (wkt !== undefined) {
    if (wkt === 'any') return checkJsonValue(v, path);
    if (wkt === 'object') {
      if (!isObject(v)) throw invalidField(path, `must be an object, got ${jsonType(v)}`);
      // Free-form JSON is checked here, before the decoder recurses into it.
      if (desc.typeName === 'google.protobuf.Struct') checkJsonValue(v, path);
    } else if (wkt === 'array') {
      if (!Array.isArray(v)) throw invalidField(path, `must be an array, got ${jsonType(v)}`);
      checkJsonValue(v, path);
    } else if (wkt === 'string') {
      if (typeof v !== 'string') throw invalidField(path, `must be a string, got ${jsonType(v)}`);
      if (desc.typeName === 'google.protobuf.Timestamp') checkTimestamp(v, path);
    } else {
      checkScalar(wkt, v, path);
    }
    return;
  }
  checkMessageFully(desc, v, path);
}

/** A string field must be storable (the request guard's rule). */
function storableString(v: string, path: string): void {
  try {
    checkString(v, path);
  } catch (err) {
    throw toConnectError(err);
  }
}

/** Free-form JSON must be storable (the request guard's rule), checked before it is decoded. */
function checkJsonValue(v: unknown, path: string): void {
  try {
    checkJsonStorable(v, path);
  } catch (err) {
    throw toConnectError(err);
  }
}

/** An RFC 3339 timestamp, as the proto JSON decoder reads it; the error names the field. */
function checkTimestamp(v: string, path: string): void {
  try {
    fromJson(TimestampSchema, v);
  } catch {
    throw invalidField(path, `must be an RFC 3339 timestamp such as "2030-01-02T03:04:05Z", got ${JSON.stringify(v.slice(0, 64))}`);
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Finds a field by JSON name or proto name, as the proto JSON parser does. */
export function fieldByJsonKey(desc: DescMessage, key: string): DescField | undefined {
  let byKey = fieldKeys.get(desc);
  if (!byKey) {
    byKey = new Map<string, DescField>();
    for (const f of desc.fields) byKey.set(f.name, f);
    for (const f of desc.fields) byKey.set(f.jsonName, f); // the JSON name wins a clash
    fieldKeys.set(desc, byKey);
  }
  return byKey.get(key);
}
const fieldKeys = new WeakMap<DescMessage, Map<string, DescField>>();

/**
 * Checks a JSON value against a message: it must be an object, every key must name a field
 * (unknown fields are rejected), and every value must have the JSON type of its field.
 * `path` is the JSON path used in errors (`items[3].scopeId`). Null is accepted anywhere
 * (proto JSON reads it as the default).
 */
export function checkMessage(desc: DescMessage, value: unknown, path = '', stringsStorable = false): void {
  if (!passes(desc, value, 0, stringsStorable)) checkMessageFully(desc, value, path);
}

/**
 * Whether every string `JSON.parse` makes of this UTF-8 body is storable (see stringProblem): a
 * NUL or a lone surrogate can only come from a `\u` escape (raw control characters are not
 * JSON, and decoding replaces malformed UTF-8 with U+FFFD), so a body without a backslash has
 * none and the quick check need not look at its strings.
 */
export function jsonStringsStorable(body: Uint8Array): boolean {
  return body.indexOf(0x5c) === -1;
}

/** checkMessage without the quick answer (exported for the test that compares the two). */
export function checkMessageFully(desc: DescMessage, value: unknown, path = ''): void {
  if (!isObject(value)) {
    throw invalidField(path, path ? `must be an object, got ${jsonType(value)}` : `request body must be a JSON object, got ${jsonType(value)}`);
  }
  let set: Map<string, string> | undefined; // oneof -> the key of its member already set
  for (const key in value) {
    const field = fieldByJsonKey(desc, key);
    const p = join(path, key);
    if (!field) throw invalidField(p, `unknown field "${key}" of ${desc.typeName}`);
    const v = value[key];
    if (v === null) continue;
    if (field.oneof) {
      const other = (set ??= new Map()).get(field.oneof.name);
      if (other !== undefined) {
        throw invalidField(p, `only one of ${field.oneof.fields.map((f) => f.jsonName).join(', ')} may be set; ${other} is set too`);
      }
      set.set(field.oneof.name, key);
    }
    checkField(field, v, p);
  }
}

/**
 * The quick answer of checkMessage for the common shapes, with no path strings and no error
 * objects: true only when every key names a field and every value is a string, boolean, integer
 * number or plain message that checkMessage would accept. Anything else (enums, lists, maps,
 * well-known types, integers as strings, floats) answers false, and checkMessage then checks
 * it the long way, naming the field that fails. A decision request is all strings and nested
 * messages: this halves what checking costs on the decision path. `stringsStorable`: the
 * caller knows no string can hold what stringProblem refuses (jsonStringsStorable).
 */
export function passes(desc: DescMessage, value: unknown, depth = 0, stringsStorable = false): boolean {
  if (!isObject(value) || depth > 8 || WKT_JSON[desc.typeName] !== undefined) return false;
  for (const key in value) {
    const field = fieldByJsonKey(desc, key);
    if (field === undefined) return false;
    const v = value[key];
    if (v === null) continue;
    if (field.oneof) return false; // which members are set is checked the long way
    if (field.fieldKind === 'message') {
      if (!passes(field.message, v, depth + 1, stringsStorable)) return false;
    } else if (field.fieldKind !== 'scalar' || !scalarPasses(field.scalar, v, stringsStorable)) {
      return false;
    }
  }
  return true;
}

function scalarPasses(type: ScalarType, v: unknown, storable: boolean): boolean {
  switch (type) {
    case ScalarType.STRING:
      return typeof v === 'string' && (storable || stringProblem(v) === null);
    case ScalarType.BOOL:
      return typeof v === 'boolean';
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return typeof v === 'number' && Number.isSafeInteger(v);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return typeof v === 'number' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
    default:
      return false;
  }
}

function enumNames(field: DescField): ReadonlySet<string> {
  const e = field.fieldKind === 'enum' ? field.enum : field.fieldKind === 'list' && field.listKind === 'enum' ? field.enum : field.fieldKind === 'map' && field.mapKind === 'enum' ? field.enum : undefined;
  return new Set(e ? e.values.map((x) => x.name) : []);
}

function checkField(field: DescField, v: unknown, p: string): void {
  switch (field.fieldKind) {
    case 'scalar':
      return checkScalar(field.scalar, v, p);
    case 'enum':
      return checkEnum(v, p, enumNames(field));
    case 'message':
      return checkMessageValue(field.message, v, p);
    case 'list': {
      if (!Array.isArray(v)) throw invalidField(p, `must be an array, got ${jsonType(v)}`);
      // Before the items are looked at: a huge array costs nothing more than its length check.
      const max = maxItemsOf(field);
      if (v.length > max) throw toConnectError(limitExceeded(p, `holds ${v.length} items; at most ${max} are allowed`));
      v.forEach((item, i) => {
        const ip = `${p}[${i}]`;
        if (item === null && !(field.listKind === 'message' && field.message.typeName === 'google.protobuf.Value')) {
          throw invalidField(ip, 'must not be null');
        }
        if (field.listKind === 'scalar') checkScalar(field.scalar, item, ip);
        else if (field.listKind === 'enum') checkEnum(item, ip, enumNames(field));
        else checkMessageValue(field.message, item, ip);
      });
      return;
    }
    case 'map': {
      if (!isObject(v)) throw invalidField(p, `must be an object, got ${jsonType(v)}`);
      for (const [k, item] of Object.entries(v)) {
        const ip = `${p}.${k}`;
        if (field.mapKind === 'scalar') checkScalar(field.scalar, item, ip);
        else if (field.mapKind === 'enum') checkEnum(item, ip, enumNames(field));
        else checkMessageValue(field.message, item, ip);
      }
      return;
    }
  }
}

/**
 * Converts a path or query string to the JSON value of a field, by the field's type: integers
 * from decimal strings, booleans from `true`/`false`, strings as they are.
 */
export function valueFromString(field: DescField, raw: string, name: string): JsonValue {
  let type: ScalarType | 'enum' | 'string';
  if (field.fieldKind === 'scalar' || (field.fieldKind === 'list' && field.listKind === 'scalar')) {
    type = field.scalar;
  } else if (field.fieldKind === 'enum' || (field.fieldKind === 'list' && field.listKind === 'enum')) {
    type = 'enum';
  } else if ((field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message')) && WKT_JSON[field.message.typeName] !== undefined) {
    const wkt = WKT_JSON[field.message.typeName];
    if (field.message.typeName === 'google.protobuf.Timestamp') checkTimestamp(raw, name);
    if (wkt === 'string') type = 'string';
    else if (typeof wkt === 'number') type = wkt;
    else throw invalidField(name, 'cannot be set from a query parameter');
  } else {
    throw invalidField(name, 'cannot be set from a query parameter; send it in the body');
  }
  switch (type) {
    case 'string':
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return raw;
    case 'enum':
      if (/^-?\d+$/.test(raw)) return Number(raw);
      checkEnum(raw, name, enumNames(field));
      return raw;
    case ScalarType.BOOL:
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      throw invalidField(name, `must be true or false, got ${JSON.stringify(raw)}`);
    default:
      if (INT32_TYPES.has(type)) {
        checkScalar(type, raw, name);
        return Number(raw.trim());
      }
      if (INT64_TYPES.has(type)) {
        checkScalar(type, raw, name);
        return raw.trim();
      }
      checkScalar(type, raw, name);
      return Number.isNaN(Number(raw)) ? raw : Number(raw);
  }
}

/**
 * Sets a value at a field path into a proto-JSON object (using JSON names), creating
 * intermediate objects. Throws `invalid_argument` if the body already carries a different
 * value there.
 */
export function setAtPath(target: JsonObject, fields: readonly DescField[], value: JsonValue, name: string): void {
  let obj = target;
  for (let i = 0; i < fields.length - 1; i++) {
    const f = fields[i];
    const key = existingKey(obj, f);
    const next = obj[key];
    if (next === undefined || next === null) {
      const created: JsonObject = {};
      obj[key] = created;
      obj = created;
    } else if (isObject(next)) {
      obj = next;
    } else {
      throw invalidField(name, `conflicts with the body's ${f.jsonName}`);
    }
  }
  const last = fields[fields.length - 1];
  const key = existingKey(obj, last);
  const prior = obj[key];
  if (prior !== undefined && prior !== null && JSON.stringify(prior) !== JSON.stringify(value)) {
    throw invalidField(name, `the body's ${last.jsonName} differs from the value in the URL`);
  }
  obj[key] = value;
}

function existingKey(obj: JsonObject, f: DescField): string {
  if (f.name !== f.jsonName && Object.prototype.hasOwnProperty.call(obj, f.name)) return f.name;
  return f.jsonName;
}

/**
 * Rewrites, in place, every 64-bit integer field of a proto-JSON value (written as a string
 * by the proto JSON rules) as a JSON number, walking the message descriptor. Struct, Value
 * and other free-form JSON are left alone.
 */
/** Whether any message reachable from `desc` has a 64-bit integer field (cached per type). */
export function hasInt64(desc: DescMessage, seen = new Set<string>()): boolean {
  const hit = int64Cache.get(desc.typeName);
  if (hit !== undefined) return hit;
  if (seen.has(desc.typeName) || WKT_JSON[desc.typeName] !== undefined) return false;
  seen.add(desc.typeName);
  const found = desc.fields.some((f) => {
    if (f.fieldKind === 'scalar') return INT64_TYPES.has(f.scalar);
    if (f.fieldKind === 'message') return hasInt64(f.message, seen);
    if (f.fieldKind === 'list') return f.listKind === 'scalar' ? INT64_TYPES.has(f.scalar) : f.listKind === 'message' && hasInt64(f.message, seen);
    if (f.fieldKind === 'map') return (f.mapKind === 'scalar' && INT64_TYPES.has(f.scalar)) || (f.mapKind === 'message' && hasInt64(f.message, seen));
    return false;
  });
  int64Cache.set(desc.typeName, found);
  return found;
}
const int64Cache = new Map<string, boolean>();

export function int64ToNumbers(desc: DescMessage, value: JsonValue): JsonValue {
  if (!isObject(value)) return value;
  const wkt = WKT_JSON[desc.typeName];
  if (wkt !== undefined) return value;
  for (const field of desc.fields) {
    const key = field.jsonName;
    const v = value[key];
    if (v === undefined || v === null) continue;
    switch (field.fieldKind) {
      case 'scalar':
        if (INT64_TYPES.has(field.scalar)) value[key] = toNumber(v);
        break;
      case 'message':
        value[key] = messageValue(field.message, v);
        break;
      case 'list':
        if (!Array.isArray(v)) break;
        if (field.listKind === 'scalar' && INT64_TYPES.has(field.scalar)) value[key] = v.map(toNumber);
        else if (field.listKind === 'message') value[key] = v.map((x) => messageValue(field.message, x));
        break;
      case 'map':
        if (!isObject(v)) break;
        for (const [k, item] of Object.entries(v)) {
          if (field.mapKind === 'scalar' && INT64_TYPES.has(field.scalar)) v[k] = toNumber(item);
          else if (field.mapKind === 'message') v[k] = messageValue(field.message, item);
        }
        break;
    }
  }
  return value;
}

function messageValue(desc: DescMessage, v: JsonValue): JsonValue {
  if (desc.typeName === 'google.protobuf.Int64Value' || desc.typeName === 'google.protobuf.UInt64Value') return toNumber(v);
  return int64ToNumbers(desc, v);
}

function toNumber(v: JsonValue): JsonValue {
  if (typeof v !== 'string' || !/^-?\d+$/.test(v)) return v;
  return Number(v);
}
