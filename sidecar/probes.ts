/**
 * The sidecar's probe listener (`SIDECAR_PROBE_PORT`): a small plain HTTP/1.1 server that answers
 * only `GET`/`HEAD` of `/healthz`, `/readyz` and `/metrics`, as the main listener does. The main
 * listener answers decisions without credentials, so it stays on loopback; the kubelet's HTTP
 * probes and Prometheus come to the pod's IP, and this listener is what they reach. It never
 * answers a decision: every other path is 404, whatever the method or protocol.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { rejectCounter } from '../services/transport/observability.js';

export interface ProbeServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Whether decisions can be answered (`/readyz`); the main listener's readiness. */
  readiness: () => boolean;
  /** The registry the main listener's `/metrics` serves. */
  registry: Registry;
  logger: Logger;
}

export interface RunningProbeServer {
  /** `http://host:port` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Stops listening and cuts open connections (probes and scrapes are retried by their callers). */
  close(): Promise<void>;
}

const PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Starts the probe listener and resolves once it listens. */
export async function startProbeServer(opts: ProbeServerOptions): Promise<RunningProbeServer> {
  const { registry, logger } = opts;
  const rejected = rejectCounter(registry);
  let closing = false;

  const sendJson = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const buf = Buffer.from(JSON.stringify(body));
    res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(buf.length) });
    res.end(buf); // node writes no body for HEAD
  };

  const serve = async (path: string, res: http.ServerResponse) => {
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      // Not ready from the moment shutdown starts, as the main listener.
      let ready = false;
      try {
        ready = !closing && opts.readiness();
      } catch (err) {
        logger.warn({ err }, 'readiness check failed');
      }
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
    }
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  };

  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (closing) res.setHeader('connection', 'close');
    if (!PATHS.has(path)) {
      rejected.inc({ reason: 'not_found' });
      return sendJson(res, 404, { code: 'not_found', message: `${path.slice(0, 200)}: the probe port serves only /healthz, /readyz and /metrics`, details: [] });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      rejected.inc({ reason: 'probe_method' });
      return sendJson(res, 405, { code: 'unimplemented', message: `${req.method} is not allowed on ${path}`, details: [] }, { allow: 'GET, HEAD' });
    }
    serve(path, res).catch((err: unknown) => {
      logger.error({ err, path }, 'probe failed');
      if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: 'internal error', details: [] });
      else res.end();
    });
  });
  // A probe or a scrape is one small request: a slow or silent client gets little time.
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    logger.debug({ err }, 'probe listener client error');
    if (!socket.writable || err.code === 'ECONNRESET') return socket.destroy();
    rejected.inc({ reason: 'bad_request' });
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'probe listener error'));
  const addr = server.address() as net.AddressInfo;
  const urlHost = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `http://${urlHost}:${addr.port}`;
  logger.info({ url }, 'sidecar probe port open (/healthz, /readyz, /metrics; no decisions)');

  let closed: Promise<void> | undefined;
  return {
    url,
    host: addr.address,
    port: addr.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        // Prometheus keeps its connection open between scrapes; nothing here is worth waiting for.
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
