/**
 * The client against a real control plane (PostgreSQL when DATABASE_URL is set, else the embedded
 * database): typed calls with the API key, errors as AuthzError with the service's reason and
 * field, scope paths and subjects resolved by name (and refused when a name is unknown or
 * ambiguous), the key's kind, probes, extra CAs for TLS, and deadlines.
 */
import { createServer, type Server } from 'node:http';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../test/harness.js';
import { testCertificates } from '../test/certificates.js';
import { seedCliTenant, type CliTenant } from '../test/cli-tenant.js';
import { createAuthzClient, type AuthzClient } from './client.js';
import { AuthzError } from './errors.js';

const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';

/** The AuthzError `p` rejects with. */
async function failure(p: Promise<unknown>): Promise<AuthzError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthzError);
  return err as AuthzError;
}

describe(`the client (${BACKEND})`, () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let platform: AuthzClient;
  let t: CliTenant;

  beforeAll(async () => {
    cp = await startTestControlPlane(BACKEND);
    platform = createAuthzClient({ baseUrl: `${cp.url}/`, apiKey: TEST_BOOTSTRAP_KEY });
    t = await seedCliTenant(platform);
  }, 60_000);
  afterAll(async () => {
    await cp?.close();
  });

  it('calls every service with the key, and decides', async () => {
    expect(platform.baseUrl).toBe(cp.url);
    const { tenant } = await platform.tenancy.getTenant({ id: t.tenantId });
    expect(tenant!.scopeId).toBe(t.rootScopeId);
    const d = await platform.decisions.evaluate({ actor: { subjectId: t.alice }, scopeId: t.scopeId, action: 'edit', resource: { resourceType: 'doc', externalResourceId: 'readme' } });
    expect([d.allowed, d.reason, d.revision]).toEqual([true, 'role', tenant!.revision]);
    const none = await failure(createAuthzClient({ baseUrl: cp.url }).tenancy.getTenant({ id: t.tenantId }));
    expect([none.codeName, none.reason]).toEqual(['unauthenticated', 'UNAUTHENTICATED']);
  });

  it('fails with AuthzError carrying the code, the reason and the field of the service\'s error', async () => {
    const bad = await failure(platform.subjects.createSubject({ tenantId: t.tenantId, type: 'robot', externalId: 'r2' }));
    expect([bad.code, bad.codeName, bad.reason, bad.field]).toEqual([Code.InvalidArgument, 'invalid_argument', 'INVALID_FIELD', 'type']);
    expect(bad.message).toMatch(/^type: must be one of user, service, agent/);
    const tier = await failure(createAuthzClient({ baseUrl: cp.url, apiKey: t.serviceKey }).scopes.getScope({ id: t.scopeId }));
    expect([tier.codeName, tier.reason, tier.field]).toEqual(['permission_denied', 'TIER', undefined]);
    const down = await failure(createAuthzClient({ baseUrl: 'http://127.0.0.1:9' }).decisions.evaluate({}));
    expect([down.codeName, down.reason]).toEqual(['unavailable', undefined]);
  });

  it('resolves a scope path as a model file writes it (/ the root, /eng below it), and refuses unknown, ambiguous and malformed paths', async () => {
    expect((await platform.resolveScopePath(t.tenantId, '/')).id).toBe(t.rootScopeId);
    expect((await platform.resolveScopePath(t.tenantId, '/eng')).id).toBe(t.scopeId);
    const { scopeTypes } = await platform.scopes.listScopeTypes({});
    const typeId = scopeTypes.find((s) => s.name === 'team')!.id;
    const platformScope = (await platform.scopes.createScope({ name: 'platform', typeId, parentId: t.scopeId })).scope!;
    expect((await platform.resolveScopePath(t.tenantId, '/eng/platform')).id).toBe(platformScope.id);

    const missing = await failure(platform.resolveScopePath(t.tenantId, '/eng/web'));
    expect([missing.codeName, missing.field, missing.message]).toEqual(['not_found', 'scopePath', `no scope "/eng/web" in tenant ${t.tenantId}: ${t.scopeId} has no child named "web"`]);
    // The root's own name is not part of a path: `/acme` is a child of the root named acme.
    const rootName = await failure(platform.resolveScopePath(t.tenantId, '/acme/eng'));
    expect([rootName.codeName, rootName.message]).toEqual(['not_found', `no scope "/acme" in tenant ${t.tenantId}: ${t.rootScopeId} has no child named "acme"`]);
    for (const path of ['', 'acme', 'acme/eng', 'eng', '/eng/', '//eng', '/eng//platform']) {
      const bad = await failure(platform.resolveScopePath(t.tenantId, path));
      expect([path, bad.codeName, bad.field, bad.message]).toEqual([path, 'invalid_argument', 'scopePath', expect.stringContaining('(e.g. /eng/platform)')]);
    }

    const twin = (await platform.scopes.createScope({ name: 'platform', typeId, parentId: t.scopeId })).scope!;
    const ambiguous = await failure(platform.resolveScopePath(t.tenantId, '/eng/platform'));
    expect([ambiguous.codeName, ambiguous.message]).toEqual(['invalid_argument', expect.stringContaining(`scope path "/eng/platform" is ambiguous: 2 children of ${t.scopeId} are named "platform"`)]);
    expect(ambiguous.message).toContain(twin.id);
    const unknownTenant = await failure(platform.resolveScopePath('tenant_nope', '/'));
    expect(unknownTenant.codeName).toBe('not_found');
  });

  it('resolves a subject by external id, by type when several share it, and refuses unknown ones', async () => {
    expect((await platform.resolveSubject(t.tenantId, 'alice')).id).toBe(t.alice);
    expect((await platform.resolveSubject(t.tenantId, 'alice', 'user')).id).toBe(t.alice);
    const missing = await failure(platform.resolveSubject(t.tenantId, 'alice', 'agent'));
    expect([missing.codeName, missing.field, missing.message]).toEqual(['not_found', 'externalId', `no subject with external id "alice" of type agent in tenant ${t.tenantId}`]);
    const agent = (await platform.subjects.createSubject({ tenantId: t.tenantId, type: 'agent', externalId: 'alice' })).subject!;
    const ambiguous = await failure(platform.resolveSubject(t.tenantId, 'alice'));
    expect([ambiguous.codeName, ambiguous.message]).toEqual(['invalid_argument', `2 subjects have external id "alice" in tenant ${t.tenantId} (types user, agent): give the type`]);
    expect((await platform.resolveSubject(t.tenantId, 'alice', 'agent')).id).toBe(agent.id);
    // Another tenant's subject of the same external id is not this tenant's.
    const other = await seedCliTenant(platform, 'globex');
    expect((await platform.resolveSubject(other.tenantId, 'bob')).id).toBe(other.bob);
    expect((await platform.resolveSubject(t.tenantId, 'bob')).id).toBe(t.bob);
  });

  it('tells the kind of each key from the tiers it reaches', async () => {
    const kind = (apiKey: string) => createAuthzClient({ baseUrl: cp.url, apiKey }).describeKey();
    expect(await kind(TEST_BOOTSTRAP_KEY)).toEqual({ kind: 'platform' });
    expect(await kind(t.userKey)).toEqual({ kind: 'user', tenantId: t.tenantId });
    expect(await kind(t.serviceKey)).toEqual({ kind: 'service' });
    expect((await failure(kind('azk_unknown_key_0123456789abcdefghijklmnop'))).codeName).toBe('unauthenticated');
  });

  it('reads the probes without a key', async () => {
    expect(await createAuthzClient({ baseUrl: cp.url }).health()).toEqual({ live: true, ready: true });
    await expect(createAuthzClient({ baseUrl: 'http://127.0.0.1:9' }).health()).rejects.toThrow(/ECONNREFUSED/);
  });

  it('refuses base URLs it cannot use', () => {
    for (const url of ['127.0.0.1:8080', 'ftp://h', 'http://user:pw@h', 'http://h/?q=1']) expect(() => createAuthzClient({ baseUrl: url }), url).toThrow(TypeError);
  });

  it('trusts an https:// server through `ca`, besides the default roots, and not without it', async () => {
    const certs = await testCertificates(['localhost']);
    const tls = await startTestControlPlane(BACKEND, { SERVICE_TLS_CERT_FILE: certs.certFile, SERVICE_TLS_KEY_FILE: certs.keyFile });
    try {
      expect(tls.url).toMatch(/^https:/);
      const trusted = createAuthzClient({ baseUrl: tls.url, apiKey: TEST_BOOTSTRAP_KEY, ca: certs.ca });
      expect((await trusted.tenancy.listTenants({})).tenants).toEqual([]);
      expect(await trusted.health()).toEqual({ live: true, ready: true });
      const untrusted = await failure(createAuthzClient({ baseUrl: tls.url, apiKey: TEST_BOOTSTRAP_KEY }).tenancy.listTenants({}));
      expect(untrusted.message).toMatch(/self-signed certificate|unable to verify|certificate/i);
    } finally {
      await tls.close();
      certs.remove();
    }
  }, 60_000);

  it('gives up on a call after timeoutMs with deadline_exceeded', async () => {
    const silent: Server = createServer(() => {
      // never answers
    });
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    try {
      const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
      const started = Date.now();
      const err = await failure(createAuthzClient({ baseUrl: url, timeoutMs: 300 }).decisions.evaluate({}));
      expect([err.codeName, Date.now() - started < 5000]).toEqual(['deadline_exceeded', true]);
    } finally {
      silent.closeAllConnections();
      await new Promise((ok) => silent.close(ok));
    }
  });
});
