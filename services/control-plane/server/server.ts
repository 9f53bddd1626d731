/**
 * The control-plane server: one port speaking gRPC (h2c with prior knowledge), gRPC-Web and
 * Connect (HTTP/1.1 and h2c), the REST gateway, and the unauthenticated `/healthz`,
 * `/readyz` and `/metrics`. Plain-text HTTP/2 cannot be negotiated, so each TCP connection is
 * sniffed: the HTTP/2 client preface goes to the http2 server, anything else to the http1 one.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { setMaxListeners } from 'node:events';
import * as net from 'node:net';
import type { DescService, JsonReadOptions, JsonWriteOptions } from '@bufbuild/protobuf';
import { createConnectRouter, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import type { UniversalHandler } from '@connectrpc/connect/protocol';
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { authInterceptor } from '../auth/interceptor.js';
import type { KeyVerifier } from '../auth/principal.js';
import type { Config } from '../config.js';
import { errorInterceptor } from '../errors.js';
import { createGateway, MAX_BODY_BYTES, type NodeServerRequest, type NodeServerResponse } from '../gateway/gateway.js';
import { createLogger, createRegistry, metricsInterceptor, rejectCounter } from '../observability.js';

/**
 * JSON options of every surface: implicit fields are always written (`allowed: false`,
 * `priority: 0`), and unknown fields are rejected, as the proto JSON rules recommend.
 */
export const JSON_OPTIONS: Partial<JsonReadOptions & JsonWriteOptions> = {
  alwaysEmitImplicit: true,
  ignoreUnknownFields: false,
};

export interface StartServerOptions {
  /** Listen address; `host` and `port` below override it. */
  config?: Pick<Config, 'host' | 'port'>;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Registers the service implementations, as in a `connect.ts`. */
  routes: (router: ConnectRouter) => void;
  /** Services whose REST bindings the gateway serves; default: every service the router registered. */
  services?: readonly DescService[];
  keyVerifier: KeyVerifier;
  /** Whether the process can answer correctly (database reachable, …); default always ready. */
  readiness?: () => Promise<boolean> | boolean;
  logger?: Logger;
  registry?: Registry;
  /** Extra interceptors, run inside auth (the principal is already in the context). */
  interceptors?: Interceptor[];
  /** Request body limit of every surface; default 4 MiB. */
  maxBodyBytes?: number;
  /** How long close() lets in-flight requests finish before cutting connections; default 500 ms. */
  shutdownGraceMs?: number;
}

export interface RunningServer {
  /** `http://host:port` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops accepting, aborts handler contexts, closes idle and (after the grace period) active connections. */
  close(): Promise<void>;
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const SNIFF_BYTES = 14; // "PRI * HTTP/2.0"
const SNIFF_TIMEOUT_MS = 30_000;
const READINESS_TIMEOUT_MS = 5_000;

/** Starts the server and resolves once it listens. */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  const host = opts.host ?? opts.config?.host ?? '127.0.0.1';
  const port = opts.port ?? opts.config?.port ?? 8080;
  const logger = opts.logger ?? createLogger();
  const registry = opts.registry ?? createRegistry();
  const maxBodyBytes = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const readiness = opts.readiness ?? (() => true);
  const shutdown = new AbortController();
  // Connect links every in-flight call to this signal (one listener each, removed when the
  // call ends): more than ten concurrent calls are normal, not a leak to warn about.
  setMaxListeners(0, shutdown.signal);

  const router = createConnectRouter({
    interceptors: [
      metricsInterceptor(registry),
      errorInterceptor(logger),
      authInterceptor(opts.keyVerifier),
      ...(opts.interceptors ?? []),
    ],
    readMaxBytes: maxBodyBytes,
    jsonOptions: JSON_OPTIONS,
    acceptCompression: [compressionGzip, compressionBrotli],
    shutdownSignal: shutdown.signal,
  });
  opts.routes(router);
  const rpcPaths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const services = opts.services ?? [...new Map(router.handlers.map((h) => [h.service.typeName, h.service])).values()];
  const rejected = rejectCounter(registry);
  const gateway = createGateway({ services, handlers: router.handlers, maxBodyBytes, logger, onReject: (reason) => rejected.inc({ reason }) });

  const serveRpc = (h: UniversalHandler, req: NodeServerRequest, res: NodeServerResponse) => {
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    h(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((err: unknown) => {
        logger.warn({ err, method: h.method.name, service: h.service.typeName }, 'rpc transport failed');
        rejected.inc({ reason: 'transport_error' });
        if (!res.headersSent) {
          res.writeHead(500);
          res.end();
        } else {
          res.end();
        }
      });
  };

  const sendJson = (res: NodeServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const buf = Buffer.from(JSON.stringify(body));
    res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(buf.length) });
    res.end(buf);
  };

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

  const probes: Record<string, (res: NodeServerResponse) => Promise<void> | void> = {
    '/healthz': (res) => sendJson(res, 200, { status: 'ok' }),
    '/readyz': async (res) => {
      const ready = !shutdown.signal.aborted && (await isReady());
      sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
    },
    '/metrics': async (res) => {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
    },
  };

  const onRequest = (req: NodeServerRequest, res: NodeServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rpc = rpcPaths.get(path);
    if (rpc) return serveRpc(rpc, req, res);
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
    gateway.handle(req, res).catch((err: unknown) => {
      logger.error({ err, path, method: req.method }, 'gateway failed');
      rejected.inc({ reason: 'transport_error' });
      if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: 'internal error', details: [] });
      else res.end();
    });
  };

  // Requests in flight per HTTP/1.1 connection, so close() can end idle connections at once.
  // (http.Server tracks connections only for sockets it accepted itself.)
  const inFlight = new Map<net.Socket, number>();
  const h1 = http.createServer((req, res) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    if (shutdown.signal.aborted) res.setHeader('connection', 'close');
    res.once('close', () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (left === 0 && shutdown.signal.aborted) socket.end();
    });
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
    if (socket.writable && err.code !== 'ECONNRESET') socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      inFlight.delete(socket);
    });
    socket.on('error', (err) => logger.debug({ err }, 'socket error'));
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
      if (isH2Prefix) h2Sockets.add(socket);
      (isH2Prefix ? h2 : h1).emit('connection', socket);
      process.nextTick(() => socket.resume());
    };
    socket.on('data', onData);
    socket.once('close', () => clearTimeout(timer));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'listener error'));
  const addr = server.address() as net.AddressInfo;
  const urlHost = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `http://${urlHost}:${addr.port}`;
  logger.info({ url }, 'control plane listening (gRPC, gRPC-Web, Connect, REST)');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      shutdown.abort();
      const listenerClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      for (const socket of sockets) {
        if (!h2Sockets.has(socket) && (inFlight.get(socket) ?? 0) === 0) socket.end();
      }
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
      h1.close();
      h2.close();
      await listenerClosed;
      logger.info({ url }, 'control plane closed');
    })();
    return closing;
  };

  return { url, host: addr.address, port: addr.port, close };
}
