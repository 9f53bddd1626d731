/**
 * An entity change's before and after, field by field: what a change log row says in words a
 * person compares at a glance (`metadata.team: eng → ops`) rather than two JSON documents.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';

export type FieldChange = 'added' | 'removed' | 'changed' | 'unchanged';

export interface FieldDiff {
  /** The field's path: a top-level key, then the keys of nested objects. */
  readonly path: readonly string[];
  readonly change: FieldChange;
  /** Absent when the field was added. */
  readonly before?: JsonValue;
  /** Absent when the field was removed. */
  readonly after?: JsonValue;
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sameValue(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as JsonValue[]).length && a.every((v, i) => sameValue(v, (b as JsonValue[])[i]));
  const ka = Object.keys(a);
  const bo = b as JsonObject;
  return ka.length === Object.keys(bo).length && ka.every((k) => k in bo && sameValue((a as JsonObject)[k], bo[k]));
}

/**
 * Nested objects are opened into their keys (so a metadata edit shows the one key that moved);
 * arrays and scalars are compared whole. An object is kept whole when the other side is not an
 * object, or when it is empty, so that a change of shape reads as one change.
 */
function opens(before: JsonValue | undefined, after: JsonValue | undefined): boolean {
  if (before === undefined) return isObject(after) && Object.keys(after).length > 0;
  if (after === undefined) return isObject(before) && Object.keys(before).length > 0;
  return isObject(before) && isObject(after);
}

function walk(before: JsonObject | undefined, after: JsonObject | undefined, prefix: readonly string[], out: FieldDiff[]): void {
  // The after's order first (the entity as it is now), then keys only the before had.
  const keys = [...Object.keys(after ?? {}), ...Object.keys(before ?? {}).filter((k) => !(after !== undefined && k in after))];
  for (const key of keys) {
    const path = [...prefix, key];
    const was = before !== undefined && key in before ? before[key] : undefined;
    const now = after !== undefined && key in after ? after[key] : undefined;
    if (opens(was, now)) {
      walk(was as JsonObject | undefined, now as JsonObject | undefined, path, out);
    } else if (was === undefined) {
      out.push({ path, change: 'added', after: now });
    } else if (now === undefined) {
      out.push({ path, change: 'removed', before: was });
    } else {
      out.push({ path, change: sameValue(was, now) ? 'unchanged' : 'changed', before: was, after: now });
    }
  }
}

/** Every field of the entity, before and after, each marked added, removed, changed or unchanged. */
export function diffFields(before: JsonObject | undefined, after: JsonObject | undefined): FieldDiff[] {
  const out: FieldDiff[] = [];
  walk(before, after, [], out);
  return out;
}

/** A value as the diff prints it: text as it is, everything else (and the empty text) as JSON. */
export function formatValue(value: JsonValue | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'string' && value !== '') return value;
  return JSON.stringify(value);
}

/** What the change did: `create` (no before), `delete`, or `update`. */
export function changeAction(op: string, before: JsonObject | undefined): 'create' | 'update' | 'delete' {
  if (op === 'delete') return 'delete';
  return before === undefined ? 'create' : 'update';
}

/** Fields that name an entity to a person, in the order they are tried. */
const NAME_FIELDS = ['name', 'externalId', 'key', 'identifier', 'path', 'displayName'] as const;

/** A readable name of the entity (its name, external id, key…), or '' when it has none. */
export function entityName(before: JsonObject | undefined, after: JsonObject | undefined): string {
  const entity = after ?? before;
  if (entity === undefined) return '';
  for (const field of NAME_FIELDS) {
    const v = entity[field];
    if (typeof v === 'string' && v !== '') return v;
  }
  return '';
}
