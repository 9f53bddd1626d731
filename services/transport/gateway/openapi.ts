/**
 * An OpenAPI 3.1 document of the REST surface, built from the same route table the gateway
 * serves (`RouteTable`, compiled from the `google.api.http` options), so the two cannot
 * disagree. Schemas are the proto JSON form of the messages as the gateway writes and reads
 * them: lowerCamelCase names, 64-bit integers as JSON numbers in responses (strings or numbers
 * in requests), `body: "items"` as a bare array, `response_body` unwrapped, `next_cursor` moved
 * to the `x-next-cursor` header, and errors as `{code, message, details}`.
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { MethodOptions_IdempotencyLevel } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { codeToHttpStatus, codeToString } from '@connectrpc/connect/protocol-connect';
import { ErrorInfoSchema, ErrorReasonSchema } from '../../../gen/authz/v1/error_reason_pb.js';
import { maxItemsOf } from '../guard.js';
import { RouteTable, type Route } from './routes.js';

/** A JSON Schema (2020-12) or OpenAPI object; plain JSON. */
export type Json = { [key: string]: unknown };

/** The doc comment of a descriptor, if the caller knows the proto sources; undefined otherwise. */
export type Describe = (desc: DescService | DescMethod | DescMessage | DescField | DescEnum) => string | undefined;

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

/** Who may call a method: its tier's name and the kinds of API key it admits (`x-access-tier`). */
export type AccessOf = (method: DescMethod) => { tier: string; kinds: readonly string[] } | undefined;

type Mode = 'request' | 'response';

const INT32 = new Set([ScalarType.INT32, ScalarType.SINT32, ScalarType.SFIXED32]);
const UINT32 = new Set([ScalarType.UINT32, ScalarType.FIXED32]);
const INT64 = new Set([ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64]);
const UINT64 = new Set([ScalarType.UINT64, ScalarType.FIXED64]);

/** Well-known types, inlined in their JSON form. */
const WKT: Record<string, (mode: Mode) => Json> = {
  'google.protobuf.Timestamp': () => ({ type: 'string', format: 'date-time' }),
  'google.protobuf.Duration': () => ({ type: 'string', pattern: '^-?[0-9]+(\\.[0-9]{1,9})?s$' }),
  'google.protobuf.FieldMask': () => ({ type: 'string' }),
  'google.protobuf.Struct': () => ({ type: 'object' }),
  'google.protobuf.Value': () => ({}),
  'google.protobuf.ListValue': () => ({ type: 'array' }),
  'google.protobuf.Empty': () => ({ type: 'object' }),
  'google.protobuf.Any': () => ({ type: 'object', properties: { '@type': { type: 'string' } }, required: ['@type'] }),
  'google.protobuf.DoubleValue': (m) => scalarSchema(ScalarType.DOUBLE, m),
  'google.protobuf.FloatValue': (m) => scalarSchema(ScalarType.FLOAT, m),
  'google.protobuf.Int64Value': (m) => scalarSchema(ScalarType.INT64, m),
  'google.protobuf.UInt64Value': (m) => scalarSchema(ScalarType.UINT64, m),
  'google.protobuf.Int32Value': (m) => scalarSchema(ScalarType.INT32, m),
  'google.protobuf.UInt32Value': (m) => scalarSchema(ScalarType.UINT32, m),
  'google.protobuf.BoolValue': (m) => scalarSchema(ScalarType.BOOL, m),
  'google.protobuf.StringValue': (m) => scalarSchema(ScalarType.STRING, m),
  'google.protobuf.BytesValue': (m) => scalarSchema(ScalarType.BYTES, m),
};

/**
 * A scalar's JSON form. 64-bit integers: the gateway writes them as numbers, and reads numbers
 * or decimal strings (the proto JSON form, for values past 2^53).
 */
function scalarSchema(type: ScalarType, mode: Mode): Json {
  if (type === ScalarType.STRING) return { type: 'string' };
  if (type === ScalarType.BYTES) return { type: 'string', contentEncoding: 'base64' };
  if (type === ScalarType.BOOL) return { type: 'boolean' };
  if (INT32.has(type)) return { type: 'integer', format: 'int32' };
  if (UINT32.has(type)) return { type: 'integer', minimum: 0, maximum: 4294967295 };
  if (INT64.has(type) || UINT64.has(type)) {
    const unsigned = UINT64.has(type);
    const format = unsigned ? 'uint64' : 'int64';
    const min = unsigned ? { minimum: 0 } : {};
    if (mode === 'response') return { type: 'integer', format, ...min };
    return { type: ['integer', 'string'], format, pattern: unsigned ? '^[0-9]+$' : '^-?[0-9]+$', ...min };
  }
  return { type: 'number', format: type === ScalarType.FLOAT ? 'float' : 'double' };
}

/** Proto JSON writes enum names; it reads names or numbers. */
function enumSchema(e: DescEnum, mode: Mode): Json {
  const names = { type: 'string', enum: e.values.map((v) => v.name) };
  return mode === 'response' ? names : { anyOf: [names, { type: 'integer', format: 'int32' }] };
}

/** Component names: the type name without the `authz.v1.` package. */
const baseName = (typeName: string) => typeName.replace(/^authz\.v1\./, '');

/**
 * Builds the schemas of the messages reached from the routes. A message gets one component
 * per direction it is used in; where both renderings are equal they share the message's name,
 * else the request form is `<Name>Input`.
 */
class Schemas {
  private readonly built = new Map<string, Json>(); // key: `${mode}:${typeName}`
  private readonly messages = new Map<string, DescMessage>();

  constructor(private readonly describe: Describe) {}

  /** A `$ref` to the component of `msg` (or the inlined JSON form of a well-known type). */
  ref(msg: DescMessage, mode: Mode): Json {
    const wkt = WKT[msg.typeName];
    if (wkt) return wkt(mode);
    const key = `${mode}:${msg.typeName}`;
    if (!this.built.has(key)) {
      this.built.set(key, {}); // placeholder: recursive messages refer to themselves
      this.messages.set(msg.typeName, msg);
      this.built.set(key, this.message(msg, mode));
    }
    return { $ref: `#/components/schemas/${key}` };
  }

  /** The schema of a message, inline, with `omit` left out (fields named by proto name). */
  message(msg: DescMessage, mode: Mode, omit: ReadonlySet<string> = new Set()): Json {
    const properties: Json = {};
    const required: string[] = [];
    for (const f of msg.fields) {
      if (omit.has(f.name)) continue;
      properties[f.jsonName] = withDescription(this.field(f, mode), this.describe(f));
      // Responses are written with every implicit-presence field (JSON_OPTIONS.alwaysEmitImplicit);
      // messages, `optional` scalars and oneof members appear only when set.
      if (mode === 'response' && f.fieldKind !== 'message' && !f.oneof && !f.proto.proto3Optional) required.push(f.jsonName);
    }
    const out: Json = { type: 'object', properties };
    if (required.length > 0) out.required = required;
    const oneofs = msg.oneofs.filter((o) => !o.fields.every((f) => f.proto.proto3Optional));
    const notes = oneofs.map((o) => `At most one of ${o.fields.map((f) => `\`${f.jsonName}\``).join(', ')}.`);
    const text = [this.describe(msg), ...notes].filter(Boolean).join('\n\n');
    return withDescription(out, text || undefined);
  }

  field(f: DescField, mode: Mode): Json {
    switch (f.fieldKind) {
      case 'scalar':
        return scalarSchema(f.scalar, mode);
      case 'enum':
        return enumSchema(f.enum, mode);
      case 'message':
        return this.ref(f.message, mode);
      case 'list': {
        const items = f.listKind === 'scalar' ? scalarSchema(f.scalar, mode) : f.listKind === 'enum' ? enumSchema(f.enum, mode) : this.ref(f.message, mode);
        return mode === 'request' ? { type: 'array', items, maxItems: maxItemsOf(f) } : { type: 'array', items };
      }
      case 'map': {
        const value = f.mapKind === 'scalar' ? scalarSchema(f.scalar, mode) : f.mapKind === 'enum' ? enumSchema(f.enum, mode) : this.ref(f.message, mode);
        return { type: 'object', additionalProperties: value };
      }
    }
  }

  /** The components, named, and a function that rewrites internal `$ref`s to those names. */
  finish(): { components: Json; rename: (ref: string) => string } {
    const names = new Map<string, string>();
    const typeNames = [...this.messages.keys()].sort();
    for (const t of typeNames) {
      const req = this.built.get(`request:${t}`);
      const res = this.built.get(`response:${t}`);
      const base = baseName(t);
      if (res) names.set(`response:${t}`, base);
      if (req) names.set(`request:${t}`, res && JSON.stringify(req) !== JSON.stringify(res) ? `${base}Input` : base);
    }
    const prefix = '#/components/schemas/';
    const rename = (ref: string) => (ref.startsWith(prefix) && names.has(ref.slice(prefix.length)) ? prefix + names.get(ref.slice(prefix.length)) : ref);
    const components: Json = {};
    const sorted = [...names.entries()].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    for (const [key, name] of sorted) {
      if (name in components) continue; // request and response share one component
      components[name] = this.built.get(key)!;
    }
    return { components, rename };
  }
}

function withDescription(schema: Json, description: string | undefined): Json {
  if (!description) return schema;
  // A $ref sibling is allowed in 3.1; keep the description beside it.
  return { ...schema, description };
}

/** Path and query parameters of a route, by JSON names (the gateway takes proto names too). */
function parameters(route: Route, describe: Describe): Json[] {
  const out: Json[] = [];
  for (const seg of route.segments) {
    if (seg.kind !== 'variable') continue;
    const last = seg.fields[seg.fields.length - 1];
    out.push(withDescription({ name: jsonPath(seg.fields), in: 'path', required: true, schema: paramSchema(last)! }, describe(last)));
  }
  if (route.body.kind === 'all') return out; // the gateway refuses query parameters then
  const skip = new Set<DescField>(route.body.kind === 'field' ? [route.body.field] : []);
  const bound = route.pathFieldNames;
  const walk = (msg: DescMessage, prefix: DescField[], seen: Set<string>) => {
    for (const f of msg.fields) {
      if (prefix.length === 0 && skip.has(f)) continue;
      const path = [...prefix, f];
      if (bound.has(path.map((x) => x.name).join('.'))) continue;
      if (f.fieldKind === 'message' && WKT[f.message.typeName] === undefined) {
        if (!seen.has(f.message.typeName)) walk(f.message, path, new Set([...seen, f.message.typeName]));
        continue;
      }
      const schema = paramSchema(f);
      if (!schema) continue; // Struct, Value, lists of messages: body only
      const p: Json = { name: jsonPath(path), in: 'query', schema };
      if (f.fieldKind === 'list') Object.assign(p, { style: 'form', explode: true });
      out.push(withDescription(p, describe(f)));
    }
  };
  walk(route.method.input, [], new Set([route.method.input.typeName]));
  return out;
}

const jsonPath = (fields: readonly DescField[]) => fields.map((f) => f.jsonName).join('.');

/** How a path or query value is written: the field's scalar type, as `valueFromString` reads it. */
function paramSchema(f: DescField): Json | undefined {
  const one = (kind: 'scalar' | 'enum' | 'message', scalar?: ScalarType, e?: DescEnum, msg?: DescMessage): Json | undefined => {
    if (kind === 'scalar') return scalarSchema(scalar!, 'response');
    if (kind === 'enum') return enumSchema(e!, 'request');
    const wkt = WKT[msg!.typeName];
    if (!wkt) return undefined;
    const s = wkt('response');
    return s.type === 'string' || s.type === 'integer' || s.type === 'number' || s.type === 'boolean' ? s : undefined;
  };
  switch (f.fieldKind) {
    case 'scalar':
      return one('scalar', f.scalar);
    case 'enum':
      return one('enum', undefined, f.enum);
    case 'message':
      return one('message', undefined, undefined, f.message);
    case 'list': {
      const items = f.listKind === 'scalar' ? one('scalar', f.scalar) : f.listKind === 'enum' ? one('enum', undefined, f.enum) : one('message', undefined, undefined, f.message);
      return items ? { type: 'array', items, maxItems: maxItemsOf(f) } : undefined;
    }
    default:
      return undefined;
  }
}

/** HTTP statuses of error responses, with the Connect codes that map to each. */
function errorStatuses(): Map<number, string[]> {
  const byStatus = new Map<number, string[]>();
  for (const v of Object.values(Code)) {
    if (typeof v !== 'number') continue;
    const status = codeToHttpStatus(v);
    byStatus.set(status, [...(byStatus.get(status) ?? []), codeToString(v)]);
  }
  return new Map([...byStatus.entries()].sort((a, b) => a[0] - b[0]));
}

/** Statuses listed on every operation; the rest fall under `default`. */
const COMMON_STATUSES = [400, 401, 403, 404, 429, 503];

/** Errors and headers, shared by every operation. */
function sharedComponents(): { schemas: Json; responses: Json; headers: Json } {
  const codes = [...errorStatuses().values()].flat();
  const schemas: Json = {
    Error: {
      type: 'object',
      description: 'Every error of the REST surface. `code` is the Connect (gRPC) code; the HTTP status is Connect\'s mapping of it.',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string', enum: codes },
        message: { type: 'string', description: 'Human-readable; names the field at fault. Not for matching: use the detail\'s `reason`.' },
        details: { type: 'array', items: { anyOf: [{ $ref: '#/components/schemas/ErrorInfoDetail' }, { $ref: '#/components/schemas/OtherDetail' }] } },
      },
    },
    ErrorInfoDetail: {
      type: 'object',
      description: `The \`${ErrorInfoSchema.typeName}\` detail, decoded: why the request failed, and which field (a JSON path such as \`items[3].scopeId\`) when one is at fault.`,
      required: ['type', 'reason', 'message'],
      properties: {
        type: { const: ErrorInfoSchema.typeName },
        reason: { type: 'string', enum: ErrorReasonSchema.values.map((v) => v.name) },
        field: { type: 'string' },
        message: { type: 'string' },
      },
    },
    OtherDetail: {
      type: 'object',
      description: 'Any other detail, as Connect sends it (`value`: the message in base64).',
      required: ['type', 'value'],
      properties: { type: { type: 'string' }, value: { type: 'string', contentEncoding: 'base64' }, debug: {} },
    },
  };
  const headers: Json = {
    'x-revision': {
      description: 'The tenant\'s revision after this write (send it as `consistency.minRevision` to read your own write anywhere). Absent on writes that touch no tenant (scope types, platform keys).',
      schema: { type: 'string', pattern: '^[0-9]+$' },
    },
    'x-revision-of-answer': {
      description: 'The tenant revision the answer was computed at.',
      schema: { type: 'string', pattern: '^[0-9]+$' },
    },
    'x-next-cursor': {
      description: 'The `cursor` of the next page; absent on the last page.',
      schema: { type: 'string' },
    },
  };
  const responses: Json = {};
  for (const [status, names] of errorStatuses()) {
    const r: Json = {
      description: `Connect code ${names.map((n) => `\`${n}\``).join(', ')}`,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
    if (status === 401) r.headers = { 'www-authenticate': { schema: { type: 'string' } } };
    responses[String(status)] = r;
  }
  return { schemas, responses, headers };
}

/** Builds the document of the routes the gateway serves for `services`. */
export function openApiDocument(
  services: readonly DescService[],
  info: OpenApiInfo,
  describe: Describe = () => undefined,
  accessOf: AccessOf = () => undefined,
): Json {
  const table = new RouteTable(services);
  const schemas = new Schemas(describe);
  const paths: Record<string, Json> = {};
  const tags = new Map<string, Json>();
  const seenIds = new Map<string, number>();
  const shared = sharedComponents();

  // Declaration order (services, methods, bindings): a stable, readable document.
  const order = new Map<Route, number>();
  let i = 0;
  const byService = new Map<string, DescService>();
  for (const s of services) if (!byService.has(s.typeName)) byService.set(s.typeName, s);
  for (const s of byService.values()) for (const m of s.methods) for (const r of table.routes.filter((x) => x.method === m)) order.set(r, i++);
  const routes = [...table.routes].sort((a, b) => order.get(a)! - order.get(b)!);

  for (const route of routes) {
    const m = route.method;
    const service = m.parent;
    const tag = service.name;
    if (!tags.has(tag)) tags.set(tag, withDescription({ name: tag }, describe(service)));
    const n = seenIds.get(m.name) ?? 0;
    seenIds.set(m.name, n + 1);
    const operationId = n === 0 ? m.name : `${m.name}_${n + 1}`;
    const access = accessOf(m);
    const comment = describe(m);
    const isRead = m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
    const rpc = `gRPC and Connect: \`${service.typeName}/${m.name}\`.`;
    const keys = access ? `API keys: ${access.kinds.map((k) => `\`${k}\``).join(' or ')} (tier \`${access.tier}\`).` : undefined;
    const op: Json = {
      operationId,
      tags: [tag],
      ...(comment ? { summary: firstSentence(comment) } : {}),
      description: [comment, keys, rpc].filter(Boolean).join('\n\n'),
    };
    const params = parameters(route, describe);
    if (params.length > 0) op.parameters = params;
    if (route.body.kind === 'all') {
      op.requestBody = { content: { 'application/json': { schema: schemas.ref(m.input, 'request') } } };
    } else if (route.body.kind === 'field') {
      op.requestBody = { content: { 'application/json': { schema: withDescription(schemas.field(route.body.field, 'request'), describe(route.body.field)) } } };
    }
    const cursor = m.output.fields.find((f) => f.name === 'next_cursor');
    let body: Json;
    if (route.responseBody) body = schemas.field(route.responseBody, 'response');
    else if (cursor) body = schemas.message(m.output, 'response', new Set(['next_cursor']));
    else body = schemas.ref(m.output, 'response');
    const headers: Json = {};
    if (!isRead) headers['x-revision'] = { $ref: '#/components/headers/x-revision' };
    // A read whose `revision` the unwrapped body leaves out sends it as the header instead.
    else if (route.responseBody && m.output.fields.some((f) => f.name === 'revision')) headers['x-revision'] = { $ref: '#/components/headers/x-revision-of-answer' };
    if (cursor) headers['x-next-cursor'] = { $ref: '#/components/headers/x-next-cursor' };
    const responses: Json = {
      '200': {
        description: 'OK',
        ...(Object.keys(headers).length > 0 ? { headers } : {}),
        content: { 'application/json': { schema: body } },
      },
    };
    const statuses = [...COMMON_STATUSES, ...(isRead ? [] : [409])].sort((a, b) => a - b);
    for (const s of statuses) responses[String(s)] = { $ref: `#/components/responses/${s}` };
    responses.default = { description: 'Any other error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    op.responses = responses;
    if (access) op['x-access-tier'] = access.tier;
    const path = route.segments.map((s) => (s.kind === 'literal' ? s.value : `{${jsonPath(s.fields)}}`)).join('/');
    const item = (paths[`/${path}`] ??= {});
    item[route.verb.toLowerCase()] = op;
  }

  const { components, rename } = schemas.finish();
  const doc: Json = {
    openapi: '3.1.0',
    info: { ...info, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
    tags: [...tags.values()],
    security: [{ apiKey: [] }, { bearer: [] }],
    paths,
    components: {
      schemas: { ...components, ...shared.schemas },
      responses: shared.responses,
      headers: shared.headers,
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key (`azk_…`).' },
        bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as a bearer token: `Authorization: Bearer azk_…`.' },
      },
    },
  };
  return renameRefs(doc, rename) as Json;
}

function renameRefs(v: unknown, rename: (ref: string) => string): unknown {
  if (Array.isArray(v)) return v.map((x) => renameRefs(x, rename));
  if (typeof v !== 'object' || v === null) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = k === '$ref' && typeof x === 'string' ? rename(x) : renameRefs(x, rename);
  return out;
}

/** The first sentence of a comment, for an operation's summary. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const m = /^(.+?[.:])(\s|$)/.exec(flat);
  return (m ? m[1] : flat).replace(/[.:]$/, '');
}
