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
  /**
   * The environment the key is restricted to (`environmentId` of the key) and that
   * environment's scope: the key reaches that scope and its descendants only.
   */
  environment?: { id: string; scopeId: string };
}

/**
 * Resolves an API-key secret to its principal. Must return null for an unknown, revoked or
 * expired secret (the caller answers 401); throw only for real failures (database down).
 * Implementations look the key up by prefix and compare hashes in constant time. May answer
 * synchronously (a cache hit) so that the lean decision path takes no microtask turn.
 */
export interface KeyVerifier {
  verify(secret: string): Principal | null | Promise<Principal | null>;
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
 * Throws `permission_denied` for a key restricted to an environment: `what` (a tenant, its
 * projects or workspaces, another environment) lies outside that environment's scope.
 */
export function assertWholeTenantReach(principal: Principal, what: string, field?: string): void {
  if (principal.environment) {
    throw permissionDenied(`the API key is restricted to environment ${principal.environment.id} and its scopes; ${what} lies outside it`, field);
  }
}

/**
 * Throws `permission_denied` unless the principal reaches the scope whose path (the scope, then
 * its ancestors) is given: a key restricted to an environment reaches that environment's scope
 * and its descendants only. Tenant reach is checked separately (assertTenantReach).
 */
export function assertScopeReach(principal: Principal, scopePath: readonly string[], field: string): void {
  const env = principal.environment;
  if (env && !scopePath.includes(env.scopeId)) {
    throw permissionDenied(`the API key is restricted to environment ${env.id}; the scope of ${field} lies outside it`, field);
  }
}

/**
 * Throws `permission_denied` unless the principal reaches the tenant: platform keys reach
 * every tenant; user and service keys only their own. The message names the request field
 * that led there, never the other tenant's id.
 */
export function assertTenantReach(principal: Principal, tenantId: string, field?: string): void {
  if (!reachesTenant(principal, tenantId)) {
    throw permissionDenied(field ? `the API key does not reach the tenant of ${field}` : 'the API key does not reach this tenant', field);
  }
}
