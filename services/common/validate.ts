import type { JsonObject } from '@bufbuild/protobuf';
import { invalid, limitExceeded } from './errors.js';
import { isValidClientId, type Namespace } from './ids.js';

/** Contract §6 limits. */
export const MAX_STRING = 256;
export const MAX_JSON_BYTES = 16 * 1024;
/** Items of a batch, and of any list of a request without its own `max_items` (transport/guard.ts). */
export const MAX_BATCH = 1000;

/**
 * A required, non-empty string of at most 256 characters. Like every helper here it takes
 * `null` for absent: proto3 JSON's null means the field's default, and JSON read without a
 * message decoder (the lean decision path) hands it over as is.
 */
export function requireString(value: string | null | undefined, field: string, max = MAX_STRING): string {
  if (value === undefined || value === null || value === '') throw invalid(field, 'is required');
  return optionalString(value, field, max) as string;
}

/** An optional string: at most 256 characters; '', null and undefined all mean absent. */
export function optionalString(value: string | null | undefined, field: string, max = MAX_STRING): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value.length > max) throw limitExceeded(field, `is longer than ${max} characters`);
  return value;
}

/** One of the allowed spellings; `fallback` when absent. */
export function oneOf<T extends string>(value: string | null | undefined, allowed: readonly T[], field: string, fallback?: T): T {
  if (value === undefined || value === null || value === '') {
    if (fallback !== undefined) return fallback;
    throw invalid(field, `is required (one of ${allowed.join(', ')})`);
  }
  if (!(allowed as readonly string[]).includes(value)) throw invalid(field, `must be one of ${allowed.join(', ')}, got "${value.slice(0, 64)}"`);
  return value as T;
}

/** A JSON object of at most 16 KiB serialized; undefined stays undefined. */
export function jsonObject(value: JsonObject | null | undefined, field: string, max = MAX_JSON_BYTES): JsonObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (Buffer.byteLength(JSON.stringify(value)) > max) throw limitExceeded(field, `is larger than ${max} bytes of JSON`);
  return value;
}

/** A client-supplied id, or undefined when absent. */
export function clientId(ns: Namespace, value: string | undefined, field: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!isValidClientId(ns, value)) throw invalid(field, `must be "${ns}_" followed by 1-64 of [A-Za-z0-9_-]`);
  return value;
}

/** A batch holds at least one item (the request guard bounds it at MAX_BATCH). */
export function batchItems<T>(items: T[], field = 'items'): T[] {
  if (items.length === 0) throw invalid(field, 'must hold at least one item');
  return items;
}
