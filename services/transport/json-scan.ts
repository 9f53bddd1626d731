/**
 * JSON request bodies, parsed within the wire limits (request-limits.ts). `JSON.parse` builds the
 * whole value before anything can bound it (an object of 200,000 keys costs ~100 ms, checking it
 * after seconds), and decoding bytes as UTF-8 silently replaces malformed sequences with U+FFFD.
 * So a body is first checked to be UTF-8 (natively), then, when it is large enough to matter,
 * scanned byte by byte (strings skipped with `indexOf`) for its nesting, the entries of each
 * object and array and its values in all; only a body within them is parsed. The scan stops at
 * the first limit passed: a refused body costs at most the bytes before it.
 */
import { isUtf8 } from 'node:buffer';
import type { DescMessage, JsonValue } from '@bufbuild/protobuf';
import type { ConnectError } from '@connectrpc/connect';
import { DomainError } from '../common/errors.js';
import { toConnectError } from './errors.js';
import { MAX_JSON_DEPTH, MAX_JSON_ENTRIES, MAX_REQUEST_VALUES } from './request-limits.js';
import { jsonValueField, rootOf } from './field-paths.js';

/**
 * Bodies up to this size are parsed without the scan: they cannot hold more than MAX_JSON_ENTRIES
 * values, and parsing them costs less than scanning them would save. Their nesting is checked
 * after parsing (the request guard).
 */
export const SCAN_ABOVE_BYTES = 16 * 1024;

/** Nesting a JSON body may have: a JSON value's own, under the messages that hold it. */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * What a JSON body is, for the fields its errors name: the request message, and the field the body
 * fills when it is not the whole message (a REST route's `body: "items"`).
 */
export interface JsonBodyOf {
  desc: DescMessage;
  field?: string;
}

/**
 * The JSON value of a request body, undefined when it is empty (or only whitespace). Throws
 * `invalid_argument` naming the field for malformed UTF-8, a limit passed (reason LIMIT) or
 * malformed JSON.
 */
export function parseJsonBody(bytes: Uint8Array, within?: JsonBodyOf): JsonValue | undefined {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const named = (path: string) => (within?.field ? joinPath(within.field, path) : path);
  if (!isUtf8(buf)) {
    const at = firstInvalidUtf8(buf);
    throw fieldError(named(pathAt(buf, at)), 'invalid', 'must be valid UTF-8 (the body holds a malformed byte sequence)');
  }
  if (buf.length > SCAN_ABOVE_BYTES) {
    const refusal = scanLimits(buf);
    if (refusal !== undefined) {
      let path = named(refusal.path);
      // Too deep: named by the field that holds the JSON value (its full path would be as deep).
      if (refusal.deep) path = within ? jsonValueField(within.desc, path) : rootOf(path);
      throw fieldError(path, 'limit', refusal.message);
    }
  }
  const text = buf.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    throw fieldError('', 'invalid', `is not valid JSON: ${(err as Error).message}`);
  }
}

function fieldError(path: string, kind: 'invalid' | 'limit', message: string): ConnectError {
  return toConnectError(new DomainError(kind, path ? `${path}: ${message}` : `the request body ${message}`, path || undefined));
}

/** The first limit the body passes, if any: nesting, entries of one object or array, values in all. */
function scanLimits(buf: Buffer): { path: string; message: string; deep: boolean } | undefined {
  const entries = new Int32Array(MAX_BODY_DEPTH + 2);
  let depth = 0;
  let values = 1;
  // Just after `{` or `[`: the next token decides whether the container is empty.
  let fresh = false;
  const len = buf.length;
  for (let i = 0; i < len; i++) {
    const c = buf[i];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (fresh) {
      fresh = false;
      if (c !== 0x7d && c !== 0x5d) {
        entries[depth] = 1;
        values++;
      }
    }
    switch (c) {
      case QUOTE:
        i = stringEnd(buf, i);
        break;
      case 0x7b: // {
      case 0x5b: // [
        if (++depth > MAX_BODY_DEPTH) return { path: pathAt(buf, i), message: `nests deeper than ${MAX_BODY_DEPTH} levels`, deep: true };
        entries[depth] = 0;
        fresh = true;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        if (depth > 0) depth--;
        break;
      case 0x2c: // ,
        if (++entries[depth] > MAX_JSON_ENTRIES) return { path: pathAt(buf, i, true), message: `holds more than ${MAX_JSON_ENTRIES} entries`, deep: false };
        if (++values > MAX_REQUEST_VALUES) return { path: '', message: `holds more than ${MAX_REQUEST_VALUES} values in all`, deep: false };
        break;
    }
  }
  return undefined;
}

function joinPath(field: string, path: string): string {
  return path === '' ? field : path.startsWith('[') ? `${field}${path}` : `${field}.${path}`;
}

/** The index of the quote that closes the string opening at `open` (the last index when none does). */
function stringEnd(buf: Buffer, open: number): number {
  let i = open;
  for (;;) {
    const q = buf.indexOf(QUOTE, i + 1);
    if (q === -1) return buf.length - 1;
    let slashes = 0;
    for (let j = q - 1; j > open && buf[j] === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return q;
    i = q;
  }
}

/**
 * The JSON path (`requests[3].context.a`) of the value holding byte `at`, as the body's own keys
 * name it; with `container`, of the object or array holding it. Only called for an error, so it
 * may take its time.
 */
export function pathAt(buf: Buffer, at: number, container = false): string {
  const stack: Level[] = [];
  let lastString: [number, number] | undefined;
  for (let i = 0; i < at && i < buf.length; i++) {
    const c = buf[i];
    const top = stack[stack.length - 1];
    switch (c) {
      case QUOTE: {
        const end = stringEnd(buf, i);
        if (end >= at) return render(buf, stack, container);
        lastString = [i + 1, end];
        i = end;
        break;
      }
      case 0x3a: // : the string before it was a key
        if (top && lastString) top.key = lastString;
        break;
      case 0x7b:
      case 0x5b:
        stack.push({ array: c === 0x5b, index: 0, key: undefined });
        break;
      case 0x7d:
      case 0x5d:
        stack.pop();
        break;
      case 0x2c:
        if (top) {
          top.index++;
          top.key = undefined;
        }
        break;
    }
  }
  return render(buf, stack, container);
}

/** A container on the way to a byte: an array's index, or an object's key (where its bytes lie). */
interface Level {
  array: boolean;
  index: number;
  key: [number, number] | undefined;
}

function keyText(buf: Buffer, [from, to]: [number, number]): string {
  const raw = buf.toString('utf8', from, to);
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

function render(buf: Buffer, stack: Level[], container: boolean): string {
  let path = '';
  for (const f of container ? stack.slice(0, -1) : stack) {
    if (f.array) path += `[${f.index}]`;
    else if (f.key !== undefined) {
      const key = keyText(buf, f.key);
      path = path === '' ? key : `${path}.${key}`;
    } else break;
  }
  return path.length <= 160 ? path : `${path.slice(0, 100)}…${path.slice(-50)}`;
}

/** The offset of the first byte that does not begin or continue a valid UTF-8 sequence. */
function firstInvalidUtf8(buf: Buffer): number {
  for (let i = 0; i < buf.length; ) {
    const b = buf[i];
    let n: number;
    let min: number;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      min = 0x10000;
    } else {
      return i;
    }
    let cp = b & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const x = buf[i + k];
      if (x === undefined || (x & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (x & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates (CESU-8) and code points past U+10FFFF are not UTF-8.
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return i;
    i += n + 1;
  }
  return buf.length;
}
