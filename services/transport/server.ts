/**
 * The server of both processes (control plane and sidecar): one port speaking gRPC (h2c with
 * prior knowledge), gRPC-Web and Connect (HTTP/1.1 and h2c), the REST gateway, and the
 * unauthenticated `/healthz`, `/readyz` and `/metrics`. Plain-text HTTP/2 cannot be negotiated,
 * so each TCP connection is sniffed: the HTTP/2 client preface goes to the http2 server,
 * anything else to the http1 one. With the `tls` option the port speaks TLS instead, and ALPN
 * (`h2`, `http/1.1`) hands each connection to the same two servers. What differs between the
 * processes comes in as options:
 * services, interceptors (the control plane's authentication), error classification, readiness.
 * Every process also serves `grpc.health.v1.Health` and gRPC server reflection (v1 and v1alpha)
 * without credentials: the process's interceptors do not run for them. An unknown method is
 * answered `unimplemented` in the caller's protocol (unrouted.ts); CORS, when configured, comes
 * first (cors.ts).
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { setMaxListeners } from 'node:events';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { JSON_OPTIONS } from './json-options.js';
import { Code, ConnectError, createConnectRouter, createContextValues, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import { parseContentType } from '@connectrpc/connect/protocol-connect';
import type { UniversalHandler, UniversalServerRequest } from '@connectrpc/connect/protocol';
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { requestGuard } from './guard.js';
import { connectErrorWithInfo, errorInterceptor, type ErrorClassifier } from './errors.js';
import { createGateway, tooLargeError } from './gateway/gateway.js';
import type { NodeServerRequest, NodeServerResponse } from './node-types.js';
import { BodyTooLarge, DRAIN_LIMIT_BYTES, dropBody, readBody, readJsonBody } from './body.js';
import { encodingOf, inflate, inflateEnvelopes, unaryMessage, type Encoding } from './compression.js';
import { checkMessage, invalidField } from './gateway/json.js';
import { checkBinaryRequest } from './binary-scan.js';
import { parseJsonBody } from './json-scan.js';
import { checkConnectGet } from './connect-get.js';
import { MAX_BODY_BYTES } from './request-limits.js';
import { callerCheckKey, checkCaller, type CallerCheck } from './caller-check.js';
import { createLogger, createRegistry, metricsInterceptor, rejectCounter, rpcMetrics } from './observability.js';
import type { DirectMethod } from './gateway/direct.js';
import { ErrorInfoSchema, ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { corsHandler } from './cors.js';
import { crossSiteBody, hostAllowlist, refuseCrossSiteBody, refuseHost } from './cross-site.js';
import { grpcFlavour, RPC_PATH, sendConnectError, sendRpcError, unknownMethodError } from './unrouted.js';
import { Health, healthService } from './health.js';
import { DescriptorIndex, reflectionServices, ServerReflectionV1, ServerReflectionV1alpha } from './reflection.js';
import { tracingInterceptor, type Tracing } from './tracing.js';
import { readCertificatePair, reloadCertificates, secureContextOptions, type CertificateFiles, type CertificateReloader } from './certificates.js';

export { JSON_OPTIONS } from './json-options.js';

export interface StartServerOptions {
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** 0 picks a free port; default 8080. */
  port?: number;
  /** What the process is, in its log lines and `GET /` (`control plane`, `sidecar`). */
  name?: string;
  /** Registers the service implementations, as in a `connect.ts`. */
  routes: (router: ConnectRouter) => void;
  /**
   * Services whose REST bindings the gateway serves; default: every service the router
   * registered. Reflection and health know these and every service the router registered.
   */
  services?: readonly DescService[];
  /**
   * Interceptors run after errors are mapped and before the request guard (authentication:
   * an unauthenticated caller learns nothing from validation). They do not run for the
   * {@link PUBLIC_SERVICES}.
   */
  interceptors?: Interceptor[];
  /**
   * Checks the caller of an RPC from its headers alone (the control plane's API key), before the
   * body is read: a caller it refuses costs no more than its headers, its body is dropped unread
   * and the call reaches the interceptors with an empty message. What it returns or throws is put
   * in the handler context under {@link callerCheckKey}. Not run for the {@link PUBLIC_SERVICES}.
   */
  authenticate?: (req: NodeServerRequest, method: DescMethod) => unknown;
  /** Failures of the process's own that are not internal errors (see ErrorClassifier). */
  classifyError?: ErrorClassifier;
  /**
   * Whether the process can answer correctly (database reachable, …); default always ready.
   * `/readyz` and `grpc.health.v1.Health` answer from it.
   */
  readiness?: () => Promise<boolean> | boolean;
  /**
   * The lean path: serves what it takes before anything else (the lean decision and Watch
   * paths): returns true when it answered the request, false to leave it to the router, the
   * probes and the gateway.
   * `shutdown` aborts when the server closes, with the `unavailable` error that a call waiting
   * (for a revision) should answer, as connect-node's handlers do.
   */
  leanPath?: (req: NodeServerRequest, res: NodeServerResponse, shutdown: AbortSignal) => boolean;
  /**
   * Methods whose REST route the gateway serves itself rather than through connect-node (bulk
   * writes, see gateway/direct.ts); with `authenticate` only. Their other surfaces stay on
   * connect-node.
   */
  direct?: readonly DirectMethod[];
  logger?: Logger;
  registry?: Registry;
  /** OpenTelemetry tracing (tracing.ts): a server span per RPC but health and reflection; undefined: off. */
  tracing?: Tracing;
  /** Request body limit of every surface; default 4 MiB. */
  maxBodyBytes?: number;
  /** How long close() lets in-flight requests finish before cutting connections; default 500 ms. */
  shutdownGraceMs?: number;
  /**
   * Plain HTTP routes by exact path (the console's `/console/session`), served after the RPCs
   * and before the probes and the gateway, for every method: the handler answers each itself,
   * its own credentials included.
   */
  httpRoutes?: Readonly<Record<string, (req: NodeServerRequest, res: NodeServerResponse) => Promise<void>>>;
  /**
   * Pages by path prefix (the console's static files, console/assets.ts), tried after
   * `httpRoutes`: true when it answered the request. `GET /`'s pointer then names `/console/`.
   */
  pages?: (req: NodeServerRequest, res: NodeServerResponse, path: string) => boolean;
  /** The OpenAPI document (JSON text) served at `GET /openapi.json` without credentials; none when unset. */
  openApi?: string;
  /** Origins allowed to call from a browser (CORS, see cors.ts); none: no CORS headers. */
  corsOrigins?: readonly string[];
  /**
   * Host names and addresses a request may name in `Host` (`:authority`), any port, besides the
   * loopback ones and `host` when it is not `0.0.0.0` or `::`; any other request is refused
   * (403) before anything else answers (cross-site.ts). Undefined: any `Host`.
   */
  allowedHosts?: readonly string[];
  /**
   * Serve TLS instead of plain text: the certificate's PEM files (a file that does not load stops
   * the start with a ConfigError naming its setting), re-read every `reloadMs` (default 10 s) so
   * that a renewed pair is served without a restart (certificates.ts).
   */
  tls?: CertificateFiles & { reloadMs?: number };
}

export interface RunningServer {
  /** `http://host:port`, or `https://host:port` with TLS */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops accepting, aborts handler contexts, closes idle and (after the grace period) active connections. */
  close(): Promise<void>;
}

/**
 * The codec and encoding of a Connect unary POST (what readUnary reads); undefined for everything
 * else (gRPC, gRPC-Web, streams, encodings the server does not accept), left to connect-node.
 */
function unaryConnectBody(req: NodeServerRequest): { codec: 'json' | 'proto'; encoding: Encoding | 'identity' } | undefined {
  if (req.method !== 'POST') return undefined;
  const encoding = encodingOf(req.headers['content-encoding']);
  if (encoding === undefined) return undefined;
  const type = parseContentType(req.headers['content-type'] ?? null);
  if (!type || type.stream) return undefined;
  return { codec: type.binary ? 'proto' : 'json', encoding };
}

async function* oneChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Throws `invalid_argument` naming the field when a binary message cannot be decoded safely. */
function checkBinary(h: UniversalHandler, bytes: Uint8Array): void {
  checkBinaryRequest(h.method.input, bytes);
}

/** Throws `invalid_argument` naming the field when a JSON message is malformed or does not fit its descriptor. */
function checkJson(h: UniversalHandler, bytes: Uint8Array): void {
  const json = parseJsonBody(bytes, { desc: h.method.input });
  if (json === undefined) throw invalidField('', 'the request message is not valid JSON: it is empty');
  checkMessage(h.method.input, json);
}

/** An envelope holding the empty message, in JSON (`{}`) or binary (no bytes). */
const EMPTY_ENVELOPE = { json: Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d]), proto: Buffer.alloc(5) };

/**
 * The body of a unary gRPC or gRPC-Web call, passed on whole after its uncompressed message
 * envelopes are checked: binary messages by the scanner, JSON ones (`+json`) like every JSON
 * body (unknown fields, types, …, each naming the field). Past `max` bytes it is refused as too
 * large with the error of every other surface (`resource_exhausted`, reason LIMIT). A throw
 * here reaches the client as the call's status, in its protocol.
 */
async function* checkedEnvelopes(
  h: UniversalHandler, body: AsyncIterable<Uint8Array>, max: number, codec: 'proto' | 'json', encoding: Encoding | 'identity', onTooLarge: () => void,
): AsyncIterable<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  for (let r = await it.next(); !r.done; r = await it.next()) {
    size += r.value.length;
    if (size <= max) chunks.push(r.value);
    // Over the limit the rest is read and dropped, not left: leaving the iteration destroys the
    // request (and an HTTP/1.1 connection with it), and an HTTP/2 answer before the body is
    // read leaves the client sending (see dropBody).
    else if (size > DRAIN_LIMIT_BYTES) break;
  }
  if (size > max) {
    onTooLarge();
    throw tooLargeError(new BodyTooLarge(max));
  }
  let bytes: Buffer = Buffer.concat(chunks, size);
  // Compressed messages are inflated here and passed on plain, so they are checked as well.
  try {
    bytes = await inflateEnvelopes(bytes, encoding, max);
  } catch (err) {
    if (!(err instanceof BodyTooLarge)) throw err;
    onTooLarge();
    throw tooLargeError(err);
  }
  // Exactly one plain envelope (1 flag byte, 4 bytes of length), as the lean path requires.
  (codec === 'json' ? checkJson : checkBinary)(h, unaryMessage(bytes));
  yield bytes;
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const SNIFF_BYTES = 14; // "PRI * HTTP/2.0"
const SNIFF_TIMEOUT_MS = 30_000;
const TLS_RELOAD_MS = 10_000;
const READINESS_TIMEOUT_MS = 5_000;

/** Services every process serves, to anyone (no credentials): health checks and server reflection. */
export const PUBLIC_SERVICES: readonly DescService[] = [Health, ServerReflectionV1, ServerReflectionV1alpha];
const PUBLIC_NAMES = new Set(PUBLIC_SERVICES.map((s) => s.typeName));

/** `interceptor`, skipped for calls of the public services. */
function exceptPublic(interceptor: Interceptor): Interceptor {
  return (next) => {
    const wrapped = interceptor(next);
    return (req) => (PUBLIC_NAMES.has(req.service.typeName) ? next(req) : wrapped(req));
  };
}

/** Starts the server and resolves once it listens. */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 8080;
  const name = opts.name ?? 'control plane';
  const logger = opts.logger ?? createLogger();
  const registry = opts.registry ?? createRegistry();
  const maxBodyBytes = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const readiness = opts.readiness ?? (() => true);
  const shutdown = new AbortController();
  // Connect links every in-flight call to this signal (one listener each, removed when the
  // call ends): more than ten concurrent calls are normal, not a leak to warn about.
  setMaxListeners(0, shutdown.signal);

  const isReady = async (): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(readiness),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), READINESS_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      logger.warn({ err }, 'readiness check failed');
      return false;
    } finally {
      clearTimeout(timer);
    }
  };

  /** What `/readyz` and Health answer: not while shutting down, else the readiness option. */
  const serving = async () => !shutdown.signal.aborted && (await isReady());

  const router = createConnectRouter({
    interceptors: [
      ...(opts.tracing ? [exceptPublic(tracingInterceptor(opts.tracing))] : []),
      metricsInterceptor(registry),
      errorInterceptor(logger, opts.classifyError),
      ...(opts.interceptors ?? []).map(exceptPublic),
      requestGuard(),
    ],
    readMaxBytes: maxBodyBytes,
    jsonOptions: JSON_OPTIONS,
    acceptCompression: [compressionGzip, compressionBrotli],
    shutdownSignal: shutdown.signal,
  });
  opts.routes(router);
  const routed = [...new Map(router.handlers.map((h) => [h.service.typeName, h.service])).values()];
  const services = opts.services ?? routed;
  const served = [...new Map([...services, ...routed, ...PUBLIC_SERVICES].map((s) => [s.typeName, s])).values()];
  router.service(Health, healthService({ services: served.map((s) => s.typeName), ready: serving }));
  // ErrorInfo, the detail of every error (errors.ts), so that clients can decode it too.
  const reflection = reflectionServices(new DescriptorIndex(served, [ErrorInfoSchema.file]));
  router.service(ServerReflectionV1, reflection.v1);
  router.service(ServerReflectionV1alpha, reflection.v1alpha);
  const rpcPaths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const servedNames = new Set(router.handlers.map((h) => h.service.typeName));
  const rejected = rejectCounter(registry);
  const gateway = createGateway({
    services, handlers: router.handlers, maxBodyBytes, logger, onReject: (reason) => rejected.inc({ reason }),
    checkCaller: opts.authenticate === undefined ? undefined : (req, method) => checkCaller(opts.authenticate!, req, method),
    direct: opts.direct, metrics: rpcMetrics(registry), tracing: opts.tracing, classifyError: opts.classifyError,
  });

  /**
   * Watches for the client abandoning a call (closing the connection or resetting the stream
   * before the answer is complete): that is no failure of the server's, so it is logged once at
   * debug level and counted as `canceled`. Returns whether the client has gone.
   */
  const watchCancel = (res: NodeServerResponse, what: Record<string, string>): (() => boolean) => {
    let finished = false;
    let gone = false;
    res.once('finish', () => (finished = true));
    res.once('close', () => {
      if (finished) return;
      gone = true;
      logger.debug(what, 'rpc canceled by the client');
      rejected.inc({ reason: 'canceled' });
    });
    const stream = 'stream' in res ? (res.stream as http2.ServerHttp2Stream) : undefined;
    return () => gone || (!finished && (stream ? stream.destroyed : (res as http.ServerResponse).destroyed));
  };

  const serveRpc = (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse) => {
    if (!h.allowedMethods.includes(req.method ?? '')) {
      rejected.inc({ reason: 'method_not_allowed' });
      const allow = h.allowedMethods.join(', ');
      const ce = connectErrorWithInfo(`${req.method} is not allowed on ${h.requestPath}; allowed: ${allow}`, Code.Unimplemented, ErrorReason.UNSPECIFIED);
      return sendConnectError(res, ce, 405, { allow });
    }
    const gone = watchCancel(res, { service: h.service.typeName, method: h.method.name });
    if (req.httpVersionMajor === 1 && !req.headers.host) {
      rejected.inc({ reason: 'bad_request' });
      return sendRpcError(req, res, invalidField('', 'the request has no Host header'));
    }
    const authenticate = opts.authenticate;
    const check = authenticate === undefined || PUBLIC_NAMES.has(h.service.typeName) ? undefined : checkCaller(authenticate, req, h.method);
    const read = (c: CallerCheck | undefined): Promise<UniversalServerRequest | undefined> => {
      if (c?.ok === false) return refusedRequest(h, req, res, c);
      if (req.method === 'GET') return connectGet(h, req, res, c);
      const unary = unaryConnectBody(req);
      const uReq = unary === undefined ? Promise.resolve(grpcRequest(h, req, res)) : readUnary(h, req, res, unary);
      return c === undefined ? uReq : uReq.then((r) => r && { ...r, contextValues: createContextValues().set(callerCheckKey, c) });
    };
    const ready = check instanceof Promise ? check.then(read) : read(check);
    ready
      .then((uReq) => (uReq ? h(uReq).then((uRes) => universalResponseToNodeResponse(uRes, res)) : undefined))
      .catch((err: unknown) => {
        // Writing to a client that left fails; watchCancel has counted it.
        if (!gone()) {
          logger.warn({ err, method: h.method.name, service: h.service.typeName }, 'rpc transport failed');
          rejected.inc({ reason: 'transport_error' });
        }
        if (!res.headersSent) {
          res.writeHead(500);
          res.end();
        } else {
          res.end();
        }
      });
  };

  /** A Connect GET as connect-node reads it, once its message is checked (connect-get.ts); undefined when refused (answered here). */
  const connectGet = async (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse, c: CallerCheck | undefined) => {
    try {
      await checkConnectGet(h.method.input, req.url ?? '', maxBodyBytes);
    } catch (err) {
      if (!(err instanceof BodyTooLarge) && !(err instanceof ConnectError)) throw err;
      rejected.inc({ reason: err instanceof BodyTooLarge ? 'body_too_large' : 'bad_request' });
      sendConnectError(res, err instanceof BodyTooLarge ? tooLargeError(err) : err);
      return undefined;
    }
    return universalRequestFromNodeRequest(req, res, undefined, c === undefined ? undefined : createContextValues().set(callerCheckKey, c));
  };

  /**
   * A call whose caller `authenticate` refused, as connect-node reads it: its body dropped unread
   * and replaced by the empty message in the call's own encoding, the refusal in its context, so
   * that the interceptors answer it (and count and trace it) as they answer any refused call.
   */
  const refusedRequest = async (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse, check: CallerCheck): Promise<UniversalServerRequest> => {
    await dropBody(req);
    const contextValues = createContextValues().set(callerCheckKey, check);
    const type = String(req.headers['content-type'] ?? '').toLowerCase();
    const json = /^application\/(?:json|connect\+json|grpc(?:-web)?\+json)(?:;|$)/.test(type);
    const enveloped = /^application\/(?:grpc|connect\+)/.test(type);
    if (req.method === 'GET') return { ...universalRequestFromNodeRequest(req, res, undefined, contextValues) };
    const uReq = json && !enveloped
      ? universalRequestFromNodeRequest(req, res, {}, contextValues)
      : { ...universalRequestFromNodeRequest(req, res, undefined, contextValues), body: oneChunk(enveloped ? EMPTY_ENVELOPE[json ? 'json' : 'proto'] : new Uint8Array(0)) };
    uReq.header.delete('content-encoding');
    uReq.header.delete('content-length');
    return uReq;
  };

  /**
   * A gRPC or gRPC-Web call as connect-node reads it, except that the one message of a unary
   * call is checked (binaryRequestProblem) before connect-node decodes it: its decoder recurses
   * once per nesting level, and it reports any decoding failure as `internal`.
   */
  const grpcRequest = (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse) => {
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    const type = /^application\/grpc(?:-web)?(\+proto|\+json)?(?:;|$)/.exec(String(req.headers['content-type'] ?? ''));
    // An encoding the server does not accept is refused by connect-node.
    const encoding = encodingOf(req.headers['grpc-encoding']);
    if (h.method.methodKind !== 'unary' || !type || encoding === undefined) return uReq;
    const onTooLarge = () => rejected.inc({ reason: 'body_too_large' });
    return { ...uReq, body: checkedEnvelopes(h, uReq.body as AsyncIterable<Uint8Array>, maxBodyBytes, type[1] === '+json' ? 'json' : 'proto', encoding, onTooLarge) };
  };

  /**
   * A Connect unary call's body, read here instead of by connect-node: within the body limit
   * without cutting the connection when it is over (see gateway/body.ts), and, for JSON, checked
   * against the request descriptor like a REST body (unknown fields, JSON types, timestamps,
   * nesting and storable JSON values, each naming the field) before the decoder recurses into
   * it. Answers the error itself and resolves undefined when the body is refused.
   */
  const readUnary = async (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse, { codec, encoding }: { codec: 'json' | 'proto'; encoding: Encoding | 'identity' }) => {
    try {
      let uReq: UniversalServerRequest;
      if (encoding === 'identity' && codec === 'json') {
        const body = (await readJsonBody(req, maxBodyBytes, { desc: h.method.input })) ?? {};
        checkMessage(h.method.input, body);
        uReq = universalRequestFromNodeRequest(req, res, body, undefined);
      } else {
        let bytes = await readBody(req, maxBodyBytes);
        // A compressed body is inflated here and passed on plain (connect-node is told it is).
        if (encoding !== 'identity') bytes = await inflate(encoding, bytes, maxBodyBytes);
        if (codec === 'json') {
          const body = parseJsonBody(bytes, { desc: h.method.input }) ?? {};
          checkMessage(h.method.input, body);
          uReq = universalRequestFromNodeRequest(req, res, body, undefined);
        } else {
          checkBinary(h, bytes);
          uReq = { ...universalRequestFromNodeRequest(req, res, undefined, undefined), body: oneChunk(bytes) };
        }
        // connect-node reads it as the plain body it now is.
        uReq.header.delete('content-encoding');
        uReq.header.delete('content-length');
      }
      return uReq;
    } catch (err) {
      if (!(err instanceof BodyTooLarge) && !(err instanceof ConnectError)) throw err;
      rejected.inc({ reason: err instanceof BodyTooLarge ? 'body_too_large' : 'bad_request' });
      sendConnectError(res, err instanceof BodyTooLarge ? tooLargeError(err) : err);
      return undefined;
    }
  };

  const sendJson = (res: NodeServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const buf = Buffer.from(JSON.stringify(body));
    res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(buf.length) });
    res.end(buf);
  };

  const probes: Record<string, (res: NodeServerResponse) => Promise<void> | void> = {
    '/healthz': (res) => sendJson(res, 200, { status: 'ok' }),
    '/readyz': async (res) => {
      const ready = await serving();
      sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
    },
    '/metrics': async (res) => {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
    },
  };
  if (opts.openApi !== undefined) {
    const doc = Buffer.from(opts.openApi);
    probes['/openapi.json'] = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(doc.length) });
      res.end(doc);
    };
  }
  // `GET /`, a newcomer's first request: where the API document and the probes are.
  const pointer = {
    service: `authz ${name}`,
    ...(opts.openApi !== undefined ? { docs: '/openapi.json' } : {}),
    health: '/healthz',
    ready: '/readyz',
    metrics: '/metrics',
    ...(opts.pages !== undefined ? { console: '/console/' } : {}),
  };
  probes['/'] = (res) => sendJson(res, 200, pointer);

  /**
   * A call no handler serves, when the caller speaks gRPC or gRPC-Web (whatever the path: those
   * clients call nothing else) or the path is an RPC's that no REST binding declares either.
   */
  const unknownMethod = (req: NodeServerRequest, path: string): boolean =>
    grpcFlavour(req) !== undefined || (RPC_PATH.test(path) && gateway.routes.match((req.method ?? 'GET').toUpperCase(), path).kind === 'not_found');

  const leanPath = opts.leanPath;
  const cors = opts.corsOrigins?.length ? corsHandler(opts.corsOrigins) : undefined;
  const hostAllowed = opts.allowedHosts === undefined ? undefined : hostAllowlist(opts.allowedHosts, host);
  const onRequest = (req: NodeServerRequest, res: NodeServerResponse) => {
    // First, CORS included: a page that reached the listener under its own name (DNS rebinding) learns nothing.
    if (hostAllowed !== undefined && !hostAllowed(req)) {
      rejected.inc({ reason: 'host_not_allowed' });
      return refuseHost(req, res);
    }
    if (cors === undefined) return guarded(req, res);
    cors(req, res, () => guarded(req, res));
  };
  /** After CORS, so that a listed origin can read the refusal. */
  const guarded = (req: NodeServerRequest, res: NodeServerResponse) => {
    const media = crossSiteBody(req);
    if (media === undefined) return route(req, res);
    rejected.inc({ reason: 'unsupported_media_type' });
    refuseCrossSiteBody(req, res, media);
  };
  const route = (req: NodeServerRequest, res: NodeServerResponse) => {
    if (leanPath !== undefined && leanPath(req, res, shutdown.signal)) return;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rpc = rpcPaths.get(path);
    if (rpc) return serveRpc(rpc, req, res);
    const httpRoute = opts.httpRoutes !== undefined && Object.hasOwn(opts.httpRoutes, path) ? opts.httpRoutes[path] : undefined;
    if (httpRoute !== undefined) {
      httpRoute(req, res).catch((err: unknown) => {
        logger.error({ err, path, method: req.method }, 'http route failed');
        rejected.inc({ reason: 'transport_error' });
        if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: 'internal error', details: [] });
        else res.end();
      });
      return;
    }
    if (opts.pages !== undefined && opts.pages(req, res, path)) return;
    const probe = probes[path];
    if (probe) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        rejected.inc({ reason: 'probe_method' });
        return sendJson(res, 405, { code: 'unimplemented', message: `${req.method} is not allowed on ${path}`, details: [] }, { allow: 'GET, HEAD' });
      }
      Promise.resolve(probe(res)).catch((err: unknown) => {
        logger.error({ err, path }, 'probe failed');
        if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: 'internal error', details: [] });
      });
      return;
    }
    if (unknownMethod(req, path)) {
      rejected.inc({ reason: 'unimplemented' });
      return sendRpcError(req, res, unknownMethodError(path, servedNames));
    }
    const gone = watchCancel(res, { path, method: req.method ?? '' });
    gateway.handle(req, res).catch((err: unknown) => {
      if (gone()) return void res.end();
      logger.error({ err, path, method: req.method }, 'gateway failed');
      rejected.inc({ reason: 'transport_error' });
      if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: 'internal error', details: [] });
      else res.end();
    });
  };

  // No per-request bookkeeping of what is in flight (a listener per response cost more than the
  // rest of the wrapper): Node's HTTP/1.1 server keeps the response being written on its socket
  // (`_httpMessage`, null between requests), which close() reads once.
  const h1 = http.createServer((req, res) => {
    if (shutdown.signal.aborted) res.setHeader('connection', 'close');
    onRequest(req, res);
  });
  const h2 = http2.createServer({}, onRequest as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void);
  const sockets = new Set<net.Socket>();
  const h2Sockets = new WeakSet<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    if (shutdown.signal.aborted) s.close();
  });
  h2.on('sessionError', (err) => logger.debug({ err }, 'http2 session error'));
  h1.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    logger.debug({ err }, 'http1 client error');
    // A client that went away (reset, or closed mid-request) gets no answer and is not counted.
    if (!socket.writable || err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_EOF_STATE') return socket.destroy();
    rejected.inc({ reason: 'bad_request' });
    const [status, body] = err.code === 'HPE_HEADER_OVERFLOW'
      ? ['431 Request Header Fields Too Large', { code: 'resource_exhausted', message: `request headers exceed ${http.maxHeaderSize} bytes`, details: [] }]
      : ['400 Bad Request', { code: 'invalid_argument', message: 'malformed HTTP request', details: [] }];
    const text = JSON.stringify(body);
    socket.end(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  });

  /** A connection the h1 or h2 server is about to be given: close() drains it, then ends it. */
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
    });
    socket.on('error', (err) => logger.debug({ err }, 'socket error'));
  };
  const handOver = (socket: net.Socket, toH2: boolean) => {
    if (toH2) h2Sockets.add(socket);
    (toH2 ? h2 : h1).emit('connection', socket);
  };

  let server: net.Server;
  let reloader: CertificateReloader | undefined;
  // TCP connections of the TLS listener, handshaking or not: close() destroys what is left of them.
  const tcpSockets = new Set<net.Socket>();
  if (opts.tls) {
    const files = opts.tls;
    const pair = await readCertificatePair(files);
    const secure = tls.createServer(
      { ...secureContextOptions(pair), ALPNProtocols: ['h2', 'http/1.1'], handshakeTimeout: SNIFF_TIMEOUT_MS },
      (socket) => {
        track(socket);
        // No ALPN (false) is an HTTP/1.1 client.
        handOver(socket, socket.alpnProtocol === 'h2');
      },
    );
    secure.on('connection', (socket: net.Socket) => {
      tcpSockets.add(socket);
      socket.once('close', () => tcpSockets.delete(socket));
    });
    // A client that does not trust the certificate, or speaks plain text here: its failure, not the server's.
    secure.on('tlsClientError', (err) => logger.debug({ err }, 'TLS handshake failed'));
    reloader = reloadCertificates(files, pair, {
      intervalMs: files.reloadMs ?? TLS_RELOAD_MS,
      logger,
      apply: (next) => secure.setSecureContext(secureContextOptions(next)),
    });
    server = secure;
  } else {
    server = net.createServer((socket) => {
      track(socket);
      let seen: Buffer = Buffer.alloc(0);
      const timer = setTimeout(() => socket.destroy(), SNIFF_TIMEOUT_MS);
      const onData = (chunk: Buffer) => {
        seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
        const n = Math.min(seen.length, SNIFF_BYTES);
        const isH2Prefix = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
        if (isH2Prefix && seen.length < SNIFF_BYTES) return; // wait for more bytes
        clearTimeout(timer);
        socket.off('data', onData);
        socket.pause();
        socket.unshift(seen);
        handOver(socket, isH2Prefix);
        process.nextTick(() => socket.resume());
      };
      socket.on('data', onData);
      socket.once('close', () => clearTimeout(timer));
    });
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    reloader?.stop();
    throw err;
  }
  server.on('error', (err) => logger.error({ err }, 'listener error'));
  const addr = server.address() as net.AddressInfo;
  const urlHost = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `${opts.tls ? 'https' : 'http'}://${urlHost}:${addr.port}`;
  logger.info({ url }, `${name} listening (gRPC, gRPC-Web, Connect, REST${opts.tls ? ', over TLS' : ''})`);

  /**
   * Ends an HTTP/1.1 connection now when no response is under way on it, else once its responses
   * are written: the one under way is told to close the connection after it (when its head is
   * not written yet), and requests arriving from now on are answered with `connection: close`.
   */
  const endWhenIdle = (socket: net.Socket): void => {
    const res = (socket as net.Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (!res) {
      socket.end();
      return;
    }
    if (!res.headersSent) res.setHeader('connection', 'close');
    res.once('close', () => setImmediate(() => endWhenIdle(socket)));
  };

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      // Calls waiting on the signal (a decision waiting for a revision) answer this, not `canceled`.
      shutdown.abort(connectErrorWithInfo('the server is shutting down; retry on another replica', Code.Unavailable, ErrorReason.UNSPECIFIED));
      reloader?.stop();
      const listenerClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      for (const socket of sockets) if (!h2Sockets.has(socket)) endWhenIdle(socket);
      const grace = opts.shutdownGraceMs ?? 500;
      const drained = new Promise<void>((resolve) => {
        const check = () => (sockets.size === 0 ? resolve() : setTimeout(check, 10));
        check();
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise<void>((r) => (timer = setTimeout(r, grace)))]);
      clearTimeout(timer);
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
      for (const s of tcpSockets) s.destroy();
      h1.close();
      h2.close();
      await listenerClosed;
      logger.info({ url }, `${name} closed`);
    })();
    return closing;
  };

  return { url, host: addr.address, port: addr.port, close };
}
