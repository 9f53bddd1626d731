import type { JsonObject } from '@bufbuild/protobuf';
import { invalid, limitExceeded } from '../common/errors.js';
import { isValidClientId, type Namespace } from '../common/ids.js';

/** Contract §6 limits. */
export const MAX_STRING = 256;
export const MAX_JSON_BYTES = 16 * 1024;
export const MAX_BATCH = 1000;

/** A required, non-empty string of at most 256 characters. */
export function requireString(value: string | undefined, field: string, max = MAX_STRING): string {
  if (value === undefined || value === '') throw invalid(field, 'is required');
  return optionalString(value, field, max) as string;
}

/** An optional string: at most 256 characters; '' and undefined both mean absent. */
export function optionalString(value: string | undefined, field: string, max = MAX_STRING): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length > max) throw limitExceeded(field, `is longer than ${max} characters`);
  return value;
}

/** One of the allowed spellings; `fallback` when absent. */
export function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], field: string, fallback?: T): T {
  if (value === undefined || value === '') {
    if (fallback !== undefined) return fallback;
    throw invalid(field, `is required (one of ${allowed.join(', ')})`);
  }
  if (!(allowed as readonly string[]).includes(value)) throw invalid(field, `must be one of ${allowed.join(', ')}, got "${value.slice(0, 64)}"`);
  return value as T;
}

/** A JSON object of at most 16 KiB serialized; undefined stays undefined. */
export function jsonObject(value: JsonObject | undefined, field: string, max = MAX_JSON_BYTES): JsonObject | undefined {
  if (value === undefined) return undefined;
  if (Buffer.byteLength(JSON.stringify(value)) > max) throw limitExceeded(field, `is larger than ${max} bytes of JSON`);
  return value;
}

/** A client-supplied id, or undefined when absent. */
export function clientId(ns: Namespace, value: string | undefined, field: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!isValidClientId(ns, value)) throw invalid(field, `must be "${ns}_" followed by 1-64 of [A-Za-z0-9_-]`);
  return value;
}

/** A batch of 1..1000 items. */
export function batchItems<T>(items: T[], field = 'items'): T[] {
  if (items.length === 0) throw invalid(field, 'must hold at least one item');
  if (items.length > MAX_BATCH) throw limitExceeded(field, `holds ${items.length} items; at most ${MAX_BATCH} are allowed`);
  return items;
}
