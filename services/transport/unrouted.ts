/**
 * Calls the server answers itself, before any handler, in the caller's protocol and with the
 * `authz.v1.ErrorInfo` detail of every error: a method it does not serve (`unimplemented`), and
 * an HTTP method an RPC path does not take (405 with `Allow`). Without this a gRPC client asking
 * for an unknown method got the REST gateway's JSON 404, which gRPC clients cannot read.
 */
import { Code, type ConnectError } from '@connectrpc/connect';
import { codeToHttpStatus, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { ServerHttp2Stream } from 'node:http2';
import { ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { dropBody } from './body.js';
import { connectErrorWithInfo } from './errors.js';
import type { NodeServerRequest, NodeServerResponse } from './node-types.js';

/** The gRPC flavour of a request, from its content type; undefined for anything else. */
export function grpcFlavour(req: NodeServerRequest): 'grpc' | 'grpc-web' | undefined {
  const type = String(req.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('application/grpc-web')) return 'grpc-web';
  if (type === 'application/grpc' || type.startsWith('application/grpc+') || type.startsWith('application/grpc;')) return 'grpc';
  return undefined;
}

/** `/package.Service/Method`: the path of an RPC (a dotted service name, as every served one has). */
export const RPC_PATH = /^\/[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\/[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The error of a call to `path` that no handler serves, worded as gRPC servers word it
 * (`unknown service …`, `unknown method … for service …`).
 */
export function unknownMethodError(path: string, servedServices: ReadonlySet<string>): ConnectError {
  const slash = path.lastIndexOf('/');
  const service = path.slice(1, slash);
  const method = path.slice(slash + 1);
  const message = slash > 0 && servedServices.has(service)
    ? `unknown method ${method} for service ${service}`
    : `unknown service ${slash > 0 ? service : path}`;
  return connectErrorWithInfo(message, Code.Unimplemented, ErrorReason.UNSPECIFIED);
}

/** A Connect unary error: its JSON body, with the code's HTTP status unless `status` is given. */
export function sendConnectError(res: NodeServerResponse, ce: ConnectError, status?: number, headers: Record<string, string> = {}): void {
  // Details written as connect-node writes a handler's error (JSON_OPTIONS: implicit fields too).
  const body = Buffer.from(errorToJsonBytes(ce, { alwaysEmitImplicit: true }));
  res.writeHead(status ?? codeToHttpStatus(ce.code), { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) });
  res.end(body);
}

/**
 * `ce` in the caller's protocol, for a call answered before any handler: gRPC as a
 * trailers-only response (HTTP 200, the status in the one HEADERS frame, which ends the
 * stream), gRPC-Web likewise (its status headers and an empty body), anything else as a Connect
 * unary error (JSON, the code's HTTP status).
 */
export function sendRpcError(req: NodeServerRequest, res: NodeServerResponse, ce: ConnectError): void {
  const flavour = grpcFlavour(req);
  if (flavour === undefined) return sendConnectError(res, ce);
  const headers: Record<string, string> = {};
  setTrailerStatus(new Headers(), ce).forEach((v, k) => (headers[k] = v));
  // Answer in the subtype asked for (`+proto`, `+json`); the status needs no message codec.
  headers['content-type'] = String(req.headers['content-type']).split(';')[0].trim().toLowerCase();
  // The request body is not read: it is dropped (see dropBody for when the answer may go).
  void dropBody(req).then(() => {
    if (flavour === 'grpc' && 'stream' in res) {
      // res.writeHead + end would send the status in HEADERS without END_STREAM, then an empty
      // DATA frame: gRPC clients then wait for trailers. A trailers-only answer is one frame.
      const stream = (res as unknown as { stream: ServerHttp2Stream }).stream;
      if (!stream.headersSent && !stream.destroyed) stream.respond({ ':status': 200, ...headers }, { endStream: true });
      return;
    }
    res.writeHead(200, { ...headers, 'content-length': '0' });
    res.end();
  });
}
