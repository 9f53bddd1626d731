/** API keys as verification and start-up read them (the API's own reads and writes go through rows.ts and WriteTx). */
import type { Database } from './db.js';
import { query } from './read.js';
import type { WriteTx } from './write.js';

/** A stored key as verification needs it, with the scope of its environment. */
export interface StoredKey {
  id: string;
  kind: string;
  tenantId: string | null;
  subjectId: string;
  secretHash: string | null;
  hashAlgo: string | null;
  status: string;
  expiresAt: Date | string | null;
  environmentId: string | null;
  /** Null when the key names no environment, or one that cannot be found. */
  environmentScopeId: string | null;
}

/**
 * Every stored key with the prefix, revoked and expired ones included. Plain SQL on the
 * connection, outside any transaction: verification runs it on the request path.
 */
export async function keysWithPrefix(db: Database, prefix: string): Promise<StoredKey[]> {
  return (await db.orm.em.getConnection().execute(
    `select k.id, k.kind, k.tenant_id as "tenantId", k.subject_id as "subjectId", k.secret_hash as "secretHash", k.hash_algo as "hashAlgo",
       k.status, k.expires_at as "expiresAt", k.environment_id as "environmentId", e.scope_id as "environmentScopeId"
     from api_keys k left join environments e on e.id = k.environment_id where k.prefix = ?`,
    [prefix],
  )) as StoredKey[];
}

/** An arbitrary constant: the transaction-scoped advisory lock that serialises bootstrap across replicas. */
const BOOTSTRAP_LOCK = 727_431_002;

/** Takes the bootstrap lock for the rest of the transaction: replicas starting at once queue on it. */
export async function lockBootstrap(tx: WriteTx): Promise<void> {
  await query(tx.em, `select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
}

/** Whether an active, unexpired platform key exists (with exactly this prefix and secret hash, when given). */
export async function hasActivePlatformKey(tx: WriteTx, secret?: { prefix: string; secretHash: string }): Promise<boolean> {
  const bySecret = secret === undefined ? '' : ' and prefix = ? and secret_hash = ?';
  const rows = await query(tx.em,
    `select 1 from api_keys where kind = 'platform' and status = 'active' and (expires_at is null or expires_at > now())${bySecret} limit 1`,
    secret === undefined ? [] : [secret.prefix, secret.secretHash]);
  return rows.length > 0;
}
