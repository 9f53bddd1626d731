/**
 * Who is calling: the principal an API key resolves to, and the checks handlers run on it.
 */
import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import { permissionDenied, unauthenticated } from '../../common/errors.js';

/** An API key's kind is its authorization tier (spec, Authentication). */
export type KeyKind = 'user' | 'service' | 'platform';

/** The caller behind a verified API key. */
export interface Principal {
  /** The API key's id (`apk_…`). */
  keyId: string;
  kind: KeyKind;
  /** The tenant the key is restricted to; absent for keys that span tenants (platform keys). */
  tenantId?: string;
  /** The subject the key acts as; recorded as `createdBy`. */
  subjectId: string;
}

/**
 * Resolves an API-key secret to its principal. Must return null for an unknown, revoked or
 * expired secret (the caller answers 401); throw only for real failures (database down).
 * Implementations look the key up by prefix and compare hashes in constant time.
 */
export interface KeyVerifier {
  verify(secret: string): Promise<Principal | null>;
}

/** Where the auth interceptor puts the verified principal in the handler context. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: 'authz.principal' });

/**
 * The verified principal of a call. Throws `unauthenticated` when there is none, which only
 * happens if a handler runs without the auth interceptor: fail closed.
 */
export function principalOf(ctx: Pick<HandlerContext, 'values'>): Principal {
  const p = ctx.values.get(principalKey);
  if (!p) throw unauthenticated('no verified credentials for this call');
  return p;
}

/** Whether the principal may act on a tenant: platform keys reach every tenant, others only their own. */
export function reachesTenant(principal: Principal, tenantId: string): boolean {
  if (principal.kind === 'platform') return true;
  return principal.tenantId !== undefined && principal.tenantId !== '' && principal.tenantId === tenantId;
}

/**
 * Throws `permission_denied` unless the principal reaches the tenant: platform keys reach
 * every tenant; user and service keys only their own.
 */
export function assertTenantReach(principal: Principal, tenantId: string): void {
  if (!reachesTenant(principal, tenantId)) {
    throw permissionDenied(
      tenantId ? `the API key does not reach tenant ${tenantId}` : 'the API key does not reach this tenant',
    );
  }
}
