/**
 * What an API key is, learned from what it reaches: the service has no call that describes the
 * caller's key, but each tier admits exactly one set of kinds (a `platform` key reaches every
 * tier, a `user` key the tenant tier, a `service` key the decision tier), so one call per tier
 * tells them apart. Each probe is a read that changes nothing.
 */
import { Code } from '@connectrpc/connect';
import { AuthzError } from './errors.js';
import type { ServiceClients } from './services.js';

export type KeyKind = 'platform' | 'user' | 'service';

export interface KeyDescription {
  kind: KeyKind;
  /** The key's tenant, when the key may list its tenant's keys (a `user` key); platform keys have none. */
  tenantId?: string;
}

/** Whether `err` is the tier check refusing the key (as opposed to the call failing after it). */
const refusedByTier = (err: AuthzError) => err.code === Code.PermissionDenied;

/** Runs `call`; true when the key passed the RPC's tier check (the call may still fail after it). */
async function reaches(call: () => Promise<unknown>): Promise<{ reached: boolean; value?: unknown }> {
  try {
    return { reached: true, value: await call() };
  } catch (raw) {
    const err = AuthzError.from(raw);
    if (refusedByTier(err)) return { reached: false };
    // The request below the tier check is deliberately empty: its refusal proves the tier was passed.
    if (err.code === Code.InvalidArgument || err.code === Code.NotFound) return { reached: true };
    throw err;
  }
}

/**
 * The kind of the client's key. Rejects with AuthzError `unauthenticated` when the service does
 * not know the key (unknown, revoked or expired), or with whatever else stops the probes.
 */
export async function describeKey(clients: ServiceClients): Promise<KeyDescription> {
  if ((await reaches(() => clients.tenancy.listTenants({ limit: 1 }))).reached) return { kind: 'platform' };
  // Without a tenant id, a user key lists the keys of its own tenant.
  const tenantTier = await reaches(() => clients.apiKeys.listApiKeys({ limit: 1 }));
  if (tenantTier.reached) {
    const keys = (tenantTier.value as { apiKeys?: { tenantId?: string }[] } | undefined)?.apiKeys ?? [];
    return { kind: 'user', ...(keys[0]?.tenantId ? { tenantId: keys[0].tenantId } : {}) };
  }
  if ((await reaches(() => clients.decisions.getEffectivePermissions({}))).reached) return { kind: 'service' };
  throw new AuthzError('the key reaches none of the platform, tenant and decision tiers', Code.PermissionDenied, { reason: 'TIER' });
}
