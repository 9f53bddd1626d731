/**
 * API-key secrets and their verification against the store.
 *
 * A secret is `azk_` + base64url(32 random bytes). It is stored only as its SHA-256 (hex),
 * looked up by its first 12 characters (`prefix`, indexed) and compared in constant time.
 * A fast, unsalted hash is sound here because the secrets carry 256 bits of randomness:
 * guessing a preimage is infeasible however fast the hash is, so slow password KDFs (bcrypt,
 * argon2) would only add latency to every request. Operator-chosen bootstrap secrets must
 * be at least 32 characters; operators should make them random too.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { newId } from '../../common/ids.js';
import { hasActivePlatformKey, keysWithPrefix, lockBootstrap, type StoredKey } from '../../store/api-keys.js';
import type { Database } from '../../store/db.js';
import type { Row } from '../../store/kinds.js';
import { runWrite } from '../../store/write.js';
import { ConfigError } from '../config.js';
import type { KeyKind, KeyVerifier, Principal } from './principal.js';

export const SECRET_PREFIX = 'azk_';
/** Characters of the secret stored in clear to find its row. */
export const PREFIX_LENGTH = 12;
export const HASH_ALGO = 'sha256';
/** The shortest secret accepted from configuration (SERVICE_BOOTSTRAP_API_KEY). */
export const MIN_CONFIGURED_SECRET = 32;
/** Longer credentials are rejected without hashing them. */
export const MAX_SECRET = 1024;

export type KeyStatus = 'active' | 'revoked' | 'expired';

/** A new secret: `azk_` + base64url of 32 random bytes (47 characters). */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 of the secret, hex. */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function prefixOf(secret: string): string {
  return secret.slice(0, PREFIX_LENGTH);
}

export function lastFourOf(secret: string): string {
  return secret.slice(-4);
}

/** The columns of an API-key row that derive from its secret. */
export function secretColumns(secret: string): Row {
  return { prefix: prefixOf(secret), lastFour: lastFourOf(secret), secretHash: hashSecret(secret), hashAlgo: HASH_ALGO };
}

/** The status a key reports: a stored `active` key past its `expiresAt` is `expired`. */
export function statusOf(row: Row, now = new Date()): KeyStatus {
  if (row.status === 'revoked') return 'revoked';
  const expiresAt = row.expiresAt ? new Date(row.expiresAt as string | Date) : undefined;
  if (expiresAt && expiresAt.getTime() <= now.getTime()) return 'expired';
  return row.status as KeyStatus;
}

/**
 * One stored key a secret may be, as verification needs it: the stored hash (decoded once), what
 * decides its status, and the principal it stands for (immutable: a key's kind, tenant, subject
 * and environment never change, and environments are never moved or deleted).
 */
export interface KeyCandidate {
  readonly id: string;
  /** The stored SHA-256, 32 bytes; undefined when the row holds no valid hash of HASH_ALGO (it never matches). */
  readonly hash: Buffer | undefined;
  readonly revoked: boolean;
  /** Epoch ms of `expiresAt`; Infinity without one. */
  readonly expiresAt: number;
  readonly principal: Principal;
}

/** Longer credentials are rejected without hashing them; shorter ones have no prefix. */
export function plausibleSecret(secret: string): boolean {
  return secret.length >= PREFIX_LENGTH && secret.length <= MAX_SECRET;
}

/** Every stored key with the prefix as a candidate, revoked and expired ones included. */
export async function candidatesWithPrefix(db: Database, prefix: string): Promise<KeyCandidate[]> {
  return (await keysWithPrefix(db, prefix)).map(candidateOf);
}

function candidateOf(r: StoredKey): KeyCandidate {
  const stored = r.secretHash;
  const valid = r.hashAlgo === HASH_ALGO && typeof stored === 'string' && /^[0-9a-f]{64}$/.test(stored);
  const principal: Principal = {
    keyId: r.id,
    kind: r.kind as KeyKind,
    ...(r.tenantId ? { tenantId: r.tenantId } : {}),
    subjectId: r.subjectId,
    // An environment that cannot be found leaves the key reaching no scope at all.
    ...(r.environmentId ? { environment: Object.freeze({ id: r.environmentId, scopeId: r.environmentScopeId ?? '' }) } : {}),
  };
  return {
    id: r.id,
    hash: valid ? Buffer.from(stored, 'hex') : undefined,
    revoked: r.status !== 'active',
    expiresAt: r.expiresAt ? new Date(r.expiresAt).getTime() : Number.POSITIVE_INFINITY,
    principal: Object.freeze(principal),
  };
}

/**
 * The principal of the first active, unexpired candidate whose hash equals `secretHash`, or
 * null. Every candidate is compared, in constant time (a revoked key may share the secret of a
 * newer one).
 */
export function matchKey(candidates: readonly KeyCandidate[], secretHash: Buffer, now: number): Principal | null {
  let match: Principal | null = null;
  for (const c of candidates) {
    const equal = c.hash !== undefined && timingSafeEqual(c.hash, secretHash);
    if (equal && !c.revoked && c.expiresAt > now) match ??= c.principal;
  }
  return match;
}

/**
 * The principal of the candidate with id `keyId` when it is active and unexpired, else null: a
 * key verified again by its id, for a session opened with it (sessions.ts).
 */
export function matchKeyId(candidates: readonly KeyCandidate[], keyId: string, now: number): Principal | null {
  for (const c of candidates) if (c.id === keyId) return !c.revoked && c.expiresAt > now ? c.principal : null;
  return null;
}

/** The candidate with id `keyId`, whatever its status. */
export function candidateById(candidates: readonly KeyCandidate[], keyId: string): KeyCandidate | undefined {
  return candidates.find((c) => c.id === keyId);
}

/** SHA-256 of the secret, as bytes. */
export function secretDigest(secret: string): Buffer {
  // The one-shot hash (Node ≥ 20.12): no Hash object per call, on every verified request.
  return hash('sha256', secret, 'buffer');
}

/** Verifies secrets against the `api_keys` table, one query per call (see CachedKeyVerifier). */
export class StoreKeyVerifier implements KeyVerifier {
  constructor(private readonly db: Database) {}

  /** The key's principal; null for an unknown, revoked or expired secret. */
  async verify(secret: string): Promise<Principal | null> {
    if (!plausibleSecret(secret)) return null;
    const candidates = await candidatesWithPrefix(this.db, prefixOf(secret));
    if (candidates.length === 0) return null;
    return matchKey(candidates, secretDigest(secret), Date.now());
  }
}

/** Where ensureBootstrapKey reports; a pino logger fits. */
export interface BootstrapLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** The name of the file, in the embedded database's data directory, that holds a generated platform key. */
export const BOOTSTRAP_KEY_FILE = 'bootstrap-api-key';

/**
 * Where a generated platform key is also written: `<SERVICE_DATA_DIR>/bootstrap-api-key` with the
 * embedded database on disk, so that a shell on the same machine can read the key `npm start`
 * printed. None with PostgreSQL (the data directory is unused; the key may serve many machines)
 * or an in-memory database.
 */
export function bootstrapKeyFile(config: { databaseUrl?: string; dataDir: string }): string | undefined {
  if (config.databaseUrl !== undefined || config.dataDir === 'memory://') return undefined;
  return join(config.dataDir, BOOTSTRAP_KEY_FILE);
}

export interface BootstrapOptions {
  /** SERVICE_BOOTSTRAP_API_KEY: the secret of the platform key to create on an empty database. */
  bootstrapApiKey?: string;
  /** Where a generated secret is written too, readable by this user only (see bootstrapKeyFile). */
  keyFile?: string;
  log: BootstrapLog;
}

/** A platform key created with a generated secret: printed once by start-up. */
export interface GeneratedKey {
  secret: string;
  /** The file that holds it too, when it was written. */
  keyFile?: string;
}

/**
 * Makes sure an active `platform` key exists. When none does, creates one: with exactly the
 * configured secret (SERVICE_BOOTSTRAP_API_KEY, at least 32 characters, else a ConfigError)
 * or, without one, a generated secret, which is returned so start-up can print it once
 * (it cannot be recovered from the database later) and written to `keyFile` when given.
 * Idempotent across restarts and replicas: an active platform key, from an earlier start or
 * created through the API, means nothing is created. When the configured secret is not among
 * the active platform keys it then does not work at all, so that is a warning saying how to
 * recover, not an info line.
 */
export async function ensureBootstrapKey(db: Database, opts: BootstrapOptions): Promise<GeneratedKey | undefined> {
  const configured = opts.bootstrapApiKey;
  if (configured !== undefined && configured.length < MIN_CONFIGURED_SECRET) {
    throw new ConfigError(
      'SERVICE_BOOTSTRAP_API_KEY',
      `must be at least ${MIN_CONFIGURED_SECRET} characters long (got ${configured.length}); use a random secret, e.g. \`openssl rand -base64 32\``,
    );
  }
  const { result } = await runWrite(db, async (tx) => {
    await lockBootstrap(tx);
    if (await hasActivePlatformKey(tx)) {
      const configuredWorks = configured === undefined || await hasActivePlatformKey(tx, { prefix: prefixOf(configured), secretHash: hashSecret(configured) });
      return { created: undefined, configuredWorks };
    }
    const secret = configured ?? generateSecret();
    const now = new Date();
    const keyId = newId('apk');
    const subjectId = newId('subject');
    await tx.insert('subject', [{
      id: subjectId, tenantId: null, type: 'service', externalId: keyId, metadata: null, createdAt: now, createdBy: 'system',
    }]);
    await tx.insert('apiKey', [{
      id: keyId, subjectId, tenantId: null, environmentId: null, name: 'bootstrap', description: 'created at first start',
      ...secretColumns(secret), createdBySubjectId: 'system', createdAt: now, expiresAt: null, status: 'active',
      intendedUse: 'bootstrap', kind: 'platform', metadata: null,
    }]);
    return { created: { keyId, secret }, configuredWorks: true };
  });
  const { created } = result;
  if (!created) {
    if (result.configuredWorks) {
      opts.log.info({}, 'an active platform API key exists; no bootstrap key created');
    } else {
      opts.log.warn({ keyFile: opts.keyFile }, unusedBootstrapKeyMessage(opts.keyFile));
    }
    return undefined;
  }
  opts.log.info(
    { keyId: created.keyId, prefix: prefixOf(created.secret) },
    configured !== undefined
      ? 'created the bootstrap platform API key from SERVICE_BOOTSTRAP_API_KEY'
      : 'created a bootstrap platform API key with a generated secret',
  );
  if (configured !== undefined) return undefined;
  return { secret: created.secret, keyFile: await writeKeyFile(opts.keyFile, created.secret, opts.log) };
}

/** What to do when SERVICE_BOOTSTRAP_API_KEY names no active platform key of a database that has others. */
function unusedBootstrapKeyMessage(keyFile: string | undefined): string {
  const problem =
    'SERVICE_BOOTSTRAP_API_KEY is set, but this database already has an active platform API key with another secret, ' +
    'so no key was created from it and calls with it answer 401 unauthenticated (a bootstrap key is created only while no active platform key exists). ';
  if (keyFile !== undefined) {
    return problem +
      `To recover: use the existing key (a generated one is in ${keyFile}) and unset SERVICE_BOOTSTRAP_API_KEY, ` +
      `or start over with an empty database by deleting ${dirname(keyFile)} (all its data goes with it).`;
  }
  return problem +
    'To recover: use an existing platform key, or revoke every platform key ' +
    '(psql: update api_keys set status = \'revoked\' where kind = \'platform\') and restart to have one created from SERVICE_BOOTSTRAP_API_KEY.';
}

/** Writes a generated secret where the operator's shell can read it (mode 0600); undefined when not written. */
async function writeKeyFile(path: string | undefined, secret: string, log: BootstrapLog): Promise<string | undefined> {
  if (path === undefined) return undefined;
  try {
    await writeFile(path, `${secret}\n`, { mode: 0o600 });
    await chmod(path, 0o600); // an existing file keeps its mode through writeFile
    return path;
  } catch (err) {
    log.warn({ err, keyFile: path }, 'the generated platform API key could not be written to its file; it is printed below only');
    return undefined;
  }
}

