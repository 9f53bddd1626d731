/**
 * JSON paths of request fields (`items[0].attributes.tags`), as errors name them.
 */
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import { fieldByJsonKey } from './gateway/json.js';

/** The top-level field of a path (`metadata` of `metadata.a.b`). */
export function rootOf(path: string): string {
  const i = path.search(/[.[]/);
  return i === -1 ? path : path.slice(0, i);
}

const JSON_TYPES = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue']);

/**
 * The part of `path` (`items[0].attributes.tags[0][0]…`) that names a field of `desc`, up to the
 * first field holding a JSON value (`items[0].attributes`); the whole path's first field when it
 * leaves the message's fields before reaching one.
 */
export function jsonValueField(desc: DescMessage, path: string): string {
  const segments = path.match(/\[\d+\]|[^.[\]]+/g) ?? [];
  let out = '';
  let message: DescMessage | undefined = desc;
  let mapKeyNext = false;
  for (const seg of segments) {
    if (seg.startsWith('[')) {
      out += seg;
      continue;
    }
    out = out === '' ? seg : `${out}.${seg}`;
    if (mapKeyNext) {
      mapKeyNext = false;
      continue;
    }
    const field: DescField | undefined = message === undefined ? undefined : fieldByJsonKey(message, seg);
    if (field === undefined) return rootOf(path);
    const inner: DescMessage | undefined = field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message') || (field.fieldKind === 'map' && field.mapKind === 'message') ? field.message : undefined;
    if (inner === undefined || JSON_TYPES.has(inner.typeName)) return out;
    mapKeyNext = field.fieldKind === 'map';
    message = inner;
  }
  return out;
}

