/**
 * CORS, for browsers on other origins calling Connect, gRPC-Web and REST: off unless origins are
 * configured (`SERVICE_CORS_ORIGINS`, `SIDECAR_CORS_ORIGINS`). The maintained `cors` middleware
 * runs before anything else answers, so the lean decision path, connect-node, the gateway and
 * the probes all carry its headers. A preflight (OPTIONS) from an allowed origin is answered
 * there (204); a request from any other origin gets no CORS headers, so the browser refuses it.
 */
import cors from 'cors';
import { cors as connectCors } from '@connectrpc/connect';
import type { NodeServerRequest, NodeServerResponse } from './node-types.js';

/** Request headers a browser may send: Connect's and gRPC-Web's, and the API key. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [...connectCors.allowedHeaders, 'X-Api-Key', 'Authorization'];

/**
 * Response headers a browser script may read: Connect's and gRPC-Web's (`grpc-status`,
 * `grpc-message`, `grpc-status-details-bin`), the revision of a write (as a header, and as the
 * `trailer-` header Connect unary uses for trailers) and the next page's cursor.
 */
export const CORS_EXPOSED_HEADERS: readonly string[] = [...connectCors.exposedHeaders, 'X-Revision', 'Trailer-X-Revision', 'X-Next-Cursor'];

/** Methods of every surface: Connect and gRPC-Web (POST, GET) and the REST bindings. */
export const CORS_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** How long a browser may cache a preflight (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = 7200;

/** Sets the CORS headers of a request (or answers its preflight), then calls `next` unless it answered. */
export type CorsHandler = (req: NodeServerRequest, res: NodeServerResponse, next: () => void) => void;

/** The handler for `origins` (validated origins such as `https://app.example.com`). */
export function corsHandler(origins: readonly string[]): CorsHandler {
  const allowed = new Set(origins);
  const middleware = cors<NodeServerRequest>({
    // Only a listed origin is echoed; any other gets nothing (the callback's `false`).
    origin: (origin, cb) => cb(null, origin !== undefined && allowed.has(origin) ? origin : false),
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: MAX_AGE_SECONDS,
  });
  return (req, res, next) => {
    // Answers differ by Origin once CORS is on, so a cache must keep them apart (also those to
    // callers without an Origin, which a browser's request could otherwise be served from).
    res.setHeader('vary', 'Origin');
    if (req.headers.origin === undefined) return next();
    middleware(req, res, next);
  };
}
