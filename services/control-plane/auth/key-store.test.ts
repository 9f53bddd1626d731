import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../store/db.js';
import { runWrite } from '../../store/write.js';
import { describeEachBackend, openTestDatabase, seedTenant } from '../../../test/harness.js';
import { ConfigError } from '../config.js';
import {
  StoreKeyVerifier, bootstrapKeyFile, ensureBootstrapKey, generateSecret, hashSecret, lastFourOf, prefixOf, secretColumns, statusOf,
} from './key-store.js';

describe('the bootstrap key file', () => {
  it('lives in the embedded database\'s data directory, and nowhere with PostgreSQL or in memory', () => {
    expect(bootstrapKeyFile({ dataDir: './data' })).toBe(join('data', 'bootstrap-api-key'));
    expect(bootstrapKeyFile({ dataDir: '/var/lib/authz' })).toBe('/var/lib/authz/bootstrap-api-key');
    expect(bootstrapKeyFile({ dataDir: './data', databaseUrl: 'postgres://db/authz' })).toBeUndefined();
    expect(bootstrapKeyFile({ dataDir: 'memory://' })).toBeUndefined();
  });
});

describe('secrets', () => {
  it('are azk_ + base64url of 32 random bytes', () => {
    const a = generateSecret();
    expect(a).toMatch(/^azk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.slice(4), 'base64url')).toHaveLength(32);
    expect(generateSecret()).not.toBe(a);
    expect(prefixOf(a)).toBe(a.slice(0, 12));
    expect(lastFourOf(a)).toBe(a.slice(-4));
  });

  it('are hashed with SHA-256 (hex)', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(secretColumns('azk_0123456789abcdef')).toEqual({
      prefix: 'azk_01234567', lastFour: 'cdef', secretHash: hashSecret('azk_0123456789abcdef'), hashAlgo: 'sha256',
    });
  });

  it('report expired past expiresAt and revoked over everything', () => {
    const now = new Date('2030-01-01T00:00:00Z');
    expect(statusOf({ status: 'active', expiresAt: null }, now)).toBe('active');
    expect(statusOf({ status: 'active', expiresAt: new Date('2031-01-01T00:00:00Z') }, now)).toBe('active');
    expect(statusOf({ status: 'active', expiresAt: new Date('2029-01-01T00:00:00Z') }, now)).toBe('expired');
    expect(statusOf({ status: 'revoked', expiresAt: new Date('2029-01-01T00:00:00Z') }, now)).toBe('revoked');
  });
});

describeEachBackend('key store on %s', (backend) => {
  let db: Database;
  const logs: string[] = [];
  const warnings: string[] = [];
  const log = { info: (_obj: object, msg?: string) => void logs.push(msg ?? ''), warn: (_obj: object, msg?: string) => void warnings.push(msg ?? '') };
  const platformKeys = async () =>
    (await db.orm.em.fork().execute(`select id, prefix, status, secret_hash from api_keys where kind = 'platform' order by created_at, id`)) as
      { id: string; prefix: string; status: string; secret_hash: string }[];

  /** Writes a key row (and its subject) straight to the store. */
  async function insertKey(secret: string, over: Record<string, unknown> = {}): Promise<string> {
    const id = `apk_t${Math.random().toString(36).slice(2, 10)}`;
    const now = new Date();
    await runWrite(db, async (tx) => {
      await tx.useTenant('tenant_k');
      await tx.insert('subject', [{ id: `subject_${id}`, tenantId: 'tenant_k', type: 'service', externalId: id, metadata: null, createdAt: now, createdBy: 't' }]);
      await tx.insert('apiKey', [{
        id, subjectId: `subject_${id}`, tenantId: 'tenant_k', environmentId: null, name: 'k', description: '', ...secretColumns(secret),
        createdBySubjectId: 't', createdAt: now, expiresAt: null, status: 'active', intendedUse: '', kind: 'service', metadata: null, ...over,
      }]);
    });
    return id;
  }

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    await seedTenant(db, 'tenant_k');
  });
  afterAll(() => db?.close());

  it('verifies a secret by prefix and hash; unknown, revoked and expired are null', async () => {
    const v = new StoreKeyVerifier(db);
    const secret = generateSecret();
    const id = await insertKey(secret);
    expect(await v.verify(secret)).toEqual({ keyId: id, kind: 'service', tenantId: 'tenant_k', subjectId: `subject_${id}` });
    // Same prefix, different secret.
    expect(await v.verify(secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A'))).toBeNull();
    expect(await v.verify(generateSecret())).toBeNull();
    expect(await v.verify('')).toBeNull();
    expect(await v.verify('azk_')).toBeNull();
    expect(await v.verify('x'.repeat(5000))).toBeNull();

    const revoked = generateSecret();
    await insertKey(revoked, { status: 'revoked' });
    expect(await v.verify(revoked)).toBeNull();
    const expired = generateSecret();
    await insertKey(expired, { expiresAt: new Date(Date.now() - 1000) });
    expect(await v.verify(expired)).toBeNull();
    const later = generateSecret();
    await insertKey(later, { expiresAt: new Date(Date.now() + 3_600_000) });
    expect((await v.verify(later))?.kind).toBe('service');
  });

  it('finds the active key among rows that share a prefix', async () => {
    const v = new StoreKeyVerifier(db);
    const secret = generateSecret();
    await insertKey(secret, { status: 'revoked' });
    const active = await insertKey(secret);
    expect((await v.verify(secret))?.keyId).toBe(active);
  });

  it('bootstraps a platform key: exact configured secret, idempotent, then a generated one', async () => {
    const v = new StoreKeyVerifier(db);
    await expect(ensureBootstrapKey(db, { bootstrapApiKey: 'too-short', log })).rejects.toThrow(ConfigError);
    await expect(ensureBootstrapKey(db, { bootstrapApiKey: 'too-short', log })).rejects.toThrow(/SERVICE_BOOTSTRAP_API_KEY: must be at least 32/);
    expect(await platformKeys()).toEqual([]);

    const configured = 'my-operator-chosen-secret-0123456789abcdef';
    expect(await ensureBootstrapKey(db, { bootstrapApiKey: configured, log })).toBeUndefined();
    const [key] = await platformKeys();
    expect(key).toMatchObject({ prefix: configured.slice(0, 12), status: 'active', secret_hash: hashSecret(configured) });
    const principal = await v.verify(configured);
    expect(principal).toMatchObject({ keyId: key.id, kind: 'platform' });
    expect(principal?.tenantId).toBeUndefined();
    const subject = (await db.orm.em.fork().execute('select tenant_id, type from subjects where id = ?', [principal!.subjectId])) as { tenant_id: string | null; type: string }[];
    expect(subject).toEqual([{ tenant_id: null, type: 'service' }]);

    // A restart: with or without the variable, nothing more is created.
    expect(await ensureBootstrapKey(db, { bootstrapApiKey: configured, log })).toBeUndefined();
    expect(await ensureBootstrapKey(db, { log })).toBeUndefined();
    expect(await platformKeys()).toHaveLength(1);
    expect(logs.at(-1)).toContain('no bootstrap key created');

    // Once no active platform key is left, a generated one is created and returned once.
    await db.orm.em.fork().execute(`update api_keys set status = 'revoked' where id = ?`, [key.id]);
    const generated = (await ensureBootstrapKey(db, { log }))?.secret;
    expect(generated).toMatch(/^azk_[A-Za-z0-9_-]{43}$/);
    expect((await v.verify(generated!))?.kind).toBe('platform');
    expect(await v.verify(configured)).toBeNull();
    expect(await ensureBootstrapKey(db, { log })).toBeUndefined();
    expect((await platformKeys()).map((k) => k.status)).toEqual(['revoked', 'active']);
    expect(logs.join('\n')).not.toContain(generated!);
  });

  it('warns, naming the way back, when SERVICE_BOOTSTRAP_API_KEY is not the secret of the active platform key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-bootstrap-'));
    try {
      const keyFile = join(dir, 'bootstrap-api-key');
      await db.orm.em.fork().execute(`update api_keys set status = 'revoked' where kind = 'platform'`);
      const generated = await ensureBootstrapKey(db, { keyFile, log });
      expect(generated?.keyFile).toBe(keyFile);
      expect(readFileSync(keyFile, 'utf8')).toBe(`${generated!.secret}\n`);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);

      // Started again on the same database with a chosen secret: nothing created, a warning.
      warnings.length = 0;
      const chosen = 'a-secret-chosen-after-the-first-start-0123456789';
      expect(await ensureBootstrapKey(db, { bootstrapApiKey: chosen, keyFile, log })).toBeUndefined();
      expect(await new StoreKeyVerifier(db).verify(chosen)).toBeNull();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('SERVICE_BOOTSTRAP_API_KEY is set, but this database already has an active platform API key');
      expect(warnings[0]).toContain(`use the existing key (a generated one is in ${keyFile})`);
      expect(warnings[0]).toContain(`deleting ${dir}`);
      expect(warnings.join('\n')).not.toContain(generated!.secret);
      expect(readFileSync(keyFile, 'utf8')).toBe(`${generated!.secret}\n`);

      // With PostgreSQL (no key file) the way back is the database's.
      warnings.length = 0;
      await ensureBootstrapKey(db, { bootstrapApiKey: chosen, log });
      expect(warnings[0]).toContain('revoke every platform key');

      // The secret of the active key, set as SERVICE_BOOTSTRAP_API_KEY, is no reason to warn.
      warnings.length = 0;
      await ensureBootstrapKey(db, { bootstrapApiKey: generated!.secret, keyFile, log });
      expect(warnings).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
