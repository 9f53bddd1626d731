/**
 * The REST gateway: one generic transcoder driven by the `google.api.http` options of the
 * service descriptors. A REST request becomes a Connect unary JSON request to the same
 * router's handler, in process, so authentication, error mapping, metrics and handlers are
 * exactly those of the Connect and gRPC surfaces; the Connect response is then transcoded back
 * (response_body, 64-bit integers as numbers, `x-next-cursor` and `x-revision` headers, errors
 * as `{code, message, details}` with Connect's HTTP status).
 */
import { fromBinary, fromJson, toJson, type DescMethod, type DescService, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { base64Decode } from '@bufbuild/protobuf/wire';
import { Code, ConnectError, createContextValues } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerRequest } from '@connectrpc/connect/protocol';
import { codeFromString, codeToHttpStatus, codeToString } from '@connectrpc/connect/protocol-connect';
import type { NodeServerRequest, NodeServerResponse } from '../node-types.js';
import type { Logger } from 'pino';
import { ErrorInfoSchema, ErrorReason, ErrorReasonSchema } from '../../../gen/authz/v1/error_reason_pb.js';
import { connectErrorWithInfo, INTERNAL_MESSAGE, toConnectError, type ErrorClassifier } from '../errors.js';
import { checkMessage, hasInt64, int64ToNumbers, invalidField, setAtPath, valueFromString } from './json.js';
import { resolveFieldPath, RouteTable, type Route } from './routes.js';
import { BodyTooLarge, dropBody, readJsonBody } from '../body.js';
import { callerCheckKey, type CallerCheck } from '../caller-check.js';
import { MAX_BODY_BYTES } from '../request-limits.js';
import { checkRequestMessage } from '../guard.js';
import { JSON_OPTIONS } from '../json-options.js';
import type { RpcMetrics } from '../observability.js';
import { startNodeRpcSpan, type Tracing } from '../tracing.js';
import type { DirectAnswer, DirectMethod } from './direct.js';
import { decodeFast } from './fast-decode.js';
import { surfaceKey } from './surface.js';

export { surfaceKey };

export interface GatewayOptions {
  /** Services whose `google.api.http` bindings are served. */
  services: readonly DescService[];
  /** The Connect router's handlers (`router.handlers`); each binding calls its method's handler. */
  handlers: readonly UniversalHandler[];
  /** Request body limit in bytes; default 4 MiB. */
  maxBodyBytes?: number;
  logger?: Logger;
  /** Told of each request answered before any handler runs (for metrics). */
  onReject?: (reason: RejectReason) => void;
  /**
   * The caller of a route's method from the request's headers, before the body is read (see
   * StartServerOptions `authenticate`); a refused caller's body is dropped unread, and the
   * handler is called with an empty message and the refusal in its context.
   */
  checkCaller?: (req: NodeServerRequest, method: DescMethod) => CallerCheck | Promise<CallerCheck>;
  /**
   * Methods served by the gateway itself (direct.ts), when `checkCaller` is set; observed with
   * `metrics`, `tracing` and `classifyError` as connect-node's interceptors observe the others.
   */
  direct?: readonly DirectMethod[];
  metrics?: RpcMetrics;
  tracing?: Tracing;
  classifyError?: ErrorClassifier;
}

/** Why the gateway answered a request itself, without calling a handler. */
export type RejectReason = 'bad_path' | 'not_found' | 'method_not_allowed' | 'unimplemented' | 'body_too_large' | 'bad_request';

export interface Gateway {
  readonly routes: RouteTable;
  /** Serves one REST request; always answers (404 for paths no binding declares). */
  handle(req: NodeServerRequest, res: NodeServerResponse): Promise<void>;
}

/** Request headers that describe the HTTP exchange rather than the call; never forwarded. */
const DROP_HEADERS = new Set([
  'host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'upgrade', 'expect',
  'http2-settings', 'content-type', 'content-length', 'content-encoding', 'accept-encoding', 'accept',
]);

const JSON_TYPE = 'application/json';

export function createGateway(opts: GatewayOptions): Gateway {
  const routes = new RouteTable(opts.services);
  const maxBodyBytes = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const handlerOf = new Map<DescMethod, UniversalHandler>();
  const handlerByName = new Map<string, UniversalHandler>();
  for (const h of opts.handlers) {
    handlerOf.set(h.method, h);
    handlerByName.set(`${h.service.typeName}.${h.method.name}`, h);
  }
  const findHandler = (m: DescMethod) => handlerOf.get(m) ?? handlerByName.get(`${m.parent.typeName}.${m.name}`);
  const directOf = new Map((opts.direct ?? []).map((d) => [`${d.method.parent.typeName}.${d.method.name}`, d]));

  const reject = (reason: RejectReason) => opts.onReject?.(reason);

  async function handle(req: NodeServerRequest, res: NodeServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const verb = (req.method ?? 'GET').toUpperCase();

    let match;
    try {
      match = routes.match(verb, rawPath);
    } catch {
      reject('bad_path');
      return sendError(res, connectErrorWithInfo('the request path is not valid percent-encoding', Code.InvalidArgument, ErrorReason.INVALID_FIELD));
    }
    if (match.kind === 'not_found') {
      reject('not_found');
      return sendError(res, connectErrorWithInfo(`no endpoint ${verb} ${rawPath}`, Code.NotFound, ErrorReason.NOT_FOUND));
    }
    if (match.kind === 'method_not_allowed') {
      reject('method_not_allowed');
      const err = connectErrorWithInfo(
        `${verb} is not allowed on ${rawPath}; allowed: ${match.allowed.join(', ')}`,
        Code.Unimplemented,
        ErrorReason.UNSPECIFIED,
      );
      return sendError(res, err, 405, { allow: match.allowed.join(', ') });
    }
    const { route, params } = match;
    const handler = findHandler(route.method);
    if (!handler) {
      reject('unimplemented');
      return sendError(res, new ConnectError(`${route.method.parent.typeName}.${route.method.name} is not implemented`, Code.Unimplemented));
    }

    const check = opts.checkCaller === undefined ? undefined : await opts.checkCaller(req, route.method);
    const direct = check === undefined ? undefined : directOf.get(`${route.method.parent.typeName}.${route.method.name}`);
    let message: JsonObject = {};
    try {
      if (check?.ok === false) await dropBody(req);
      else {
        const body = route.body.kind === 'none' ? undefined : await readJsonBody(req, maxBodyBytes, { desc: route.method.input, field: route.body.kind === 'field' ? route.body.field.jsonName : undefined });
        message = buildRequest(route, params, query, body, direct === undefined);
      }
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        reject('body_too_large');
        return sendError(res, tooLargeError(err));
      }
      if (err instanceof ConnectError) {
        reject('bad_request');
        return sendError(res, err);
      }
      throw err;
    }

    const abort = new AbortController();
    res.once('close', () => abort.abort());
    if (direct !== undefined) return serveDirect(direct, route, message, check!, req, res, abort.signal);
    const header = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || k.startsWith(':') || DROP_HEADERS.has(k) || k.startsWith('connect-') || k.startsWith('grpc-')) continue;
      for (const value of Array.isArray(v) ? v : [v]) header.append(k, value);
    }
    header.set('content-type', JSON_TYPE);
    header.set('connect-protocol-version', '1');
    const contextValues = createContextValues().set(surfaceKey, 'rest');
    if (check !== undefined) contextValues.set(callerCheckKey, check);
    const uReq: UniversalServerRequest = {
      httpVersion: req.httpVersion,
      url: `http://gateway${handler.requestPath}`,
      method: 'POST',
      header,
      body: message,
      signal: abort.signal,
      contextValues,
    };
    const uRes = await handler(uReq);
    const chunks: Uint8Array[] = [];
    if (uRes.body) for await (const c of uRes.body) chunks.push(c);
    const text = Buffer.concat(chunks).toString('utf8');
    const resHeader = uRes.header ?? new Headers();
    const out: Record<string, string> = {};
    const revision = resHeader.get('x-revision') ?? resHeader.get('trailer-x-revision') ?? uRes.trailer?.get('x-revision');
    if (revision) out['x-revision'] = revision;

    if (uRes.status !== 200) {
      const challenge = resHeader.get('www-authenticate');
      if (challenge) out['www-authenticate'] = challenge;
      return sendError(res, errorFromConnectBody(uRes.status, text, opts.logger), undefined, out);
    }

    const unwrapped = unwrapDirect(route, text);
    if (unwrapped !== undefined) return send(res, 200, out, unwrapped);
    let json: JsonValue;
    try {
      json = JSON.parse(text) as JsonValue;
    } catch (err) {
      opts.logger?.error({ err, method: route.method.name }, 'gateway could not parse a handler response');
      return sendError(res, new ConnectError(INTERNAL_MESSAGE, Code.Internal));
    }
    send(res, 200, out, restPayload(route, json, out));
  }

  /**
   * A direct method's call (direct.ts), from its request's JSON (path and query merged in) to
   * its answer, as connect-node's path would serve it: the JSON checked and decoded, the caller's
   * refusal or the guard's answered as errors, the span, metrics and error logs of the
   * interceptors (tracing, metrics, errors).
   */
  async function serveDirect(direct: DirectMethod, route: Route, json: JsonObject, check: CallerCheck, req: NodeServerRequest, res: NodeServerResponse, signal: AbortSignal): Promise<void> {
    const input = route.method.input;
    let decoded = check.ok ? decodeFast(input, json) : undefined;
    if (check.ok && decoded === undefined) {
      try {
        checkMessage(input, json);
      } catch (err) {
        reject('bad_request');
        return sendError(res, ConnectError.from(err));
      }
    }
    const service = route.method.parent.typeName;
    const method = route.method.name;
    const start = performance.now();
    const span = opts.tracing === undefined ? undefined : startNodeRpcSpan(opts.tracing, service, method, 'rest', req.headers);
    const out: Record<string, string> = {};
    const end = (err: ConnectError | undefined) => {
      const labels = { service, method, code: err === undefined ? 'ok' : codeToString(err.code) };
      opts.metrics?.requests.inc(labels);
      opts.metrics?.duration.observe(labels, (performance.now() - start) / 1000);
      if (span !== undefined) opts.tracing!.endRpcSpan(span, 'rest', err?.code, err?.rawMessage);
    };
    let answer: DirectAnswer;
    try {
      if (!check.ok) throw check.error;
      if (decoded === undefined) {
        try {
          decoded = fromJson(input, json, JSON_OPTIONS);
        } catch (err) {
          // As connect-node answers a message its JSON decoder refuses.
          throw ConnectError.from(err, Code.InvalidArgument);
        }
      }
      checkRequestMessage(input, decoded as unknown as Record<string, unknown>);
      answer = await direct.serve({ message: decoded, caller: check.caller, headers: req.headers, signal, span });
    } catch (err) {
      const ce = toConnectError(err, opts.classifyError);
      if (ce.code === Code.Internal) opts.logger?.error({ err: ce.cause ?? ce, service, method }, 'rpc failed with an internal error');
      else if (ce.code === Code.Unavailable && ce.cause !== undefined) opts.logger?.warn({ err: ce.cause, service, method }, `rpc failed: ${ce.rawMessage}`);
      end(ce);
      return sendError(res, ce, undefined, out);
    }
    if (answer.revision !== undefined) out['x-revision'] = String(answer.revision);
    const body = 'restBody' in answer ? answer.restBody : restPayload(route, toJson(route.method.output, answer.message, JSON_OPTIONS), out);
    end(undefined);
    send(res, 200, out, body);
  }

  return { routes, handle };
}

/**
 * The REST body of a route's proto-JSON response: 64-bit integers as numbers, the page cursor
 * moved to the `x-next-cursor` header (into `out`), the `response_body` field alone when the
 * route names one.
 */
function restPayload(route: Route, json: JsonValue, out: Record<string, string>): string {
  const obj = int64ToNumbers(route.method.output, json) as JsonObject;
  const cursorField = route.method.output.fields.find((f) => f.name === 'next_cursor');
  if (cursorField) {
    const cursor = obj[cursorField.jsonName];
    if (typeof cursor === 'string' && cursor !== '') out['x-next-cursor'] = cursor;
    delete obj[cursorField.jsonName];
  }
  let payload: JsonValue = obj;
  if (route.responseBody) {
    const f = route.responseBody;
    payload = obj[f.jsonName] ?? (f.fieldKind === 'list' ? [] : {});
  }
  return JSON.stringify(payload);
}

/**
 * Builds the proto-JSON request message of a route from path, query and body; `check`: whether
 * the body is checked against the request message here (a direct method checks it itself).
 */
function buildRequest(route: Route, params: Map<string, string>, query: URLSearchParams, body: JsonValue | undefined, check: boolean): JsonObject {
  const input = route.method.input;
  let message: JsonObject = {};
  if (route.body.kind === 'all') {
    if (body !== undefined) {
      if (check) checkMessage(input, body);
      else if (body === null || typeof body !== 'object' || Array.isArray(body)) checkMessage(input, body);
      message = body as JsonObject;
    }
  } else if (route.body.kind === 'field') {
    const f = route.body.field;
    if (body !== undefined && body !== null) {
      if (f.fieldKind === 'list' && !Array.isArray(body)) {
        throw invalidField('', `request body must be a JSON array (of ${f.listKind === 'message' ? f.message.typeName : 'values'}), got ${body === null ? 'null' : typeof body}`);
      }
      message = { [f.jsonName]: body };
      if (check) checkMessage(input, message);
    }
  }

  for (const seg of route.segments) {
    if (seg.kind !== 'variable') continue;
    const raw = params.get(seg.name) ?? '';
    const last = seg.fields[seg.fields.length - 1];
    setAtPath(message, seg.fields, valueFromString(last, raw, seg.name), seg.name);
  }

  const keys = [...new Set(query.keys())];
  if (keys.length > 0 && route.body.kind === 'all') {
    throw invalidField(keys[0], `unknown query parameter "${keys[0]}": this endpoint takes its fields in the JSON body`);
  }
  for (const key of keys) {
    const fields = resolveFieldPath(input, key);
    if (!fields) throw invalidField(key, `unknown query parameter "${key}"`);
    const dotted = fields.map((f) => f.name).join('.');
    if (route.pathFieldNames.has(dotted)) throw invalidField(key, `"${key}" is already given in the path`);
    if (route.body.kind === 'field' && fields[0] === route.body.field) throw invalidField(key, `"${key}" belongs in the request body`);
    for (const f of fields.slice(0, -1)) {
      if (f.fieldKind !== 'message') throw invalidField(key, `unknown query parameter "${key}"`);
    }
    const last = fields[fields.length - 1];
    const values = query.getAll(key);
    let value: JsonValue;
    if (last.fieldKind === 'list') {
      value = values.map((v) => valueFromString(last, v, key));
    } else {
      if (values.length > 1) throw invalidField(key, `query parameter "${key}" is given more than once`);
      value = valueFromString(last, values[0], key);
    }
    setAtPath(message, fields, value, key);
  }
  return message;
}

/** The answer to a body over the limit (the rest of it is being drained, see body.ts). */
export function tooLargeError(err: BodyTooLarge): ConnectError {
  return connectErrorWithInfo(err.message, Code.ResourceExhausted, ErrorReason.LIMIT);
}

/** Turns a Connect unary error response body into a ConnectError. */
function errorFromConnectBody(status: number, text: string, logger?: Logger): ConnectError {
  try {
    const j = JSON.parse(text) as { code?: string; message?: string; details?: Array<{ type: string; value: string; debug?: JsonValue }> };
    const code = j.code ? codeFromString(j.code) : undefined;
    if (code !== undefined) {
      const err = new ConnectError(j.message ?? '', code);
      for (const d of j.details ?? []) err.details.push({ type: d.type, value: base64Decode(d.value), debug: d.debug });
      return err;
    }
  } catch {
    // fall through
  }
  logger?.error({ status, body: text.slice(0, 200) }, 'gateway received a non-Connect error response');
  return new ConnectError(INTERNAL_MESSAGE, Code.Internal);
}

/** The REST rendering of an error detail: ErrorInfo decoded, others as Connect sends them. */
function renderDetail(d: ConnectError['details'][number], message: string): JsonValue {
  if ('desc' in d) {
    if (d.desc.typeName === ErrorInfoSchema.typeName) {
      return errorInfoJson(d.value as { reason?: ErrorReason; field?: string }, message);
    }
    return { type: d.desc.typeName };
  }
  if (d.type === ErrorInfoSchema.typeName) {
    try {
      const info = fromBinary(ErrorInfoSchema, d.value);
      return errorInfoJson(info, message);
    } catch {
      // fall through
    }
  }
  return { type: d.type, value: Buffer.from(d.value).toString('base64'), ...(d.debug !== undefined ? { debug: d.debug as JsonValue } : {}) };
}

function errorInfoJson(info: { reason?: ErrorReason; field?: string }, message: string): JsonObject {
  const reason = ErrorReasonSchema.value[info.reason ?? ErrorReason.UNSPECIFIED]?.name ?? 'ERROR_REASON_UNSPECIFIED';
  const out: JsonObject = { type: ErrorInfoSchema.typeName, reason };
  if (info.field) out.field = info.field;
  out.message = message;
  return out;
}

/** Writes an error as `{code, message, details}` with Connect's HTTP status for the code. */
export function sendError(res: NodeServerResponse, err: ConnectError, status?: number, headers: Record<string, string> = {}): void {
  const body = {
    code: codeToString(err.code),
    message: err.rawMessage,
    details: err.details.map((d) => renderDetail(d, err.rawMessage)),
  };
  const out: Record<string, string> = { ...headers };
  err.metadata.forEach((v, k) => {
    if (k === 'www-authenticate') out[k] = v;
  });
  send(res, status ?? codeToHttpStatus(err.code), out, JSON.stringify(body));
}

function send(res: NodeServerResponse, status: number, headers: Record<string, string>, body: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const buf = Buffer.from(body, 'utf8');
  res.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': String(buf.length) });
  res.end(buf);
}

/**
 * The REST body without a parse and re-serialisation, for the common case: the output message
 * has only its `response_body` field and no 64-bit integers anywhere (so nothing to convert),
 * and Connect wrote `{"<jsonName>":<value>}` (JSON.stringify of a one-key object). Undefined
 * when that does not hold; the caller then parses.
 */
export function unwrapDirect(route: Pick<Route, 'method' | 'responseBody'>, text: string): string | undefined {
  const f = route.responseBody;
  if (!f || route.method.output.fields.length !== 1 || hasInt64(route.method.output)) return undefined;
  const head = `{"${f.jsonName}":`;
  if (!text.startsWith(head) || !text.endsWith('}')) return undefined;
  return text.slice(head.length, -1);
}
