/** A request as HTTP: its REST form (the route's verb, path, query and body) or its Connect form. */
import { Raw, getAt, isObj, serialize, setAt, type Json, type MethodInfo, type Payload } from './generator.js';

export interface HttpRequest {
  method: string;
  path: string;
  /** JSON text, or the protobuf message on binary surfaces. */
  body?: string | Uint8Array;
  /** gRPC and gRPC-Web: the whole request body, sent as it is (a mutated envelope) instead of `body` in one. */
  envelope?: Uint8Array;
}

/** Percent-encodes like encodeURIComponent, but a lone surrogate becomes its 3 WTF-8 bytes. */
export function pctEncode(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(s[i]);
  }
  return out;
}

const asText = (v: Json): string => (typeof v === 'string' ? v : v instanceof Raw ? v.text : serialize(v));

export function toRest(m: MethodInfo, payload: Payload): HttpRequest {
  let rest: Json = payload.tree;
  const parts: string[] = [];
  for (const seg of m.route.segments) {
    if (seg.kind === 'literal') {
      parts.push(seg.value);
      continue;
    }
    const p = seg.fields.map((f) => f.jsonName);
    const v = getAt(rest, p);
    parts.push(v === undefined ? '' : pctEncode(asText(v)));
    if (isObj(rest)) rest = setAt(rest, p, undefined);
  }
  let path = '/' + parts.join('/');
  const body = m.route.body;
  if (body.kind === 'none') {
    const query: string[] = [];
    const add = (prefix: string, v: Json | undefined) => {
      if (v === undefined) return;
      if (isObj(v)) for (const [k, x] of Object.entries(v)) add(prefix ? `${prefix}.${k}` : k, x);
      else if (Array.isArray(v)) for (const x of v) query.push(`${pctEncode(prefix)}=${pctEncode(asText(x))}`);
      else query.push(`${pctEncode(prefix)}=${pctEncode(asText(v))}`);
    };
    if (isObj(rest)) add('', rest);
    else if (rest !== undefined) query.push(`body=${pctEncode(asText(rest))}`);
    if (query.length) path += `?${query.join('&')}`;
    return { method: m.route.verb, path };
  }
  if (payload.rawBody !== undefined) return { method: m.route.verb, path, body: payload.rawBody };
  if (body.kind === 'field') {
    const inner = isObj(rest) ? rest[body.field.jsonName] : rest;
    const others = isObj(rest) ? Object.keys(rest).filter((k) => k !== body.field.jsonName) : [];
    if (others.length && isObj(rest)) {
      // A field outside the body (a mutation's unknown field) goes to the query, like any other.
      path += `?${others.map((k) => `${pctEncode(k)}=${pctEncode(asText(rest[k] ?? ''))}`).join('&')}`;
    }
    return { method: m.route.verb, path, body: inner === undefined ? '' : serialize(inner) };
  }
  return { method: m.route.verb, path, body: serialize(rest) };
}

export function toConnect(m: MethodInfo, payload: Payload): HttpRequest {
  return {
    method: 'POST',
    path: `/${m.method.parent.typeName}/${m.method.name}`,
    body: payload.rawBody ?? serialize(payload.tree),
  };
}
