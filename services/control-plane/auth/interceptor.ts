/**
 * The auth interceptor: reads the RPC's `(authz.v1.access)` tier from its descriptor, takes
 * the API key from `x-api-key` or `Authorization: Bearer`, verifies it and enforces the tier.
 * A method without a tier is denied (fail closed).
 */
import { getOption, hasOption, type DescMethod } from '@bufbuild/protobuf';
import { Code, type Interceptor } from '@connectrpc/connect';
import { AccessTier, access } from '../../../gen/authz/v1/options_pb.js';
import { ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { connectErrorWithInfo } from '../errors.js';
import { principalKey, type KeyKind, type KeyVerifier } from './principal.js';

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
  const apiKey = header.get('x-api-key')?.trim() || undefined;
  let bearer: string | undefined;
  const authorization = header.get('authorization')?.trim();
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
 * since only it knows which tenant a request addresses.
 */
export function authInterceptor(verifier: KeyVerifier): Interceptor {
  return (next) => async (req) => {
    const secret = credentialsOf(req.header);
    if (secret === undefined) throw unauthenticated('missing credentials: send x-api-key or Authorization: Bearer');
    const principal = await verifier.verify(secret);
    if (!principal) throw unauthenticated('unknown, revoked or expired API key');
    const tier = accessTierOf(req.method);
    if (!TIER_KINDS[tier]?.includes(principal.kind)) {
      const message =
        tier === AccessTier.UNSPECIFIED
          ? `${req.method.parent.typeName}.${req.method.name} declares no access tier`
          : `a ${principal.kind} key cannot call ${req.method.parent.typeName}.${req.method.name} (tier ${TIER_NAMES[tier]}: ${TIER_KINDS[tier].join(' or ')} keys)`;
      throw connectErrorWithInfo(message, Code.PermissionDenied, ErrorReason.TIER);
    }
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}
