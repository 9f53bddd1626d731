import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';

/** A timestamp as a person reads it, in their own time zone, with the exact instant on hover. */
export function formatTime(t: Timestamp | undefined): string {
  if (t === undefined) return '';
  return timestampDate(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** A protobuf Struct value (a condition, an entity's before and after) as indented JSON. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}
