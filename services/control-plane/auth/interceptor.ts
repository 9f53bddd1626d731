/**
 * The auth interceptor: reads the RPC's `(authz.v1.access)` tier from its descriptor, takes
 * the API key from `x-api-key` or `Authorization: Bearer` (or, without either, the console's
 * session cookie: sessions.ts), verifies it and enforces the tier. A method without a tier is
 * denied (fail closed).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { getOption, hasOption, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { AccessTier, access } from '../../../gen/authz/v1/options_pb.js';
import { ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { connectErrorWithInfo } from '../../transport/errors.js';
import { callerCheckKey } from '../../transport/caller-check.js';
import { spanKey, TENANT_ATTRIBUTE } from '../../transport/tracing.js';
import { principalKey, type KeyKind, type KeyVerifier, type Principal } from './principal.js';
import { crossOriginRefusal, sessionCookie, type Sessions } from './sessions.js';

/** Which key kinds each tier admits (spec, Authentication; contract §6). */
export const TIER_KINDS: Readonly<Record<AccessTier, readonly KeyKind[]>> = {
  [AccessTier.UNSPECIFIED]: [],
  [AccessTier.TENANT]: ['user', 'platform'],
  [AccessTier.DECISION]: ['service', 'platform'],
  [AccessTier.PLATFORM]: ['platform'],
};

const TIER_NAMES: Record<AccessTier, string> = {
  [AccessTier.UNSPECIFIED]: 'unspecified',
  [AccessTier.TENANT]: 'tenant',
  [AccessTier.DECISION]: 'decision',
  [AccessTier.PLATFORM]: 'platform',
};

const tiers = new WeakMap<DescMethod, AccessTier>();

/** The access tier an RPC declares, or UNSPECIFIED when it declares none (decoded once per method). */
export function accessTierOf(method: DescMethod): AccessTier {
  let tier = tiers.get(method);
  if (tier === undefined) {
    tier = hasOption(method, access) ? getOption(method, access) : AccessTier.UNSPECIFIED;
    tiers.set(method, tier);
  }
  return tier;
}

const unauthenticated = (message: string) =>
  connectErrorWithInfo(message, Code.Unauthenticated, ErrorReason.UNAUTHENTICATED, undefined, {
    'www-authenticate': 'Bearer realm="authz", ApiKey header="x-api-key"',
  });

/**
 * The API-key secret of a request, from `x-api-key` or `Authorization: Bearer <secret>`.
 * Returns undefined when neither is sent; throws `unauthenticated` for a malformed
 * Authorization header or two different secrets.
 */
export function credentialsOf(header: Headers): string | undefined {
  return credentialsFrom(header.get('x-api-key'), header.get('authorization'));
}

/** A Node header value as `Headers.get` reads it (repeated values joined by `, `). */
function nodeHeader(v: string | string[] | undefined): string | null {
  if (v === undefined) return null;
  return typeof v === 'string' ? v : v.join(', ');
}

/** credentialsOf over Node's request headers (the lean decision path). */
export function credentialsOfNode(headers: IncomingHttpHeaders): string | undefined {
  return credentialsFrom(nodeHeader(headers['x-api-key']), nodeHeader(headers.authorization));
}

function credentialsFrom(xApiKey: string | null, authorizationHeader: string | null): string | undefined {
  const apiKey = xApiKey?.trim() || undefined;
  let bearer: string | undefined;
  const authorization = authorizationHeader?.trim();
  if (authorization) {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (!m) throw unauthenticated('the Authorization header must be "Bearer <API key>"');
    bearer = m[1];
  }
  if (apiKey !== undefined && bearer !== undefined && apiKey !== bearer) {
    throw unauthenticated('x-api-key and Authorization carry different credentials');
  }
  return apiKey ?? bearer;
}

/**
 * Verifies the caller's API key and checks it against the method's tier; puts the principal
 * into the handler context under `principalKey`. Missing, unknown, revoked or expired
 * credentials are `unauthenticated` (401); a kind the tier does not admit, or a method without
 * a tier, is `permission_denied` (403). Tenant reach is the handler's job (assertTenantReach),
 * since only it knows which tenant a request addresses. When the server checked the caller
 * before reading the body (StartServerOptions `authenticate` = apiKeyCaller), its result is taken
 * from the context instead of verifying again.
 */
export function authInterceptor(verifier: KeyVerifier, sessions?: Sessions): Interceptor {
  return (next) => async (req) => {
    const check = req.contextValues.get(callerCheckKey);
    let principal: Principal;
    if (check === undefined) principal = admit(req.method, await verified(verifier, sessions, (name) => req.header.get(name)));
    else if (check.ok) principal = check.caller as Principal;
    else throw check.error;
    req.contextValues.set(principalKey, principal);
    // The key's tenant, where it has one, on the call's span (tracing on).
    if (principal.tenantId) req.contextValues.get(spanKey)?.setAttribute(TENANT_ATTRIBUTE, principal.tenantId);
    return next(req);
  };
}

/**
 * The caller of `method` from Node's request headers alone: the same checks as authInterceptor,
 * with the same errors, before the body is read (the server's `authenticate`). Synchronous when
 * the verifier answers from its cache.
 */
export function apiKeyCaller(verifier: KeyVerifier, sessions?: Sessions): (req: { headers: IncomingHttpHeaders }, method: DescMethod) => Principal | Promise<Principal> {
  return (req, method) => {
    const v = verified(verifier, sessions, (name) => nodeHeader(req.headers[name]));
    return v instanceof Promise ? v.then((p) => admit(method, p)) : admit(method, v);
  };
}

/** apiKeyCaller for the methods of one service by name (the lean paths' `caller`). */
export function leanCaller(verifier: KeyVerifier, service: DescService, sessions?: Sessions): (req: { headers: IncomingHttpHeaders }, method: string) => Principal | Promise<Principal> {
  const methods = new Map<string, DescMethod>(service.methods.map((m) => [m.name, m]));
  const caller = apiKeyCaller(verifier, sessions);
  return (req, name) => {
    const method = methods.get(name);
    if (!method) throw new ConnectError(`${service.typeName}.${name} is not served here`, Code.Unimplemented);
    return caller(req, method);
  };
}

/**
 * The caller of a request by its headers (`get` reads one by lower-case name): the API key's
 * principal when `x-api-key` or `Authorization` is sent (a session cookie sent along is then
 * ignored: the header wins), else the session's when the session cookie is sent and the request
 * comes from the server's own origin (`permission_denied` otherwise), else `unauthenticated`.
 * Null for an unknown, revoked or expired key; a session that has ended is `unauthenticated` here.
 */
function verified(verifier: KeyVerifier, sessions: Sessions | undefined, get: (name: string) => string | null): Principal | null | Promise<Principal | null> {
  const secret = credentialsFrom(get('x-api-key'), get('authorization'));
  if (secret !== undefined) return verifier.verify(secret);
  const id = sessions === undefined ? undefined : sessionCookie(get('cookie'), sessions.cookieName);
  if (sessions === undefined || id === undefined) throw unauthenticated('missing credentials: send x-api-key or Authorization: Bearer');
  const refusal = crossOriginRefusal(get, sessions.secure);
  if (refusal !== undefined) throw refusal;
  return sessions.principal(id).then((p) => p ?? Promise.reject(unauthenticated('the session has ended (signed out, timed out, or its API key was revoked or has expired): sign in again')));
}

/** The principal when its kind may call the method: `unauthenticated` without one, `permission_denied` for a kind the tier does not admit. */
function admit(method: DescMethod, principal: Principal | null): Principal {
  if (!principal) throw unauthenticated('unknown, revoked or expired API key');
  const tier = accessTierOf(method);
  if (!TIER_KINDS[tier]?.includes(principal.kind)) {
    const message =
      tier === AccessTier.UNSPECIFIED
        ? `${method.parent.typeName}.${method.name} declares no access tier`
        : `a ${principal.kind} key cannot call ${method.parent.typeName}.${method.name} (tier ${TIER_NAMES[tier]}: ${TIER_KINDS[tier].join(' or ')} keys)`;
    throw connectErrorWithInfo(message, Code.PermissionDenied, ErrorReason.TIER);
  }
  return principal;
}
