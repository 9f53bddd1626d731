/**
 * The lean path of `SnapshotService/Watch` for the calls sidecars make: gRPC over HTTP/2, binary,
 * the request not compressed, the answers plain or gzipped. connect-node serializes every message
 * it sends (a snapshot chunk already encoded once, see snapshotParts, is copied into a new 4 MiB
 * buffer by protobuf-es, then into another by its envelope), and runs its async-iterable
 * machinery per message. Here:
 * - a snapshot chunk's kept bytes are written as they are, after a 6-byte head (envelope and tag);
 * - a revision's message, and a heartbeat of a tenant's caught-up streams, is encoded once for
 *   every stream of this process (frames.ts), and written to them in one pass (fanout.ts);
 * - the stream writes to the response itself (a StreamSink), without an async loop per message;
 * - compression is chosen per stream as connect-node chooses it (the first of the client's
 *   `grpc-accept-encoding` the server knows), and a revision is gzipped once for all the streams
 *   that chose gzip (frames.ts).
 * Every other call (Connect, gRPC-Web, JSON, a compressed request, a client that prefers brotli)
 * goes to connect-node. The checks are the same (`leanCaller` for the key and tier, the request
 * guard, `openWatch`), errors take connect-node's shape (status, message and ErrorInfo in
 * trailers), and the RPC metrics and spans are recorded alike.
 *
 * Backpressure is connect-node's: the stream's next message is written only once the previous one
 * was written through (`write` returned true, or 'drain' came).
 */
import type { Http2ServerResponse } from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import { codeToString } from '@connectrpc/connect/protocol-connect';
import { parseTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { Logger } from 'pino';
import { SnapshotService, WatchRequestSchema, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { BodyTooLarge, dropBody, readBodyThen } from '../../transport/body.js';
import { unaryMessage } from '../../transport/compression.js';
import { toConnectError } from '../../transport/errors.js';
import { tooLargeError } from '../../transport/gateway/gateway.js';
import type { NodeServerRequest, NodeServerResponse } from '../../transport/node-types.js';
import { checkRequestMessage } from '../../transport/guard.js';
import { decodeBinaryRequest } from '../../transport/binary-scan.js';
import { headerOf } from '../../transport/headers.js';
import { startNodeRpcSpan } from '../../transport/tracing.js';
import type { LeanRpcOptions } from '../../decision/lean.js';
import { credentialsOfNode } from '../auth/interceptor.js';
import type { Principal } from '../auth/principal.js';
import type { WatchHub } from './hub.js';
import { framesOf, prepareFrames, type FrameEncoding } from './frames.js';
import type { KeyGuard } from './key-guard.js';
import { openWatch } from './service.js';
import type { StreamSink } from './stream.js';

const PATH = `/${SnapshotService.typeName}/Watch`;
const CONTENT_TYPE = 'application/grpc+proto';
/** The encodings connect-node compresses answers with (server.ts acceptCompression), in its order. */
const COMPRESSIONS = ['gzip', 'br'];

/**
 * `rejected` also counts streams the client canceled, as the server counts other calls a client
 * abandons (connect-node ends a canceled stream's response itself, so the server does not count
 * those).
 */
export interface LeanWatchOptions extends LeanRpcOptions {
  hub: WatchHub;
  keys?: KeyGuard;
  /** The caller's principal for a method of SnapshotService (`leanCaller`); throws unauthenticated / permission_denied. */
  caller: (req: NodeServerRequest, method: string) => Principal | Promise<Principal>;
}

/**
 * How connect-node would compress the answers: the first of the client's `grpc-accept-encoding`
 * that the server knows, else none (the request itself is not compressed: see takesWatch).
 */
export function responseEncoding(req: NodeServerRequest): string {
  const accept = headerOf(req, 'grpc-accept-encoding');
  if (accept === undefined) return 'identity';
  return accept.split(',').map((e) => e.trim()).find((e) => COMPRESSIONS.includes(e)) ?? 'identity';
}

/** Whether the lean path takes the request (see the module comment). */
export function takesWatch(req: NodeServerRequest): boolean {
  if (req.method !== 'POST' || req.url !== PATH || req.httpVersionMajor !== 2) return false;
  const type = (headerOf(req, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/grpc' && type !== CONTENT_TYPE) return false;
  if (headerOf(req, 'content-encoding') !== undefined) return false;
  const encoding = headerOf(req, 'grpc-encoding');
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return false;
  const answers = responseEncoding(req);
  return answers === 'identity' || answers === 'gzip';
}

/**
 * The lean Watch handler: serves and returns true for a request it takes (`takesWatch`), returns
 * false touching nothing for any other.
 */
export function leanWatch(opts: LeanWatchOptions): (req: NodeServerRequest, res: NodeServerResponse, shutdown?: AbortSignal) => boolean {
  const service = SnapshotService.typeName;
  return (req, res, shutdown) => {
    if (!takesWatch(req)) return false;
    const encoding = responseEncoding(req) as FrameEncoding;
    const head: Record<string, string> = encoding === 'gzip' ? { 'content-type': CONTENT_TYPE, 'grpc-encoding': 'gzip' } : { 'content-type': CONTENT_TYPE };
    const h2 = res as Http2ServerResponse;
    const start = performance.now();
    const span = opts.tracing === undefined ? undefined : startNodeRpcSpan(opts.tracing, service, 'Watch', 'grpc', req.headers);
    let release: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const onShutdown = () => end(new ConnectError('the server is shutting down; resume from the last revision held', Code.Unavailable));
    const onClose = () => end(new ConnectError('the client canceled the Watch stream', Code.Canceled));

    /** Ends the call once: with its error in trailers (or, after a cancel, nothing written). */
    function end(err: unknown): void {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      shutdown?.removeEventListener('abort', onShutdown);
      res.off('close', onClose);
      release?.();
      const ce = err instanceof BodyTooLarge ? tooLargeError(err) : toConnectError(err, opts.classifyError);
      const seconds = (performance.now() - start) / 1e3;
      const labels = { service, method: 'Watch', code: codeToString(ce.code) };
      opts.metrics.requests.child(labels).inc();
      opts.metrics.duration.child(labels).observe(seconds);
      if (span !== undefined) opts.tracing!.endRpcSpan(span, 'grpc', ce.code, ce.rawMessage);
      if (ce.code === Code.Canceled) {
        opts.logger.debug({ method: 'Watch', service }, 'rpc canceled by the client');
        opts.rejected?.inc({ reason: 'canceled' });
        if (!res.writableEnded && !res.destroyed) h2.stream.close();
        return;
      }
      if (ce.code === Code.Internal) opts.logger.error({ err: ce.cause ?? err, method: 'Watch' }, 'rpc failed with an internal error');
      else if (ce.code === Code.Unavailable && ce.cause !== undefined) opts.logger.warn({ err: ce.cause, method: 'Watch' }, `rpc failed: ${ce.rawMessage}`);
      if (res.writableEnded || res.destroyed) return;
      const trailers: Record<string, string> = {};
      setTrailerStatus(new Headers(), ce).forEach((v, k) => (trailers[k] = v));
      // Before any message: headers then trailers, as connect-node answers a stream that failed at once.
      if (!res.headersSent) h2.writeHead(200, head);
      h2.addTrailers(trailers);
      h2.end();
    }

    res.once('close', onClose);
    shutdown?.addEventListener('abort', onShutdown, { once: true });
    try {
      const raw = headerOf(req, 'grpc-timeout');
      if (raw !== undefined) {
        const t = parseTimeout(String(raw), Number.MAX_SAFE_INTEGER);
        if (t.error) throw t.error;
        if (t.timeoutMs !== undefined) timer = setTimeout(() => end(new ConnectError('the deadline passed', Code.DeadlineExceeded)), t.timeoutMs);
      }
    } catch (err) {
      end(err);
      return true;
    }
    // The caller first, from the headers: a refused one costs no more (its body is dropped unread).
    Promise.resolve()
      .then(() => opts.caller(req, 'Watch'))
      .then((principal) => {
        if (ended) return;
        readBodyThen(req, opts.maxBodyBytes, (err, body) => {
          if (err) return end(err);
          if (ended) return;
          try {
            const request = decodeBinaryRequest(WatchRequestSchema, unaryMessage(body!));
            checkRequestMessage(WatchRequestSchema, request as unknown as Record<string, unknown>);
            const opened = openWatch(opts.hub, opts.keys, principal, credentialsOfNode(req.headers), request, false);
            release = opened.release;
            opened.stream.attach(sink());
          } catch (e) {
            end(e);
          }
        });
      }, (err: unknown) => {
        void dropBody(req).then(() => end(err));
      });
    return true;

    /** The response as the stream's sink: it writes each message's frames, and ends the call with the stream. */
    function sink(): StreamSink {
      const out = h2.stream;
      return {
        write(msg: WatchResponse, frames?: Buffer[]): boolean {
          if (ended || out.destroyed) return true;
          if (!res.headersSent) h2.writeHead(200, head);
          let flushed = true;
          for (const frame of frames ?? framesOf(msg, encoding)) flushed = out.write(frame);
          return flushed;
        },
        prepare: encoding === 'identity' ? undefined : (msg) => prepareFrames(msg, encoding),
        onDrain(fn: () => void): void {
          const done = () => {
            out.off('drain', done);
            res.off('close', done);
            if (!ended) fn();
          };
          out.on('drain', done);
          res.on('close', done);
        },
        end,
      };
    }
  };
}
