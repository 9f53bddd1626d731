/**
 * The lean path of the decision RPCs: DecisionService's unary calls served straight on
 * node:http/http2, without connect-node's per-call machinery (handler contexts, interceptor
 * chains, async-iterable bodies, Headers objects), which cost far more than the engine's
 * microsecond. It takes:
 * - REST `POST /evaluate`, `POST /evaluate/batch`, `POST /lookup/resources` and
 *   `POST /lookup/subjects` (JSON, no query string);
 * - Connect unary JSON and binary `POST /authz.v1.DecisionService/<Method>`;
 * - gRPC (HTTP/2, `application/grpc[+proto]`) and gRPC-Web (`application/grpc-web[+proto|+json]`,
 *   HTTP/1.1 or 2) for the same methods;
 * plain or compressed as connect-node accepts (gzip, br; inflated by transport/compression.ts).
 * Everything else (other encodings, gRPC-Web text, Connect GET, `GET /effective-permissions`)
 * is left to connect-node and the gateway. The checks are those of the other surfaces (the JSON
 * request checker, the request guard, the binary scanner), the answers come from the same
 * DecisionSource and the same engine, and errors take each protocol's shape with the same
 * code and ErrorInfo, so that the surfaces cannot drift (the conformance tests compare them).
 */
import { ServerResponse } from 'node:http';
import { fromJson, toBinary, toJsonString, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { codeToHttpStatus, codeToString, errorToJsonBytes, parseTimeout as parseConnectTimeout } from '@connectrpc/connect/protocol-connect';
import { parseTimeout as parseGrpcTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { RpcMetrics } from '../transport/observability.js';
import {
  DecisionService, EvaluateBatchRequestSchema, EvaluateRequestSchema, GetEffectivePermissionsRequestSchema,
  GetEffectivePermissionsResponseSchema, EffectivePermissionSchema, LookupResourcesRequestSchema, LookupSubjectsRequestSchema, type GetEffectivePermissionsResponse,
} from '../../gen/authz/v1/decision_service_pb.js';
import { create } from '@bufbuild/protobuf';
import type { Decision } from '../engine/mod.js';
import { DomainError } from '../common/errors.js';
import { BodyTooLarge, dropBody, readBodyThen } from '../transport/body.js';
import { encodingOf, inflate, inflateEnvelopes, unaryMessage, type Encoding } from '../transport/compression.js';
import { headerOf } from '../transport/headers.js';
import { toConnectError, type ErrorClassifier } from '../transport/errors.js';
import { sendError, tooLargeError } from '../transport/gateway/gateway.js';
import type { NodeServerRequest, NodeServerResponse } from '../transport/node-types.js';
import { checkMessage, int64ToNumbers, invalidField, jsonStringsStorable } from '../transport/gateway/json.js';
import { checkRequestMessage } from '../transport/guard.js';
import { decodeBinaryRequest } from '../transport/binary-scan.js';
import { parseJsonBody } from '../transport/json-scan.js';
import { REVISION_HEADER } from '../transport/revision.js';
import { JSON_OPTIONS } from '../transport/server.js';
import { decideAll, effectiveFor, parseEvaluate, type CallSignal, type DecisionSource, type EvaluateLike } from './decide.js';
import { batchBinary, batchJson, decisionBinary, decisionJson } from './response-codec.js';
import { resourcesBinary, resourcesJson, subjectsBinary, subjectsJson } from './listing-codec.js';
import { lookupResourcesFor, parseLookupResources, type LookupResourcesLike, type LookupResourcesOut } from './lookup.js';
import { lookupSubjectsFor, parseLookupSubjects, type LookupSubjectsLike, type LookupSubjectsOut } from './lookup-subjects.js';
import { decodeFast } from '../transport/gateway/fast-decode.js';
import { traceIdOf, type DecisionCall } from './log.js';
import { endAfterTurn } from '../transport/turn-writes.js';
import { startNodeRpcSpan, TENANT_ATTRIBUTE, type Surface as TraceSurface, type Tracing } from '../transport/tracing.js';

type Surface = 'rest' | 'connect-json' | 'connect-proto' | 'grpc' | 'grpc-web' | 'grpc-web-json';
/** Surfaces whose message comes in a gRPC envelope, with `grpc-timeout` and the status in trailers. */
const isGrpc = (s: Surface): s is 'grpc' | 'grpc-web' | 'grpc-web-json' => s === 'grpc' || s === 'grpc-web' || s === 'grpc-web-json';
type MethodName = 'Evaluate' | 'EvaluateBatch' | 'GetEffectivePermissions' | 'LookupResources' | 'LookupSubjects';

/** What every lean RPC path takes besides its own: limits, errors, and the process's logs, metrics and spans. */
export interface LeanRpcOptions {
  maxBodyBytes: number;
  classifyError?: ErrorClassifier;
  logger: Logger;
  /** The RPC metrics of the process (services/transport/observability.ts `rpcMetrics`). */
  metrics: RpcMetrics;
  /** `authz_http_rejected_total` of the process (`rejectCounter`): counts calls the client canceled. */
  rejected?: Counter<'reason'>;
  /** OpenTelemetry tracing; undefined (off): no span objects are made. */
  tracing?: Tracing;
}

export interface LeanOptions<C> extends LeanRpcOptions {
  source: DecisionSource<C>;
  /**
   * Who calls, from the request's headers: the control plane verifies the API key and the
   * method's tier here (throwing `unauthenticated` / `permission_denied`); the sidecar asks
   * nothing (and so never makes `req.headers`, see headerOf).
   */
  caller: (req: NodeServerRequest, method: MethodName) => C | Promise<C>;
}

const PREFIX = `/${DecisionService.typeName}/`;
const INPUTS: Record<MethodName, DescMessage> = {
  Evaluate: EvaluateRequestSchema,
  EvaluateBatch: EvaluateBatchRequestSchema,
  GetEffectivePermissions: GetEffectivePermissionsRequestSchema,
  LookupResources: LookupResourcesRequestSchema,
  LookupSubjects: LookupSubjectsRequestSchema,
};
/** The listings: their JSON requests are decoded to messages, as connect-node decodes them (see decode). */
const isListing = (m: MethodName): m is 'LookupResources' | 'LookupSubjects' => m === 'LookupResources' || m === 'LookupSubjects';
const METHODS = new Set<string>(Object.keys(INPUTS));
/** The REST routes the lean path takes (compared, not looked up: a property lookup by the request's fresh URL string first interns it). */
const restMethod = (url: string): MethodName | undefined =>
  url === '/evaluate' ? 'Evaluate' : url === '/evaluate/batch' ? 'EvaluateBatch'
    : url === '/lookup/resources' ? 'LookupResources' : url === '/lookup/subjects' ? 'LookupSubjects' : undefined;
const TRACE_SURFACE: Record<Surface, TraceSurface> = {
  rest: 'rest', 'connect-json': 'connect', 'connect-proto': 'connect', grpc: 'grpc', 'grpc-web': 'grpc-web', 'grpc-web-json': 'grpc-web',
};

/** Which surface and method a request is, when the lean path takes it. */
function route(req: NodeServerRequest): { surface: Surface; method: MethodName; encoding: Encoding | 'identity' } | undefined {
  if (req.method !== 'POST') return undefined;
  const url = req.url ?? '';
  // Node joins a repeated content-encoding: one found is read from the joined value.
  const contentEncoding = headerOf(req, 'content-encoding') === undefined ? 'identity' : encodingOf(req.headers['content-encoding']);
  if (contentEncoding === undefined) return undefined;
  const rest = restMethod(url);
  // REST bodies are plain JSON (the gateway refuses an encoding, naming it).
  if (rest) return contentEncoding === 'identity' ? { surface: 'rest', method: rest, encoding: 'identity' } : undefined;
  if (!url.startsWith(PREFIX)) return undefined;
  const method = url.slice(PREFIX.length) as MethodName;
  if (!METHODS.has(method)) return undefined;
  const type = (headerOf(req, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') return { surface: 'connect-json', method, encoding: contentEncoding };
  if (type === 'application/proto') return { surface: 'connect-proto', method, encoding: contentEncoding };
  const surface = (type === 'application/grpc' || type === 'application/grpc+proto') && req.httpVersionMajor === 2 ? 'grpc'
    : type === 'application/grpc-web' || type === 'application/grpc-web+proto' ? 'grpc-web'
      : type === 'application/grpc-web+json' ? 'grpc-web-json' : undefined;
  if (surface === undefined || contentEncoding !== 'identity') return undefined;
  const encoding = encodingOf(req.headers['grpc-encoding']);
  return encoding === undefined ? undefined : { surface, method, encoding };
}

/**
 * The lean handler: answers and returns true for a request it takes, returns false (touching
 * nothing) for any other. Everything after the body has arrived runs synchronously unless the
 * caller or the index must be waited for, so a common decision takes no microtask turn.
 */
export function leanDecisions<C>(opts: LeanOptions<C>): (req: NodeServerRequest, res: NodeServerResponse, shutdown?: AbortSignal) => boolean {
  const children = new Map<string, { requests: { inc(): void }; duration: { observe(v: number): void } }>();
  const record = (method: MethodName, start: number, code: Code | undefined) => {
    const seconds = (performance.now() - start) / 1e3;
    const key = code === undefined ? method : `${method}/${code}`;
    let c = children.get(key);
    if (c === undefined) {
      const labels = { service: DecisionService.typeName, method, code: code === undefined ? 'ok' : codeToString(code) };
      c = { requests: opts.metrics.requests.child(labels), duration: opts.metrics.duration.child(labels) };
      children.set(key, c);
    }
    c.requests.inc();
    c.duration.observe(seconds);
  };
  const { tracing, source } = opts;
  return (req, res, shutdown) => {
    const r = route(req);
    if (!r) return false;
    const start = performance.now();
    // With tracing and the decision log off (the default) no span and no call object is made.
    const span = tracing === undefined ? undefined : startNodeRpcSpan(tracing, DecisionService.typeName, r.method, TRACE_SURFACE[r.surface], req.headers);
    const call: DecisionCall | undefined = span === undefined && source.decisionLog === undefined ? undefined : {
      start,
      method: r.method,
      traceId: span !== undefined ? span.spanContext().traceId : traceIdOf(req.headers.traceparent),
      onTenant: span === undefined ? undefined : (tenantId) => span.setAttribute(TENANT_ATTRIBUTE, tenantId),
    };
    const fail = (err: unknown) => {
      const ce = err instanceof BodyTooLarge ? tooLargeError(err) : toConnectError(err, opts.classifyError);
      record(r.method, start, ce.code);
      if (span !== undefined) tracing!.endRpcSpan(span, TRACE_SURFACE[r.surface], ce.code, ce.rawMessage);
      if (ce.code === Code.Canceled) {
        // The caller went away while the answer waited: nobody reads it, nothing failed here.
        opts.logger.debug({ method: r.method, service: DecisionService.typeName }, 'rpc canceled by the client');
        opts.rejected?.inc({ reason: 'canceled' });
        return;
      }
      if (ce.code === Code.Internal) opts.logger.error({ err: ce.cause ?? err, method: r.method }, 'rpc failed with an internal error');
      else if (ce.code === Code.Unavailable && ce.cause !== undefined) opts.logger.warn({ err: ce.cause, method: r.method }, `rpc failed: ${ce.rawMessage}`);
      sendFailure(r.surface, res, ce);
    };
    const answer = (caller: C, bytes: Buffer) => {
      // Ends a wait (for a revision) when the caller goes away, or when the server shuts down
      // (answering the server's `unavailable`: retry elsewhere). Made on demand (see CallSignal);
      // 'close' is listened for only when the answer waits, so a caller leaving earlier than the
      // listener is impossible: everything up to it runs in this callback.
      let cancel: AbortController | undefined;
      let gone = false;
      let unlink: (() => void) | undefined;
      const signal = () => {
        if (cancel === undefined) {
          const c = (cancel = new AbortController());
          if (gone) c.abort();
          else if (shutdown?.aborted) c.abort(shutdown.reason);
          else if (shutdown !== undefined) {
            const onShutdown = () => c.abort(shutdown.reason);
            shutdown.addEventListener('abort', onShutdown, { once: true });
            unlink = () => shutdown.removeEventListener('abort', onShutdown);
          }
        }
        return cancel.signal;
      };
      const succeeded = () => {
        unlink?.();
        record(r.method, start, undefined);
        if (span !== undefined) tracing!.endRpcSpan(span, TRACE_SURFACE[r.surface], undefined);
      };
      try {
        const answered = serve(opts, r.surface, r.method, caller, req, res, bytes, signal, call);
        if (answered instanceof Promise) {
          res.once('close', () => {
            gone = true;
            cancel?.abort();
          });
          answered.then(succeeded, (e: unknown) => {
            unlink?.();
            const reason: unknown = cancel?.signal.reason;
            const byShutdown = e instanceof DomainError && e.kind === 'canceled' && reason instanceof ConnectError && reason.code === Code.Unavailable;
            fail(byShutdown ? reason : e);
          });
        } else {
          succeeded();
        }
      } catch (e) {
        unlink?.();
        fail(e);
      }
    };
    const read = (caller: C) => readBodyThen(req, opts.maxBodyBytes, (err, bytes) => {
      if (err) return fail(err);
      let plain: Buffer | Promise<Buffer>;
      try {
        plain = inflated(r.surface, r.encoding, bytes!, opts.maxBodyBytes);
      } catch (e) {
        return fail(e);
      }
      if (plain instanceof Promise) plain.then((b) => answer(caller, b), fail);
      else answer(caller, plain);
    });
    // The caller first, from the headers: a refused one costs no more (its body is dropped unread).
    const refuse = (e: unknown) => {
      void dropBody(req).then(() => fail(e));
    };
    let caller: C | Promise<C>;
    try {
      caller = opts.caller(req, r.method);
    } catch (e) {
      refuse(e);
      return true;
    }
    if (caller instanceof Promise) caller.then(read, refuse);
    else read(caller);
    return true;
  };
}

/**
 * The body with a compressed request (Connect `content-encoding`) or message (gRPC, flagged in
 * its envelope, with `grpc-encoding`) inflated, as connect-node's path does (see compression.ts);
 * the body itself, at once, when nothing is compressed.
 */
function inflated(surface: Surface, encoding: Encoding | 'identity', bytes: Buffer, max: number): Buffer | Promise<Buffer> {
  if (isGrpc(surface)) return bytes.length > 0 && (bytes[0] & 1) !== 0 ? inflateEnvelopes(bytes, encoding, max) : bytes;
  return encoding === 'identity' ? bytes : inflate(encoding, bytes, max);
}

/** `f(value)` at once for a value, after it for a promise. */
function then<T, U>(v: T | Promise<T>, f: (x: T) => U | Promise<U>): U | Promise<U> {
  return v instanceof Promise ? v.then(f) : f(v);
}

function serve<C>(
  opts: LeanOptions<C>, surface: Surface, method: MethodName, caller: C, req: NodeServerRequest, res: NodeServerResponse, bytes: Buffer, signal: CallSignal, call: DecisionCall | undefined,
): void | Promise<void> {
  const deadline = deadlineOf(surface, req);
  // As on the other surfaces: the caller was checked before the body was read; the body is
  // checked, then (binary messages) the request guard.
  const input = decode(surface, INPUTS[method], bytes, isListing(method));
  if (surface === 'connect-proto' || surface === 'grpc' || surface === 'grpc-web' || isListing(method)) checkRequestMessage(INPUTS[method], input as Record<string, unknown>);
  switch (method) {
    case 'Evaluate':
      return then(decideAll(opts.source, caller, [parseEvaluate(input as EvaluateLike)], false, deadline, signal, call), (ds) => {
        reply(surface, res, { decisions: ds, batch: false });
      });
    case 'EvaluateBatch': {
      const requests = ((input as { requests?: EvaluateLike[] | null }).requests ?? []);
      return then(decideAll(opts.source, caller, requests.map((x, i) => parseEvaluate(x, `requests[${i}].`)), true, deadline, signal, call), (ds) => {
        reply(surface, res, { decisions: ds, batch: true });
      });
    }
    case 'GetEffectivePermissions':
      return effectiveFor(opts.source, caller, input as never, deadline, signal, call?.onTenant).then(({ permissions, revision }) => {
        const message = create(GetEffectivePermissionsResponseSchema, {
          permissions: permissions.map((x) => create(EffectivePermissionSchema, x)), revision: BigInt(revision),
        });
        reply(surface, res, { permissions: message }, String(revision));
      });
    case 'LookupResources': {
      const listing = parseLookupResources(input as LookupResourcesLike);
      return lookupResourcesFor(opts.source, caller, listing, deadline, signal, call?.onTenant).then((page) => {
        reply(surface, res, { resources: page }, String(page.revision), page.nextCursor);
      });
    }
    case 'LookupSubjects': {
      const listing = parseLookupSubjects(input as LookupSubjectsLike);
      return lookupSubjectsFor(opts.source, caller, listing, deadline, signal, call?.onTenant).then((page) => {
        reply(surface, res, { subjects: page }, String(page.revision), page.nextCursor);
      });
    }
  }
}

/** The caller's deadline as epoch ms (Infinity without one); a malformed timeout is invalid_argument. */
function deadlineOf(surface: Surface, req: NodeServerRequest): number {
  if (surface === 'rest') return Number.POSITIVE_INFINITY;
  const raw = headerOf(req, isGrpc(surface) ? 'grpc-timeout' : 'connect-timeout-ms');
  if (raw === undefined) return Number.POSITIVE_INFINITY;
  const t = (isGrpc(surface) ? parseGrpcTimeout : parseConnectTimeout)(String(raw), Number.MAX_SAFE_INTEGER);
  if (t.error) throw t.error;
  return t.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + t.timeoutMs;
}

/**
 * The request as the handlers read it: JSON checked like every JSON body (unknown fields, types,
 * storable strings and JSON, list bounds), or a binary message scanned and decoded (the guard
 * then runs after the caller is known, as the interceptor does elsewhere). `asMessage`: checked
 * JSON is decoded to the message too, as connect-node decodes it (a listing reads an int32 given
 * as a string, or a field by its proto name, as connect-node does).
 */
function decode(surface: Surface, desc: DescMessage, bytes: Buffer, asMessage: boolean): unknown {
  let payload = bytes;
  if (isGrpc(surface)) payload = unaryMessage(bytes);
  if (surface === 'rest' || surface === 'connect-json' || surface === 'grpc-web-json') {
    // An empty body is the empty message in REST and Connect; an envelope holds JSON.
    const json = parseJsonBody(payload, { desc }) ?? (surface === 'grpc-web-json' ? undefined : {});
    if (json === undefined) throw invalidField('', 'the request message is not valid JSON: it is empty');
    checkMessage(desc, json, '', jsonStringsStorable(payload));
    if (!asMessage) return json;
    const fast = decodeFast(desc, json);
    if (fast !== undefined) return fast;
    try {
      return fromJson(desc, json, JSON_OPTIONS);
    } catch (err) {
      // As connect-node answers a message its JSON decoder refuses.
      throw ConnectError.from(err, Code.InvalidArgument);
    }
  }
  return decodeBinaryRequest(desc, payload);
}

/**
 * Writes the answer: JSON (REST with 64-bit integers as numbers, Connect and gRPC-Web+json as
 * strings), a binary message (Connect), or a gRPC / gRPC-Web envelope with trailers. Decisions
 * are written by response-codec.ts; effective permissions through protobuf-es as connect-node
 * would.
 */
function reply(surface: Surface, res: NodeServerResponse, answer: Answer, revisionHeader?: string, nextCursor?: string): void {
  let message: string | Uint8Array;
  if (surface === 'rest' || surface === 'connect-json' || surface === 'grpc-web-json') {
    const asNumber = surface === 'rest';
    if (answer.resources !== undefined) {
      message = resourcesJson(answer.resources, asNumber ? 'rest' : 'connect');
    } else if (answer.subjects !== undefined) {
      message = subjectsJson(answer.subjects, asNumber ? 'rest' : 'connect');
    } else if (answer.decisions === undefined) {
      message = toJsonString(GetEffectivePermissionsResponseSchema, answer.permissions, JSON_OPTIONS);
      if (asNumber) message = JSON.stringify(int64ToNumbers(GetEffectivePermissionsResponseSchema, JSON.parse(message) as JsonValue));
    } else {
      message = answer.batch ? batchJson(answer.decisions, asNumber) : decisionJson(answer.decisions[0], asNumber);
    }
  } else {
    message = answer.resources !== undefined ? resourcesBinary(answer.resources)
      : answer.subjects !== undefined ? subjectsBinary(answer.subjects)
        : answer.decisions === undefined ? toBinary(GetEffectivePermissionsResponseSchema, answer.permissions!)
          : answer.batch ? batchBinary(answer.decisions) : decisionBinary(answer.decisions[0]);
  }
  if (surface === 'rest' || surface === 'connect-json' || surface === 'connect-proto') {
    const headers: Record<string, string> = {
      'content-type': surface === 'connect-proto' ? 'application/proto' : 'application/json',
      'content-length': String(typeof message === 'string' ? Buffer.byteLength(message) : message.length),
    };
    if (revisionHeader !== undefined) revisionHeaders(surface, headers, revisionHeader);
    // REST moves a page's cursor to a header (the gateway's restPayload); absent on the last page.
    if (surface === 'rest' && nextCursor) headers['x-next-cursor'] = nextCursor;
    sendAnswer(res, headers, message);
    return;
  }
  const trailers: Record<string, string> = { 'grpc-status': '0' };
  if (revisionHeader !== undefined) trailers[REVISION_HEADER] = revisionHeader;
  const headers: Record<string, string> = { 'content-type': GRPC_CONTENT_TYPES[surface] };
  if (revisionHeader !== undefined) headers[REVISION_HEADER] = revisionHeader;
  const bytes = typeof message === 'string' ? Buffer.from(message) : message;
  if (surface === 'grpc') {
    const h2 = res as import('node:http2').Http2ServerResponse;
    h2.writeHead(200, headers);
    h2.addTrailers(trailers);
    h2.end(envelope(0, bytes));
    return;
  }
  // gRPC-Web: the message's envelope, then the trailers' (flag 0x80) in the body.
  const body = Buffer.concat([envelope(0, bytes), webTrailers(trailers)]);
  headers['content-length'] = String(body.length);
  sendAnswer(res, headers, body);
}

/** Sends a 200 answer: an HTTP/1.1 one with the others of this turn (turn-writes.ts), an HTTP/2 one now. */
function sendAnswer(res: NodeServerResponse, headers: Record<string, string>, body: string | Uint8Array): void {
  if (res instanceof ServerResponse) return endAfterTurn(res, 200, headers, body);
  res.writeHead(200, headers);
  res.end(body);
}

/** A gRPC envelope: a flag byte, the length (4 bytes, big-endian), the data. */
function envelope(flags: number, data: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(5 + data.length);
  framed[0] = flags;
  framed.writeUInt32BE(data.length, 1);
  framed.set(data, 5);
  return framed;
}

/** gRPC-Web trailers as connect-node writes them: `name: value\r\n` lines by name, in an envelope flagged 0x80. */
function webTrailers(trailers: Record<string, string>): Buffer {
  let text = '';
  for (const name of Object.keys(trailers).sort()) text += `${name}: ${trailers[name]}\r\n`;
  return envelope(0x80, Buffer.from(text));
}

/** What a call answers: decisions (one, or a batch), effective permissions or a listing's page. */
type Answer =
  | { decisions: readonly Decision[]; batch: boolean; permissions?: undefined; resources?: undefined; subjects?: undefined }
  | { decisions?: undefined; permissions: GetEffectivePermissionsResponse; resources?: undefined; subjects?: undefined }
  | { decisions?: undefined; permissions?: undefined; resources: LookupResourcesOut; subjects?: undefined }
  | { decisions?: undefined; permissions?: undefined; resources?: undefined; subjects: LookupSubjectsOut };

/** The content types connect-node answers gRPC and gRPC-Web calls with. */
const GRPC_CONTENT_TYPES = { grpc: 'application/grpc+proto', 'grpc-web': 'application/grpc-web+proto', 'grpc-web-json': 'application/grpc-web+json' } as const;

/**
 * `x-revision` as connect-node sends a handler's header and trailer (services/transport/revision.ts):
 * REST as a header; Connect unary as a header and, for the trailer, `trailer-x-revision`.
 */
function revisionHeaders(surface: Surface, headers: Record<string, string>, revision: string): void {
  headers[REVISION_HEADER] = revision;
  if (surface !== 'rest') headers[`trailer-${REVISION_HEADER}`] = revision;
}

/** An error in the caller's protocol: REST and Connect JSON bodies, or gRPC trailers only. */
function sendFailure(surface: Surface, res: NodeServerResponse, ce: ConnectError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (surface === 'rest') return sendError(res, ce);
  if (isGrpc(surface)) {
    // As connect-node answers a failed unary call: headers, no message, the status in trailers.
    const trailers: Record<string, string> = {};
    setTrailerStatus(new Headers(), ce).forEach((v, k) => (trailers[k] = v));
    if (surface === 'grpc') {
      const h2 = res as import('node:http2').Http2ServerResponse;
      h2.writeHead(200, { 'content-type': GRPC_CONTENT_TYPES.grpc });
      h2.addTrailers(trailers);
      h2.end();
      return;
    }
    const body = webTrailers(trailers);
    res.writeHead(200, { 'content-type': GRPC_CONTENT_TYPES[surface], 'content-length': String(body.length) });
    res.end(body);
    return;
  }
  const body = Buffer.from(errorToJsonBytes(ce, JSON_OPTIONS));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(body.length) };
  ce.metadata.forEach((v, k) => (headers[k] = v));
  res.writeHead(codeToHttpStatus(ce.code), headers);
  res.end(body);
}

