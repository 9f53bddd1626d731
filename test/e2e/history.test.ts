/**
 * Point-in-time audit, first slice: every revision records its writer (key, subject, time and
 * `x-change-reason`) over REST, Connect and gRPC, for model applies and imports too; a bad
 * reason writes nothing; the change log keeps the row before; ChangeService.ListChanges pages
 * every match exactly once while writes go on, checks reach, and refuses what compaction
 * removed; `authz history` prints it. Real control plane, real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createAuthzClient, type AuthzClient } from '../../client/client.js';
import { SubjectService } from '../../gen/authz/v1/subject_service_pb.js';
import { compactChangeLog } from '../../services/store/compaction.js';
import { backendAvailable, startTestControlPlane, storeDigest, TEST_BOOTSTRAP_KEY } from '../harness.js';
import { runAuthz } from '../authz-cli.js';

const available = backendAvailable('postgres');

interface Key { id: string; subjectId: string; secret: string }

describe.skipIf(!available)('change history on postgres', () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let admin: AuthzClient;
  let platform: Key;
  let tenantId: string;
  let rootScopeId: string;
  let user: Key;
  let service: Key;
  let otherUser: Key;

  const rest = async (method: string, path: string, body?: unknown, secret = TEST_BOOTSTRAP_KEY, headers: Record<string, string> = {}) => {
    const res = await fetch(`${cp.url}${path}`, {
      method, headers: { 'x-api-key': secret, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  /** Every change matching `query`, following cursors. */
  const allChanges = async (query: Record<string, string>, secret = TEST_BOOTSTRAP_KEY) => {
    const out: Record<string, unknown>[] = [];
    let cursor = '';
    for (;;) {
      const q = new URLSearchParams({ tenantId, ...query, ...(cursor ? { cursor } : {}) });
      const res = await rest('GET', `/changes?${q}`, undefined, secret);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      out.push(...(res.body.changes as Record<string, unknown>[]));
      cursor = res.headers.get('x-next-cursor') ?? '';
      if (!cursor) return out;
    }
  };
  const newKey = async (kind: string, tenant?: string): Promise<Key> => {
    const { apiKey } = await admin.apiKeys.createApiKey({ name: `k-${kind}`, kind, ...(tenant ? { tenantId: tenant } : {}) });
    return { id: apiKey!.id, subjectId: apiKey!.subjectId, secret: apiKey!.secretKey! };
  };

  beforeAll(async () => {
    cp = await startTestControlPlane('postgres');
    admin = createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY });
    const [row] = (await cp.db.orm.em.fork().execute(`select id, subject_id from api_keys where kind = 'platform'`)) as { id: string; subject_id: string }[];
    platform = { id: row.id, subjectId: row.subject_id, secret: TEST_BOOTSTRAP_KEY };
    const { tenant } = await admin.tenancy.createTenant({ name: 'acme' });
    tenantId = tenant!.id;
    rootScopeId = tenant!.scopeId;
    const other = (await admin.tenancy.createTenant({ name: 'other' })).tenant!.id;
    user = await newKey('user', tenantId);
    service = await newKey('service', tenantId);
    otherUser = await newKey('user', other);
  }, 60_000);
  afterAll(() => cp?.close());

  /** The revision's writer and reason, straight from the store. */
  const writerAt = async (revision: number) => {
    const rows = (await cp.db.orm.em.fork().execute('select key_id, subject_id, reason from revisions where tenant_id = ? and revision = ?', [tenantId, revision])) as { key_id: string; subject_id: string; reason: string | null }[];
    return rows[0];
  };

  it('records the writer and reason of writes over REST, Connect and gRPC', async () => {
    // User keys write their tenant's projects; the core control plane takes platform keys.
    const viaRest = await rest('POST', '/projects', { tenantId, name: 'web' }, user.secret, { 'x-change-reason': 'ticket 12: onboarding' });
    expect(viaRest.status).toBe(200);
    const restRevision = Number(viaRest.headers.get('x-revision'));
    expect(await writerAt(restRevision)).toEqual({ key_id: user.id, subject_id: user.subjectId, reason: 'ticket 12: onboarding' });

    // UTF-8 in the header arrives as bytes and is read back as UTF-8.
    const utf8 = Buffer.from('réorganisation ✓', 'utf8').toString('latin1');
    const viaRestUtf8 = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'zoé' }, TEST_BOOTSTRAP_KEY, { 'x-change-reason': utf8 });
    expect(viaRestUtf8.status).toBe(200);
    expect((await writerAt(Number(viaRestUtf8.headers.get('x-revision')))).reason).toBe('réorganisation ✓');

    const connect = createAuthzClient({ baseUrl: cp.url, apiKey: user.secret });
    let connectRevision = 0;
    await connect.tenancy.createProject({ tenantId, name: 'api' }, {
      headers: { 'x-change-reason': 'via connect' }, onHeader: (h) => (connectRevision = Number(h.get('x-revision'))),
    });
    expect(await writerAt(connectRevision)).toEqual({ key_id: user.id, subject_id: user.subjectId, reason: 'via connect' });

    const grpc = createClient(SubjectService, createGrpcTransport({ baseUrl: cp.url }));
    let grpcRevision = 0;
    await grpc.createSubject({ tenantId, type: 'user', externalId: 'cy' }, {
      headers: { 'x-api-key': platform.secret, 'x-change-reason': 'via grpc' }, onTrailer: (t) => (grpcRevision = Number(t.get('x-revision'))),
    });
    expect(grpcRevision).toBeGreaterThan(connectRevision);
    expect(await writerAt(grpcRevision)).toEqual({ key_id: platform.id, subject_id: platform.subjectId, reason: 'via grpc' });

    // No header: no reason. The tenant's first revision was written by the platform key.
    const plain = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'dee' });
    expect((await writerAt(Number(plain.headers.get('x-revision')))).reason).toBeNull();
    expect(await writerAt(1)).toMatchObject({ key_id: platform.id, subject_id: platform.subjectId });
  });

  it('records the writer of a model apply, an import (connect and the REST direct path) and a batch', async () => {
    const doc = JSON.stringify({ apiVersion: 'authz/v1', kind: 'TenantModel', subjects: [{ externalId: 'modelled', metadata: { team: 'a' } }] });
    const applied = await rest('POST', `/tenants/${tenantId}/model:apply`, { document: doc }, user.secret, { 'x-change-reason': 'model v2' });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(await writerAt(Number(applied.body.revision))).toEqual({ key_id: user.id, subject_id: user.subjectId, reason: 'model v2' });

    const imported = await rest('POST', `/tenants/${tenantId}/import`, {
      importId: 'i1', sequence: 1, firstLine: 1, entities: [{ subject: { type: 'user', externalId: 'imported' } }],
    }, user.secret, { 'x-change-reason': 'bulk load' });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(await writerAt(Number(imported.body.revision))).toEqual({ key_id: user.id, subject_id: user.subjectId, reason: 'bulk load' });

    const connect = createAuthzClient({ baseUrl: cp.url, apiKey: platform.secret });
    const second = await connect.imports.importBatch({ tenantId, importId: 'i1', sequence: 2, firstLine: 2, entities: [{ entity: { case: 'subject', value: { type: 'user', externalId: 'imported2' } } }] }, { headers: { 'x-change-reason': 'bulk load 2' } });
    expect(await writerAt(Number(second.revision))).toEqual({ key_id: platform.id, subject_id: platform.subjectId, reason: 'bulk load 2' });

    const { types } = { types: await rest('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: rootScopeId }) };
    const batch = await rest('POST', '/resources/batch', [{ resourceTypeId: types.body.id, ownerScopeId: rootScopeId, externalResourceId: 'r1' }], TEST_BOOTSTRAP_KEY, { 'x-change-reason': 'batch of resources' });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect((await writerAt(Number(batch.headers.get('x-revision')))).reason).toBe('batch of resources');
  });

  it('refuses an over-long or non-UTF-8 reason, writing nothing', async () => {
    const before = await storeDigest(cp.db);
    // (HTTP cannot carry a NUL in a header: services/control-plane/auth/writer.test.ts checks that rule.)
    for (const reason of ['x'.repeat(257), Buffer.from([0xff, 0xfe, 0x41]).toString('latin1')]) {
      const res = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: `bad-${reason.length}` }, TEST_BOOTSTRAP_KEY, { 'x-change-reason': reason });
      expect(res.status, reason).toBe(400);
      expect(res.body.message).toContain('x-change-reason');
    }
    const grpc = createClient(SubjectService, createGrpcTransport({ baseUrl: cp.url }));
    const err = await grpc.createSubject({ tenantId, type: 'user', externalId: 'bad-grpc' }, { headers: { 'x-api-key': platform.secret, 'x-change-reason': 'y'.repeat(300) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toContain('x-change-reason');
    const applied = await rest('POST', `/tenants/${tenantId}/model:apply`, { document: '{"apiVersion":"authz/v1","kind":"TenantModel","subjects":[{"externalId":"never"}]}' }, user.secret, { 'x-change-reason': 'z'.repeat(257) });
    expect(applied.status).toBe(400);
    const imported = await rest('POST', `/tenants/${tenantId}/import`, { importId: 'bad', sequence: 1, firstLine: 1, entities: [{ subject: { type: 'user', externalId: 'never' } }] }, user.secret, { 'x-change-reason': 'z'.repeat(257) });
    expect(imported.status).toBe(400);
    expect(await storeDigest(cp.db)).toEqual(before);
    // Exactly 256 characters (not bytes) is accepted.
    const ok = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'long-ok' }, TEST_BOOTSTRAP_KEY, { 'x-change-reason': Buffer.from('é'.repeat(256), 'utf8').toString('latin1') });
    expect(ok.status).toBe(200);
  });

  it('shows an update and a delete as before and after', async () => {
    const created = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'eve', metadata: { team: 'a' } });
    const id = created.body.id as string;
    await rest('PATCH', `/subjects/${id}`, { metadata: { team: 'b' } }, TEST_BOOTSTRAP_KEY, { 'x-change-reason': 'moved team' });
    await rest('DELETE', `/subjects/${id}`);
    const changes = await allChanges({ kind: 'subject', entityId: id });
    expect(changes.map((c) => c.op)).toEqual(['upsert', 'upsert', 'delete']);
    const [create, update, del] = changes;
    expect(create.before).toBeUndefined();
    expect(create.after).toMatchObject({ id, metadata: { team: 'a' } });
    expect(update).toMatchObject({ reason: 'moved team', writer: { keyId: platform.id, subjectId: platform.subjectId }, before: { metadata: { team: 'a' } }, after: { metadata: { team: 'b' } } });
    expect(del.after).toBeUndefined();
    expect(del.before).toMatchObject({ id, externalId: 'eve', metadata: { team: 'b' } });
    // The entity filter alone (no kind) finds the same changes.
    expect(await allChanges({ entityId: id })).toEqual(changes);
  });

  it('pages every matching change exactly once while writes continue', async () => {
    const writer = await newKey('platform');
    const write = (i: number) => rest('POST', '/subjects', { tenantId, type: 'user', externalId: `p${i}` }, i % 2 === 0 ? writer.secret : TEST_BOOTSTRAP_KEY);
    for (let i = 0; i < 30; i++) await write(i);
    const seen: Record<string, unknown>[] = [];
    let cursor = '';
    let extra = 30;
    do {
      const q = new URLSearchParams({ tenantId, writerKeyId: writer.id, kind: 'subject', pageSize: '4', ...(cursor ? { cursor } : {}) });
      const page = await rest('GET', `/changes?${q}`);
      expect(page.status).toBe(200);
      seen.push(...(page.body.changes as Record<string, unknown>[]));
      cursor = page.headers.get('x-next-cursor') ?? '';
      // Writes between pages, by both keys.
      await write(extra++);
      await write(extra++);
    } while (cursor);
    const ids = seen.map((c) => c.entityId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(seen.every((c) => (c.writer as { keyId: string }).keyId === writer.id && c.kind === 'subject')).toBe(true);
    const expected = (await cp.db.orm.em.fork().execute(
      `select count(*)::int as n from change_log c join revisions r using (tenant_id, revision) where c.tenant_id = ? and r.key_id = ? and c.kind = 'subject'`, [tenantId, writer.id])) as { n: number }[];
    // Every write of the key that committed before the last page was read is in the pages.
    expect(seen.length).toBeGreaterThanOrEqual(15);
    expect(seen.length).toBeLessThanOrEqual(expected[0].n);
    const revisions = seen.map((c) => c.revision as number);
    expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);
    // Subject filter, revision range and time range agree with the writer filter.
    const bySubject = await allChanges({ writerSubjectId: writer.subjectId, kind: 'subject', toRevision: String(revisions.at(-1)) });
    expect(bySubject.map((c) => c.entityId)).toEqual(ids);
    const from = seen[3];
    const sinceTime = await allChanges({ writerKeyId: writer.id, fromTime: from.time as string, toRevision: String(revisions.at(-1)) });
    expect(sinceTime.map((c) => c.entityId)).toEqual(ids.slice(3));
    const range = await allChanges({ writerKeyId: writer.id, fromRevision: String(revisions[2]), toRevision: String(revisions[5]) });
    expect(range.map((c) => c.entityId)).toEqual(ids.slice(2, 6));
    // The kind filter alone: the projects written earlier, and nothing else.
    const projects = await allChanges({ kind: 'project', pageSize: '1' });
    expect(projects.map((c) => (c.after as { name: string }).name)).toEqual(['web', 'api']);
  });

  it('checks filters and page sizes, naming the field', async () => {
    for (const [query, field] of [
      [{ kind: 'widget' }, 'kind'], [{ fromTime: 'yesterday' }, 'fromTime'], [{ toTime: '2025-13-45T99:00:00Z' }, 'toTime'],
      [{ pageSize: '1001' }, 'pageSize'], [{ fromRevision: '0' }, 'fromRevision'], [{ cursor: 'forged.AAAA' }, 'cursor'],
    ] as const) {
      const res = await rest('GET', `/changes?${new URLSearchParams({ tenantId, ...query })}`);
      expect(res.status, field).toBe(400);
      expect(res.body.message as string).toContain(field);
    }
    // A cursor issued for one filter does not page another.
    const first = await rest('GET', `/changes?${new URLSearchParams({ tenantId, pageSize: '1' })}`);
    const cursor = first.headers.get('x-next-cursor')!;
    const other = await rest('GET', `/changes?${new URLSearchParams({ tenantId, pageSize: '1', kind: 'scope', cursor })}`);
    expect(other.status).toBe(400);
  });

  it('answers user keys of the tenant and platform keys; refuses service keys and other tenants', async () => {
    expect((await rest('GET', `/changes?tenantId=${tenantId}`, undefined, user.secret)).status).toBe(200);
    expect((await rest('GET', `/changes?tenantId=${tenantId}`, undefined, service.secret)).status).toBe(403);
    expect((await rest('GET', `/changes?tenantId=${tenantId}`, undefined, otherUser.secret)).status).toBe(403);
    expect((await rest('GET', '/changes')).status).toBe(400);
    // A key restricted to an environment reaches part of the tenant; the log covers all of it.
    const project = await rest('POST', '/projects', { tenantId, name: 'reach' });
    const environment = await rest('POST', '/environments', { tenantId, projectId: project.body.id, name: 'prod' });
    const { apiKey } = await admin.apiKeys.createApiKey({ name: 'env', kind: 'user', tenantId, environmentId: environment.body.id as string });
    const envRes = await rest('GET', `/changes?tenantId=${tenantId}`, undefined, apiKey!.secretKey!);
    expect(envRes.status).toBe(403);
  });

  it('prints the history with authz, oldest first, with the fields that changed', async () => {
    const created = await rest('POST', '/subjects', { tenantId, type: 'user', externalId: 'fay', metadata: { team: 'a' } });
    const id = created.body.id as string;
    await rest('PATCH', `/subjects/${id}`, { metadata: { team: 'c' } }, TEST_BOOTSTRAP_KEY, { 'x-change-reason': 'reorg' });
    const env = { AUTHZ_URL: cp.url, AUTHZ_API_KEY: user.secret, AUTHZ_TENANT: tenantId };
    const table = await runAuthz(['history', '--kind', 'subject', '--entity', id], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`update subject ${id}`);
    expect(table.stdout).toContain('metadata: {"team":"a"} → {"team":"c"}');
    expect(table.stdout).toContain('"reorg"');
    expect(table.stdout.indexOf(`create subject ${id}`)).toBeLessThan(table.stdout.indexOf(`update subject ${id}`));
    const json = await runAuthz(['history', '--entity', id, '-o', 'json'], env);
    const data = JSON.parse(json.stdout) as { changes: { op: string; reason: string | null; writer: { keyId: string } }[]; more: boolean };
    expect(data.changes.map((c) => c.op)).toEqual(['upsert', 'upsert']);
    expect(data.changes[1]).toMatchObject({ reason: 'reorg', writer: { keyId: platform.id } });
    const limited = await runAuthz(['history', '--limit', '2', '-o', 'json'], env);
    expect((JSON.parse(limited.stdout) as { changes: unknown[]; more: boolean })).toMatchObject({ more: true });
    expect((JSON.parse(limited.stdout) as { changes: unknown[] }).changes).toHaveLength(2);
    const since = await runAuthz(['history', '--since', new Date(Date.now() + 3_600_000).toISOString()], env);
    expect(since.stdout.trim()).toBe('No changes.');
    const bad = await runAuthz(['history', '--kind', 'widget'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('kind');
    const refused = await runAuthz(['history'], { ...env, AUTHZ_API_KEY: service.secret });
    expect(refused.code).toBe(1);
  }, 60_000);

  it('after compaction: oldestRevision moves, and a cursor or fromRevision older than it is failed_precondition naming it', async () => {
    const page = await rest('GET', `/changes?${new URLSearchParams({ tenantId, pageSize: '2' })}`);
    expect(page.body.oldestRevision).toBe(1);
    const cursor = page.headers.get('x-next-cursor')!;
    const [t] = (await cp.db.orm.em.fork().execute('select revision::int as r from tenants where id = ?', [tenantId])) as { r: number }[];
    await compactChangeLog(cp.db, { keepRevisions: 5, keepMs: 0 }, Date.now() + 1000);
    const oldest = t.r - 5 + 1;
    const after = await rest('GET', `/changes?${new URLSearchParams({ tenantId })}`);
    expect(after.body.oldestRevision).toBe(oldest);
    expect((after.body.changes as { revision: number }[])[0].revision).toBe(oldest);
    const stale = await rest('GET', `/changes?${new URLSearchParams({ tenantId, pageSize: '2', cursor })}`);
    expect(stale.status).toBe(400);
    expect(stale.body.code).toBe('failed_precondition');
    expect(stale.body.message).toContain(`oldest it holds is ${oldest}`);
    const early = await rest('GET', `/changes?${new URLSearchParams({ tenantId, fromRevision: String(oldest - 1) })}`);
    expect(early.body.code).toBe('failed_precondition');
    expect(early.body.message).toContain(String(oldest));
    expect((await rest('GET', `/changes?${new URLSearchParams({ tenantId, fromRevision: String(oldest) })}`)).status).toBe(200);
    // The writers of compacted revisions went with them.
    const [left] = (await cp.db.orm.em.fork().execute('select count(*)::int as n from revisions where tenant_id = ? and revision < ?', [tenantId, oldest])) as { n: number }[];
    expect(left.n).toBe(0);
  });
});
