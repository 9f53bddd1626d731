/**
 * What keeps a web page from using a listener that answers without credentials (the sidecar on
 * loopback). Two requests a page can make without the listener's consent:
 *
 * - under another name (DNS rebinding): a page whose host name resolves to the listener's
 *   address is same-origin with it and reads its answers. Its requests carry that name in
 *   `Host`, so a listener with an allowlist refuses them (403, `permission_denied`);
 * - cross-origin, without a CORS preflight (form posts, `fetch` with `mode: 'no-cors'`, beacons):
 *   the page cannot read the answer, but the listener acts on the request. Only the
 *   CORS-safelisted content types, or none, can be sent that way, so a body of those types is
 *   refused (415, `invalid_argument`) on every listener.
 *
 * Both are answered before anything else runs, in the caller's protocol.
 */
import { Code, type ConnectError } from '@connectrpc/connect';
import type { Http2ServerRequest } from 'node:http2';
import { ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { canonicalHost, isLoopbackHost, isUnspecifiedHost } from '../common/hosts.js';
import { dropBody } from './body.js';
import { connectErrorWithInfo } from './errors.js';
import { sendError } from './gateway/gateway.js';
import type { NodeServerRequest, NodeServerResponse } from './node-types.js';
import { invalidField } from './gateway/json.js';
import { headerOf } from './headers.js';
import { grpcFlavour, RPC_PATH, sendConnectError, sendRpcError } from './unrouted.js';

/** How many allowed `Host` values are remembered, so that the usual one is not parsed per request. */
const REMEMBERED_HOSTS = 64;

/**
 * Whether a request names a host the listener answers for: a loopback one (hosts.ts), one of
 * `allowed`, or `listenHost` when it is a specific address or name (not `0.0.0.0` or `::`).
 * The port is not compared. A request without `Host` (HTTP/1.0) or `:authority` is let through:
 * browsers always send one.
 */
export function hostAllowlist(allowed: readonly string[], listenHost: string): (req: NodeServerRequest) => boolean {
  const names = new Set<string>();
  for (const entry of allowed) {
    const host = canonicalHost(entry);
    if (host === undefined) throw new Error(`allowedHosts: ${JSON.stringify(entry)} is not a host name or address`);
    names.add(host);
  }
  const listen = canonicalHost(listenHost);
  if (listen !== undefined && !isUnspecifiedHost(listen)) names.add(listen);
  const remembered = new Set<string>();
  return (req) => {
    const value = requestHost(req);
    if (value === undefined || remembered.has(value)) return true;
    const host = hostOfAuthority(value);
    const ok = host !== undefined && (isLoopbackHost(host) || names.has(host));
    if (ok && remembered.size < REMEMBERED_HOSTS) remembered.add(value);
    return ok;
  };
}

/** `Host`, or on HTTP/2 `:authority` (which a client sends instead of `Host`). */
export function requestHost(req: NodeServerRequest): string | undefined {
  if (req.httpVersionMajor === 1) return headerOf(req, 'host');
  const v = req.headers[':authority'] ?? req.headers.host;
  return Array.isArray(v) ? v[0] : v;
}

/** The canonical host of `host[:port]` (`[v6]:port` for IPv6); undefined when malformed. */
function hostOfAuthority(value: string): string | undefined {
  const m = /^(\[[^\]]*\]|[^:[\]]*)(?::\d{0,5})?$/.exec(value);
  return m ? canonicalHost(m[1]) : undefined;
}

/** Answers a request whose `Host` the allowlist refused. */
export function refuseHost(req: NodeServerRequest, res: NodeServerResponse): void {
  const value = requestHost(req) ?? '';
  const ce = connectErrorWithInfo(
    `Host ${JSON.stringify(value.slice(0, 200))} is not a name this server answers to: call it as localhost, 127.0.0.1 or [::1], or by a name it is configured to accept`,
    Code.PermissionDenied,
    ErrorReason.UNSPECIFIED,
  );
  refuse(req, res, ce);
}

/** The media types a page can send cross-origin without a preflight (the CORS-safelisted ones). */
const SIMPLE_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * The media type of a request a web page could have sent cross-origin without a preflight:
 * a `text/plain`, form-encoded or multipart one, or `''` for a body without a content type.
 * Undefined for every other request (GET, HEAD, OPTIONS, JSON, protobuf, Connect, gRPC, and an
 * empty body without a content type).
 */
export function crossSiteBody(req: NodeServerRequest): string | undefined {
  const method = req.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return undefined;
  const type = headerOf(req, 'content-type');
  const media = type === undefined ? '' : type.split(';')[0].trim().toLowerCase();
  if (media !== '') return SIMPLE_TYPES.has(media) ? media : undefined;
  return hasBody(req) ? '' : undefined;
}

/** Whether a request comes with a body (of any length on HTTP/2, where none is declared). */
function hasBody(req: NodeServerRequest): boolean {
  const length = headerOf(req, 'content-length');
  if (length !== undefined) return Number(length) > 0;
  if (req.httpVersionMajor === 1) return headerOf(req, 'transfer-encoding') !== undefined;
  return !(req as Http2ServerRequest).stream.endAfterHeaders;
}

/** Answers a request crossSiteBody found: 415, naming what to send instead. */
export function refuseCrossSiteBody(req: NodeServerRequest, res: NodeServerResponse, media: string): void {
  const what = media === '' ? 'a body without content-type' : `content-type ${media}`;
  const ce = invalidField('', `${what} is not accepted: send application/json (or application/proto, a Connect or a gRPC content type)`);
  refuse(req, res, ce, 415);
}

/**
 * `ce` in the caller's protocol: gRPC and gRPC-Web as a status, an RPC path as a Connect error,
 * anything else as a REST error (the gateway's JSON). The body is read and dropped.
 */
function refuse(req: NodeServerRequest, res: NodeServerResponse, ce: ConnectError, status?: number): void {
  if (grpcFlavour(req) !== undefined) return sendRpcError(req, res, ce);
  void dropBody(req).then(() => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if (RPC_PATH.test(q === -1 ? url : url.slice(0, q))) return sendConnectError(res, ce, status);
    sendError(res, ce, status);
  });
}
