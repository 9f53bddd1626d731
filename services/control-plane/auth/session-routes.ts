/**
 * `/console/session`, the console's sign-in (a plain HTTP route beside the RPCs, like the probes:
 * it sets and clears a cookie, which no RPC surface does, and a browser reaches it with `fetch`).
 *
 * - `POST` with the API key in `x-api-key` or `Authorization: Bearer` (never in the URL or a
 *   body): opens a session and answers who signed in, with the cookie in `Set-Cookie`;
 * - `GET` with the cookie: who the session is, or 401;
 * - `DELETE`: ends the session the cookie names and clears the cookie.
 *
 * Every method refuses a request from another origin (sessions.ts, crossOriginRefusal), and the
 * server refuses the bodies a cross-site form can send before this runs (cross-site.ts).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { dropBody } from '../../transport/body.js';
import { connectErrorWithInfo } from '../../transport/errors.js';
import { sendError } from '../../transport/gateway/gateway.js';
import type { NodeServerRequest, NodeServerResponse } from '../../transport/node-types.js';
import { credentialsOfNode } from './interceptor.js';
import type { Principal } from './principal.js';
import { crossOriginRefusal, sessionCookie, sessionSetCookie, type Sessions } from './sessions.js';

export const SESSION_PATH = '/console/session';

/** What a session answer says: who signed in, and until when at the latest. */
function describe(p: Principal, expiresAt: Date, sessions: Sessions): Record<string, unknown> {
  return {
    keyId: p.keyId,
    kind: p.kind,
    ...(p.tenantId ? { tenantId: p.tenantId } : {}),
    ...(p.environment ? { environmentId: p.environment.id } : {}),
    subjectId: p.subjectId,
    expiresAt: expiresAt.toISOString(),
    idleTimeoutSeconds: Math.floor(sessions.idleMs / 1000),
  };
}

function header(req: NodeServerRequest, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return typeof v === 'string' ? v : v.join(', ');
}

const NO_STORE = { 'cache-control': 'no-store' };

function sendJson(res: NodeServerResponse, body: unknown, headers: Record<string, string>): void {
  const buf = Buffer.from(JSON.stringify(body));
  res.writeHead(200, { ...NO_STORE, ...headers, 'content-type': 'application/json', 'content-length': String(buf.length) });
  res.end(buf);
}

const ended = () => connectErrorWithInfo('no session: sign in with POST /console/session and an API key', Code.Unauthenticated, ErrorReason.UNAUTHENTICATED);

/** The handler of `/console/session`. */
export function sessionRoute(sessions: Sessions): (req: NodeServerRequest, res: NodeServerResponse) => Promise<void> {
  const serve = async (req: NodeServerRequest, res: NodeServerResponse): Promise<void> => {
    const refusal = crossOriginRefusal((name) => header(req, name), sessions.secure);
    if (refusal !== undefined) throw refusal;
    const cookie = () => sessionCookie(header(req, 'cookie'), sessions.cookieName);
    switch (req.method) {
      case 'POST': {
        const secret = credentialsOfNode(req.headers);
        if (secret === undefined) throw connectErrorWithInfo('send the API key in x-api-key or Authorization: Bearer', Code.Unauthenticated, ErrorReason.UNAUTHENTICATED);
        const opened = await sessions.open(secret);
        // Whole seconds, rounded up: the browser keeps sending the cookie until the session has
        // ended, so the server says why it ended (rounded down, the cookie vanished up to a second
        // early and the console could only report missing credentials).
        const maxAge = Math.ceil((opened.expiresAt.getTime() - sessions.now()) / 1000);
        return sendJson(res, describe(opened.principal, opened.expiresAt, sessions), { 'set-cookie': sessionSetCookie(sessions, opened.id, maxAge) });
      }
      case 'GET': {
        const id = cookie();
        const live = id === undefined ? null : await sessions.live(id);
        if (live === null) throw ended();
        return sendJson(res, describe(live.principal, live.expiresAt, sessions), {});
      }
      case 'DELETE': {
        const id = cookie();
        if (id !== undefined) await sessions.end(id);
        return sendJson(res, {}, { 'set-cookie': sessionSetCookie(sessions, undefined) });
      }
      default: {
        const ce = connectErrorWithInfo(`${req.method} is not allowed on ${SESSION_PATH}; allowed: GET, POST, DELETE`, Code.Unimplemented, ErrorReason.UNSPECIFIED);
        return sendError(res, ce, 405, { ...NO_STORE, allow: 'GET, POST, DELETE' });
      }
    }
  };
  return async (req, res) => {
    // Nothing of the body is used: read and dropped, so that an answer never leaves it unread.
    await dropBody(req);
    try {
      await serve(req, res);
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      sendError(res, err, undefined, NO_STORE);
    }
  };
}
