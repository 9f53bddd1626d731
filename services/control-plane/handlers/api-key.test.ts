import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ApiKeyService } from '../../../gen/authz/v1/api_key_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { StoreKeyVerifier, hashSecret } from '../auth/key-store.js';
import { describeEachBackend, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('ApiKeyService on %s', (backend) => {
  let app: TestApp;
  let verifier: StoreKeyVerifier;

  beforeAll(async () => {
    app = await createTestApp(backend);
    verifier = new StoreKeyVerifier(app.db);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await app.client(TenancyService).createProject({ id: 'project_p', tenantId: 'tenant_a', name: 'p' });
    await app.client(TenancyService).batchCreateEnvironments({ items: [{ id: 'environment_a', projectId: 'project_p', name: 'prod' }] });
    await app.client(TenancyService).createProject({ id: 'project_q', tenantId: 'tenant_b', name: 'q' });
    await app.client(TenancyService).createEnvironment({ id: 'environment_b', projectId: 'project_q', name: 'prod' });
  });
  afterAll(() => app?.close());

  it('creates a user key in the caller tenant: secret once, hashed, with its service subject', async () => {
    const c = app.client(ApiKeyService, userOf('tenant_a'));
    let header = '';
    const { apiKey } = await c.createApiKey({ id: 'apk_first', name: 'laptop', environmentId: 'environment_a', metadata: { owner: 'ann' } }, {
      onHeader: (h) => { header = h.get('x-revision') ?? ''; },
    });
    const secret = apiKey!.secretKey!;
    expect(secret).toMatch(/^azk_[A-Za-z0-9_-]{43}$/);
    expect(apiKey).toMatchObject({
      id: 'apk_first', kind: 'user', tenantId: 'tenant_a', environmentId: 'environment_a', name: 'laptop', status: 'active',
      hashAlgo: 'sha256', prefix: secret.slice(0, 12), lastFour: secret.slice(-4), createdBySubjectId: 'subject_test_user', metadata: { owner: 'ann' },
    });
    expect(apiKey?.expiresAt).toBeUndefined();
    const [row] = (await app.db.orm.em.fork().execute('select * from api_keys where id = ?', ['apk_first'])) as Record<string, unknown>[];
    expect(row.secret_hash).toBe(hashSecret(secret));
    expect(JSON.stringify(row)).not.toContain(secret.slice(12));

    const { subject } = await app.client(SubjectService).getSubject({ id: apiKey!.subjectId });
    expect(subject).toMatchObject({ type: 'service', tenantId: 'tenant_a', externalId: 'apk_first' });
    const log = (await app.db.orm.em.fork().execute(
      'select kind, entity_id from change_log where tenant_id = ? and revision = ?', ['tenant_a', Number(header)],
    )) as { kind: string; entity_id: string }[];
    // The key travels through its tenant's change log (replicas cache keys from it).
    expect(log).toEqual([{ kind: 'subject', entity_id: apiKey!.subjectId }, { kind: 'api_key', entity_id: 'apk_first' }]);

    const envScope = ((await app.client(TenancyService).listTenantEnvironments({ tenantId: 'tenant_a' })).environments.find((e) => e.id === 'environment_a'))!.scopeId;
    expect(await verifier.verify(secret)).toEqual({
      keyId: 'apk_first', kind: 'user', tenantId: 'tenant_a', subjectId: apiKey!.subjectId, environment: { id: 'environment_a', scopeId: envScope },
    });
  });

  it('creates service and platform keys; a user key cannot mint platform keys', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    const { apiKeys } = await app.client(ApiKeyService).batchCreateApiKeys({ items: [
      { name: 'svc', kind: 'service', tenantId: 'tenant_b', expiresAt: timestampFromDate(expiresAt) },
      { name: 'svc2', kind: 'service', tenantId: 'tenant_b' },
    ] });
    expect(apiKeys.map((k) => k.tenantId)).toEqual(['tenant_b', 'tenant_b']);
    expect(apiKeys[0].secretKey).not.toBe(apiKeys[1].secretKey);
    expect(timestampDate(apiKeys[0].expiresAt!).toISOString()).toBe(expiresAt.toISOString());
    expect(apiKeys[1].expiresAt).toBeUndefined();
    expect((await verifier.verify(apiKeys[0].secretKey!))?.kind).toBe('service');

    let header: string | null = 'unset';
    const { apiKey } = await app.client(ApiKeyService).createApiKey({ id: 'apk_ops', name: 'ops', kind: 'platform' }, {
      onHeader: (h) => { header = h.get('x-revision'); },
    });
    expect(apiKey?.tenantId).toBeUndefined();
    expect(header).toBeNull();
    const p = await verifier.verify(apiKey!.secretKey!);
    expect(p).toMatchObject({ keyId: 'apk_ops', kind: 'platform' });
    expect(p?.tenantId).toBeUndefined();
    expect((await app.client(SubjectService).getSubject({ id: apiKey!.subjectId })).subject?.tenantId).toBeUndefined();

    await expectCode(app.client(ApiKeyService, userOf('tenant_a')).createApiKey({ name: 'x', kind: 'platform' }), Code.PermissionDenied, 'platform');
    expect((await app.client(ApiKeyService, userOf('tenant_a')).createApiKey({ name: 'ci', kind: 'service' })).apiKey?.tenantId).toBe('tenant_a');
  });

  it('validates keys and names the field', async () => {
    const c = app.client(ApiKeyService);
    await expectCode(c.createApiKey({ tenantId: 'tenant_a' }), Code.InvalidArgument, 'name: is required');
    await expectCode(c.createApiKey({ name: 'x' }), Code.InvalidArgument, 'tenantId');
    await expectCode(c.createApiKey({ name: 'x', kind: 'platform', tenantId: 'tenant_a' }), Code.InvalidArgument, 'tenantId: must be absent');
    await expectCode(c.createApiKey({ name: 'x', kind: 'root', tenantId: 'tenant_a' }), Code.InvalidArgument, 'kind');
    await expectCode(c.createApiKey({ name: 'x', tenantId: 'tenant_a', expiresAt: timestampFromDate(new Date(Date.now() - 1000)) }), Code.InvalidArgument, 'expiresAt: is in the past');
    await expectCode(c.createApiKey({ name: 'x', tenantId: 'tenant_none' }), Code.FailedPrecondition, 'tenantId');
    await expectCode(c.createApiKey({ name: 'x', tenantId: 'tenant_a', environmentId: 'environment_b' }), Code.FailedPrecondition, 'environmentId');
    await expectCode(c.createApiKey({ name: 'x', tenantId: 'tenant_a', environmentId: 'environment_gone' }), Code.FailedPrecondition, 'environmentId');
    await expectCode(c.createApiKey({ id: 'apk_first', name: 'x', tenantId: 'tenant_a' }), Code.AlreadyExists);
    await expectCode(c.batchCreateApiKeys({ items: [
      { id: 'apk_dup', name: 'a', tenantId: 'tenant_a' }, { id: 'apk_dup', name: 'b', tenantId: 'tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.batchCreateApiKeys({ items: [{ id: 'apk_ok', name: 'a', tenantId: 'tenant_a' }, { name: '', tenantId: 'tenant_a' }] }), Code.InvalidArgument, 'items[1].name');
    await expectCode(app.client(ApiKeyService, userOf('tenant_a')).createApiKey({ name: 'x', tenantId: 'tenant_b' }), Code.PermissionDenied);
    const names = (await c.listApiKeys({ tenantId: 'tenant_a' })).apiKeys.map((k) => k.id);
    expect(names).not.toContain('apk_ok');
  });

  it('lists keys without secrets; expired keys say so', async () => {
    const c = app.client(ApiKeyService);
    const { apiKey } = await c.createApiKey({ id: 'apk_soon', name: 'soon', tenantId: 'tenant_a', expiresAt: timestampFromDate(new Date(Date.now() + 60_000)) });
    await app.db.orm.em.fork().execute(`update api_keys set expires_at = now() - interval '1 minute' where id = 'apk_soon'`);
    const mine = await app.client(ApiKeyService, userOf('tenant_a')).listApiKeys({});
    expect(mine.apiKeys.every((k) => k.tenantId === 'tenant_a' && k.secretKey === undefined)).toBe(true);
    expect(mine.apiKeys.find((k) => k.id === 'apk_soon')?.status).toBe('expired');
    expect(mine.apiKeys.find((k) => k.id === 'apk_first')?.status).toBe('active');
    expect(await verifier.verify(apiKey!.secretKey!)).toBeNull();
    expect((await c.listApiKeys({ tenantId: 'tenant_b' })).apiKeys).toHaveLength(2);
    const all = (await c.listApiKeys({})).apiKeys;
    expect(all.some((k) => k.id === 'apk_ops')).toBe(true);
    await expectCode(app.client(ApiKeyService, userOf('tenant_a')).listApiKeys({ tenantId: 'tenant_b' }), Code.PermissionDenied);
    await expectCode(c.listApiKeys({ tenantId: 'tenant_gone' }), Code.NotFound);
  });

  it('revokes on delete: status revoked, secret refused, key kept', async () => {
    const u = app.client(ApiKeyService, userOf('tenant_a'));
    const { apiKey } = await u.createApiKey({ id: 'apk_temp', name: 'temp' });
    expect(await verifier.verify(apiKey!.secretKey!)).not.toBeNull();
    let header = '';
    await u.deleteApiKey({ id: 'apk_temp' }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    expect(Number(header)).toBeGreaterThan(0);
    expect(await verifier.verify(apiKey!.secretKey!)).toBeNull();
    expect((await u.listApiKeys({})).apiKeys.find((k) => k.id === 'apk_temp')?.status).toBe('revoked');
    // The revocation is one revision with exactly one change-log row: the key, now revoked.
    const logOf = async () => (await app.db.orm.em.fork().execute(
      `select revision, op, kind, entity_id as "entityId", data->>'status' as status from change_log where tenant_id = 'tenant_a' and revision = ?`, [header],
    )) as { revision: string; op: string; kind: string; entityId: string; status: string }[];
    expect((await logOf()).map((r) => [r.op, r.kind, r.entityId, r.status])).toEqual([['upsert', 'api_key', 'apk_temp', 'revoked']]);
    const revisionNow = async () => Number(((await app.db.orm.em.fork().execute(`select revision from tenants where id = 'tenant_a'`)) as { revision: string }[])[0].revision);
    const before = await revisionNow();
    let again = 'unset';
    await u.deleteApiKey({ id: 'apk_temp' }, { onHeader: (h) => { again = h.get('x-revision') ?? ''; } }); // already revoked: a no-op
    expect(await revisionNow()).toBe(before); // writes nothing: no revision, no log row
    expect(Number(again)).toBe(before); // the tenant's current revision, as a token
    await expectCode(u.deleteApiKey({ id: 'apk_missing' }), Code.NotFound);
    await expectCode(u.deleteApiKey({ id: 'apk_ops' }), Code.PermissionDenied);
    const other = (await app.client(ApiKeyService).listApiKeys({ tenantId: 'tenant_b' })).apiKeys[0];
    await expectCode(u.deleteApiKey({ id: other.id }), Code.PermissionDenied);
    await app.client(ApiKeyService).deleteApiKey({ id: 'apk_ops' });
    expect((await app.client(ApiKeyService).listApiKeys({})).apiKeys.find((k) => k.id === 'apk_ops')?.status).toBe('revoked');
  });
});
