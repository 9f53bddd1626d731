/**
 * The request guard: what every request message must satisfy before a handler sees it,
 * whatever surface it came by (REST, Connect JSON or binary, gRPC, gRPC-Web). It refuses what
 * the store or the response encoder cannot take, so that no such input can fail a write half
 * way or after its commit:
 * - strings (fields, map keys, JSON keys and values) hold no NUL (PostgreSQL refuses U+0000 in
 *   text and jsonb) and no lone surrogate (not Unicode: it cannot be stored as UTF-8);
 * - JSON values (`google.protobuf.Struct` fields: metadata, attributes, context, conditions,
 *   match definitions) hold only finite numbers (JSON has no NaN or Infinity; `1e309` parses as
 *   Infinity), nest at most MAX_JSON_DEPTH levels and hold at most MAX_JSON_ENTRIES entries per
 *   object or array (request-limits.ts);
 * - timestamps lie in 0001-01-01 .. 9999-12-31T23:59:59.999Z, the range RFC 3339 can write at the
 *   millisecond precision they are stored at;
 * - a repeated field holds at most its `(authz.v1.max_items)` items, DEFAULT_MAX_ITEMS
 *   without the option.
 * Each refusal is `invalid_argument` naming the field's JSON path (`items[3].metadata.a`).
 */
import { getOption, hasOption, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import type { Interceptor } from '@connectrpc/connect';
import { invalid, limitExceeded } from '../common/errors.js';
import { max_items } from '../../gen/authz/v1/options_pb.js';
import { DEFAULT_MAX_ITEMS, MAX_JSON_DEPTH, MAX_JSON_ENTRIES, MAX_JSON_VALUE_BYTES } from './request-limits.js';

/** The range of timestamps as stored: to the millisecond, 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z. */
const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;

const TIME_RANGE = 'must be a timestamp between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z';

/** Why a time (milliseconds since the epoch) cannot be stored, or null. */
export function timeProblem(ms: number): string | null {
  return ms >= MIN_MS && ms <= MAX_MS ? null : TIME_RANGE;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** In `u` mode a paired surrogate is one code point, so only a lone one is of category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Any surrogate at all: most strings hold none, and this test is cheaper than LONE_SURROGATE's. */
const SURROGATE = /[\ud800-\udfff]/;

/** Why a string cannot be stored, or null. */
export function stringProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain a NUL character (U+0000)';
  if (SURROGATE.test(s) && LONE_SURROGATE.test(s)) return 'must be valid Unicode (it holds a lone surrogate)';
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
 * Checks a JSON value: depth, finite numbers, storable keys and strings. `path` names the value
 * in errors. Depth first, an object's keys before its values and its values last key first (the
 * order of the refusals); recursion is bounded by MAX_JSON_DEPTH, and the path of a value is
 * written only when it is refused.
 */
export function checkJsonValue(value: unknown, path: string): void {
  // The size first (natively): what is over it is refused before its entries are walked.
  if (Buffer.byteLength(JSON.stringify(value) ?? '') > MAX_JSON_VALUE_BYTES) throw limitExceeded(clipPath(path), `is larger than ${MAX_JSON_VALUE_BYTES} bytes of JSON`);
  walkJson(value, 0, [], path);
}

/** Where checkJsonValue is: each level's path is its parent's (as named in errors, clipped) extended, then clipped. */
function pathAt(root: string, at: readonly (string | number)[]): string {
  let p = clipPath(root);
  for (const k of at) p = clipPath(typeof k === 'number' ? `${p}[${k}]` : join(p, k));
  return p;
}

/** checkJsonValue's walk: `at` holds the keys from the root to `v` (pushed and popped, no strings made). */
function walkJson(v: unknown, depth: number, at: (string | number)[], root: string): void {
  if (typeof v === 'string') {
    const problem = stringProblem(v);
    if (problem) throw invalid(pathAt(root, at), problem);
  } else if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw invalid(pathAt(root, at), 'must be a finite number (JSON has no NaN or Infinity; 1e309 is out of range)');
  } else if (v !== null && typeof v === 'object') {
    if (depth >= MAX_JSON_DEPTH) throw limitExceeded(root, `nests deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(v)) {
      if (v.length > MAX_JSON_ENTRIES) throw limitExceeded(pathAt(root, at), `holds more than ${MAX_JSON_ENTRIES} entries`);
      for (let i = 0; i < v.length; i++) {
        at.push(i);
        walkJson(v[i], depth + 1, at, root);
        at.pop();
      }
    } else {
      const keys = Object.keys(v);
      if (keys.length > MAX_JSON_ENTRIES) throw limitExceeded(pathAt(root, at), `holds more than ${MAX_JSON_ENTRIES} entries`);
      for (const k of keys) {
        const problem = stringProblem(k);
        if (problem) throw invalid(join(pathAt(root, at), k), problem);
      }
      for (let i = keys.length - 1; i >= 0; i--) {
        at.push(keys[i]);
        walkJson((v as Record<string, unknown>)[keys[i]], depth + 1, at, root);
        at.pop();
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
      const problem = t.nanos < 0 || t.nanos > 999_999_999 ? TIME_RANGE : timeProblem(ms);
      if (problem) throw invalid(path, problem);
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
