/**
 * Calls DecisionService on every surface of a process (REST, Connect JSON, Connect binary,
 * gRPC, gRPC-Web) and reduces each answer to one comparable form, so that a test can require
 * every surface (and both processes) to answer alike: the lean path and connect-node must not
 * drift.
 */
import * as http2 from 'node:http2';
import { expect } from 'vitest';
import { create, toJson, type JsonObject, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { codeFromString } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { trailerFlag, trailerParse } from '@connectrpc/connect/protocol-grpc-web';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import {
  DecisionService, EvaluateBatchResponseSchema, EvaluateRequestSchema, EvaluateResponseSchema, GetEffectivePermissionsResponseSchema,
} from '../../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema, ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';

export const SURFACES = ['rest', 'connect-json', 'connect-binary', 'grpc', 'grpc-web'] as const;
export type Surface = (typeof SURFACES)[number];

/** An answer as every surface can tell it: the response in REST's JSON form, or the error. */
export type Outcome = { ok: JsonValue } | { error: { code: string; message: string; reason: string; field: string } };

type EvaluateInit = MessageInitShape<typeof EvaluateRequestSchema>;

const transports = new Map<string, Transport>();
function transport(baseUrl: string, surface: Exclude<Surface, 'rest'>): Transport {
  const key = `${surface} ${baseUrl}`;
  let t = transports.get(key);
  if (!t) {
    t =
      surface === 'connect-json' ? createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false })
        : surface === 'connect-binary' ? createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: true })
          : surface === 'grpc' ? createGrpcTransport({ baseUrl })
            : createGrpcWebTransport({ baseUrl, httpVersion: '1.1' });
    transports.set(key, t);
  }
  return t;
}

/** JSON with 64-bit integers as numbers, as REST writes them. */
function restForm(schema: typeof EvaluateResponseSchema | typeof EvaluateBatchResponseSchema | typeof GetEffectivePermissionsResponseSchema, message: unknown): JsonValue {
  return JSON.parse(JSON.stringify(toJson(schema, message as never, { alwaysEmitImplicit: true }), (k, v) => (k === 'revision' && typeof v === 'string' ? Number(v) : v)));
}

function errorOf(e: unknown): Outcome {
  const ce = ConnectError.from(e);
  const info = ce.findDetails(ErrorInfoSchema)[0];
  return { error: { code: Code[ce.code], message: ce.rawMessage, reason: ErrorReason[info?.reason ?? 0], field: info?.field ?? '' } };
}

/** The REST error body in the same form. */
function restError(body: { code?: string; message?: string; details?: { reason?: string; field?: string }[] }): Outcome {
  const code = (body.code ?? '').replace(/(^|_)([a-z])/g, (_m, _s: string, c: string) => c.toUpperCase());
  const d = body.details?.[0];
  return { error: { code, message: body.message ?? '', reason: (d?.reason ?? 'ERROR_REASON_UNSPECIFIED').replace(/^ERROR_REASON_/, ''), field: d?.field ?? '' } };
}

/** A REST POST: the body of a success is the response message's JSON as it is (body "*"). */
async function rest(baseUrl: string, path: string, body: unknown, headers: Record<string, string>): Promise<Outcome> {
  const res = await fetch(baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const json = (await res.json()) as JsonObject;
  return res.status === 200 ? { ok: json } : restError(json as never);
}

/** `Evaluate` on one surface, reduced to an Outcome. */
export async function evaluateOn(surface: Surface, baseUrl: string, request: EvaluateInit, headers: Record<string, string> = {}): Promise<Outcome> {
  if (surface === 'rest') return rest(baseUrl, '/evaluate', toJson(EvaluateRequestSchema, create(EvaluateRequestSchema, request)), headers);
  try {
    const r = await createClient(DecisionService, transport(baseUrl, surface)).evaluate(request, { headers });
    return { ok: restForm(EvaluateResponseSchema, r) };
  } catch (e) {
    return errorOf(e);
  }
}

/** `EvaluateBatch` on one surface, reduced to an Outcome. */
export async function evaluateBatchOn(surface: Surface, baseUrl: string, requests: EvaluateInit[], headers: Record<string, string> = {}): Promise<Outcome> {
  if (surface === 'rest') {
    return rest(baseUrl, '/evaluate/batch', { requests: requests.map((r) => toJson(EvaluateRequestSchema, create(EvaluateRequestSchema, r))) }, headers);
  }
  try {
    const r = await createClient(DecisionService, transport(baseUrl, surface)).evaluateBatch({ requests }, { headers });
    return { ok: restForm(EvaluateBatchResponseSchema, r) };
  } catch (e) {
    return errorOf(e);
  }
}

/**
 * `GetEffectivePermissions` on one surface: REST's bare array and `x-revision` header are put
 * back into the response's form.
 */
export async function effectiveOn(surface: Surface, baseUrl: string, q: { subjectId: string; scopeId: string; resourceId?: string }, headers: Record<string, string> = {}): Promise<Outcome> {
  if (surface === 'rest') {
    const params = new URLSearchParams(q as Record<string, string>);
    const res = await fetch(`${baseUrl}/effective-permissions?${params}`, { headers });
    const json = (await res.json()) as JsonValue;
    if (res.status !== 200) return restError(json as never);
    return { ok: { permissions: json, revision: Number(res.headers.get('x-revision')) } };
  }
  try {
    const r = await createClient(DecisionService, transport(baseUrl, surface)).getEffectivePermissions(q, { headers });
    return { ok: restForm(GetEffectivePermissionsResponseSchema, r) };
  } catch (e) {
    return errorOf(e);
  }
}


// ---------------------------------------------------------------------------------------------
// Error classes: one mistake sent raw on every surface (bodies a typed client would never send),
// each answer reduced to its Connect code and `authz.v1.ErrorInfo` detail.

/** One call as each surface sends it. */
export interface RawCall {
  /** REST: the method and path; the body is `json` (or `restBody` when given). */
  rest: { method: string; path: string };
  /** Connect, gRPC and gRPC-Web: the RPC path `/package.Service/Method`. */
  rpc: string;
  /** The request as JSON text: REST, Connect JSON, and gRPC / gRPC-Web (`+json`) when `binary` is absent. */
  json: string;
  /** The request as binary protobuf: Connect binary, gRPC and gRPC-Web (`+proto`). */
  binary?: Uint8Array;
  /** REST's body when it differs from `json`. */
  restBody?: string;
  headers?: Record<string, string>;
}

/** A gRPC / gRPC-Web envelope holding `message`, with `flags` (1: the message is compressed). */
export function envelope(message: Uint8Array, flags = 0): Buffer {
  const framed = Buffer.alloc(5 + message.length);
  framed[0] = flags;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/** The Outcome of a Connect unary error body (JSON, whatever the request's codec). */
function connectErrorBody(body: { code?: string; message?: string; details?: { type: string; value: string }[] }): Outcome {
  const ce = new ConnectError(body.message ?? '', body.code ? codeFromString(body.code) ?? Code.Unknown : Code.Unknown);
  for (const d of body.details ?? []) ce.details.push({ type: d.type, value: Buffer.from(d.value, 'base64') });
  return errorOf(ce);
}

/** A gRPC status (trailers, or headers of a trailers-only answer) as an Outcome. */
function grpcStatus(fields: Headers): Outcome {
  const ce = findTrailerError(fields);
  if (ce) return errorOf(ce);
  if (fields.get('grpc-status') === '0') return { ok: null };
  return { error: { code: 'Unknown', message: `no grpc-status in ${JSON.stringify([...fields])}`, reason: 'UNSPECIFIED', field: '' } };
}

function headersOf(h: http2.IncomingHttpHeaders | Record<string, unknown>): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && v !== undefined) out.set(k, String(v));
  return out;
}

/** A gRPC call over HTTP/2: the status from the trailers (or from a trailers-only answer). */
function grpcCall(baseUrl: string, path: string, type: string, body: Uint8Array, headers: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': type, te: 'trailers', ...headers });
    let status: Outcome | undefined;
    req.on('response', (h, flags) => {
      const http = Number(h[':status']);
      if (http !== 200) status = { error: { code: 'Unknown', message: `HTTP ${http} ${String(h['content-type'])}`, reason: 'UNSPECIFIED', field: '' } };
      else if (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) status = grpcStatus(headersOf(h));
    });
    req.on('trailers', (t) => (status = grpcStatus(headersOf(t))));
    req.on('data', () => undefined);
    req.on('close', () => {
      session.close();
      resolve(status ?? { error: { code: 'Unknown', message: `stream closed without a status (${req.rstCode})`, reason: 'UNSPECIFIED', field: '' } });
    });
    req.on('error', () => undefined);
    req.end(body);
  });
}

/** A gRPC-Web call over HTTP/1.1: the status from the headers (trailers-only) or the trailer frame. */
async function grpcWebCall(baseUrl: string, path: string, type: string, body: Uint8Array, headers: Record<string, string>): Promise<Outcome> {
  const res = await fetch(baseUrl + path, { method: 'POST', headers: { 'content-type': type, 'x-grpc-web': '1', ...headers }, body });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { error: { code: 'Unknown', message: `HTTP ${res.status} ${res.headers.get('content-type')}`, reason: 'UNSPECIFIED', field: '' } };
  if (res.headers.has('grpc-status')) return grpcStatus(res.headers);
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    if (bytes[at] & trailerFlag) return grpcStatus(trailerParse(bytes.subarray(at + 5, at + 5 + length)));
    at += 5 + length;
  }
  return { error: { code: 'Unknown', message: 'no trailers', reason: 'UNSPECIFIED', field: '' } };
}

/**
 * `call` on one surface, reduced to an Outcome (`{ok: null}` for any success). gRPC and gRPC-Web
 * send `binary` as `+proto`, or `json` as `+json` when there is no binary form; Connect binary
 * needs `binary`.
 */
export async function rawCallOn(surface: Surface, baseUrl: string, call: RawCall): Promise<Outcome> {
  const headers = call.headers ?? {};
  if (surface === 'rest' || surface === 'connect-json' || surface === 'connect-binary') {
    const binary = surface === 'connect-binary';
    if (binary && !call.binary) throw new Error('this call has no binary form');
    const res = await fetch(baseUrl + (surface === 'rest' ? call.rest.path : call.rpc), {
      method: surface === 'rest' ? call.rest.method : 'POST',
      headers: { 'content-type': binary ? 'application/proto' : 'application/json', ...headers },
      body: binary ? call.binary : surface === 'rest' ? (call.rest.method === 'GET' ? undefined : (call.restBody ?? call.json)) : call.json,
    });
    const text = await res.text();
    if (res.status === 200) return { ok: null };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { error: { code: 'Unknown', message: `HTTP ${res.status}, not JSON: ${text.slice(0, 100)}`, reason: 'UNSPECIFIED', field: '' } };
    }
    return surface === 'rest' ? restError(body as never) : connectErrorBody(body as never);
  }
  const body = call.binary ? envelope(call.binary) : envelope(Buffer.from(call.json));
  const codec = call.binary ? '+proto' : '+json';
  return surface === 'grpc'
    ? grpcCall(baseUrl, call.rpc, `application/grpc${codec}`, body, headers)
    : grpcWebCall(baseUrl, call.rpc, `application/grpc-web${codec}`, body, headers);
}

/** What an error class must answer: the Connect code (`InvalidArgument`) and the ErrorInfo reason and field. */
export interface Expected { code: string; reason: string; field?: string }

/** One mistake, and what every surface must answer to it. */
export interface ErrorClass {
  name: string;
  call: () => RawCall;
  expect: Expected;
  /** Surfaces that cannot express the mistake, and why. */
  skip?: Partial<Record<Surface, string>>;
  /** Surfaces that answer otherwise by design, and what. */
  except?: Partial<Record<Surface, Expected>>;
}

/** Binary protobuf no decoder accepts: field 15 (in no request), length-delimited, its length a varint that never ends. */
export const MALFORMED_PROTO = new Uint8Array([0x7a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

/**
 * The error classes every process answers alike, for a unary RPC at `rpc` (REST binding `rest`)
 * whose valid request is `valid` (JSON). `bodyLimit` is the process's body limit.
 */
export function transportErrorClasses(opts: {
  rest: { method: string; path: string };
  rpc: string;
  valid: () => Record<string, unknown>;
  headers?: () => Record<string, string>;
  bodyLimit: number;
}): ErrorClass[] {
  const service = opts.rpc.split('/')[1];
  const base = (): Omit<RawCall, 'json'> => ({ rest: opts.rest, rpc: opts.rpc, headers: opts.headers?.() });
  const restUnknown = { code: 'NotFound', reason: 'NOT_FOUND' };
  return [
    {
      name: 'an unknown JSON field',
      call: () => ({ ...base(), json: JSON.stringify({ ...opts.valid(), bogusField: 1 }) }),
      expect: { code: 'InvalidArgument', reason: 'INVALID_FIELD', field: 'bogusField' },
      skip: { 'connect-binary': 'binary protobuf has no unknown-field error: decoders skip unknown field numbers by design' },
    },
    {
      name: 'a malformed body',
      call: () => ({ ...base(), json: '{"scopeId": ', binary: MALFORMED_PROTO }),
      expect: { code: 'InvalidArgument', reason: 'INVALID_FIELD' },
    },
    {
      name: 'a body over the limit',
      call: () => {
        // Valid requests but for their size: JSON after leading whitespace, and binary with an
        // unknown bytes field (number 1000), which decoders skip.
        const pad = Buffer.alloc(opts.bodyLimit + 16, 0x61);
        const binary = Buffer.concat([Buffer.from([0xc2, 0x3e]), varint(pad.length), pad]);
        return { ...base(), json: ' '.repeat(opts.bodyLimit) + JSON.stringify(opts.valid()), binary };
      },
      expect: { code: 'ResourceExhausted', reason: 'LIMIT' },
    },
    {
      name: 'an unknown method',
      call: () => ({ ...base(), rest: { method: 'POST', path: '/no/such/endpoint' }, rpc: `/${service}/NoSuchMethod`, json: '{}', binary: new Uint8Array() }),
      expect: { code: 'Unimplemented', reason: 'UNSPECIFIED' },
      except: { rest: restUnknown },
    },
    {
      name: 'an unknown service',
      call: () => ({ ...base(), rest: { method: 'GET', path: '/no-such-collection' }, rpc: '/nowhere.v1.NoSuchService/Call', json: '{}', binary: new Uint8Array() }),
      expect: { code: 'Unimplemented', reason: 'UNSPECIFIED' },
      except: { rest: restUnknown },
    },
  ];
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/**
 * Runs an error class on every surface that can express it: each must answer the expected code,
 * reason and field (its `except` where it differs by design), with a message.
 */
export async function errorClassOn(baseUrl: string, c: ErrorClass): Promise<Record<string, Outcome>> {
  const out: Record<string, Outcome> = {};
  for (const surface of SURFACES) {
    if (c.skip?.[surface]) continue;
    out[surface] = await rawCallOn(surface, baseUrl, c.call());
  }
  return out;
}

/** The shape an errorClassOn result must have. */
export function expectedOutcomes(c: ErrorClass): Record<string, { error: { code: string; reason: string; field: string; message: unknown } }> {
  const out: Record<string, { error: { code: string; reason: string; field: string; message: unknown } }> = {};
  for (const surface of SURFACES) {
    if (c.skip?.[surface]) continue;
    const e = c.except?.[surface] ?? c.expect;
    out[surface] = { error: { code: e.code, reason: e.reason, field: e.field ?? '', message: expect.stringMatching(/./) } };
  }
  return out;
}
