/**
 * The bulk writes' REST routes served by the gateway itself (transport/gateway/direct.ts) answer
 * exactly as connect-node's path does: a second control plane on the same PostgreSQL database
 * serves them through connect-node (`directWrites: false`), and the same requests, accepted and
 * refused, are compared status, headers and body (ids and timestamps the two made apart aside).
 * Both count the calls in the RPC metrics.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../app.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../../transport/observability.js';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../../test/harness.js';

interface Answer { status: number; headers: Record<string, string | null>; body: string }

describeEachBackend('the direct REST path of the bulk writes on %s', (backend) => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  /** The same database served through connect-node only (PostgreSQL: two processes on one database). */
  let plain: ControlPlane | undefined;
  const ids: Record<string, string> = {};

  const call = async (url: string, path: string, body: string | undefined, key: string | undefined = TEST_BOOTSTRAP_KEY, method = 'POST'): Promise<Answer> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key) headers['x-api-key'] = key;
    const res = await fetch(url + path, { method, headers, body });
    return {
      status: res.status,
      headers: { 'content-type': res.headers.get('content-type'), 'x-revision': res.headers.get('x-revision') === null ? null : 'set', 'www-authenticate': res.headers.get('www-authenticate') },
      body: await res.text(),
    };
  };
  const platform = async (path: string, body: unknown) => JSON.parse((await call(cp.url, path, JSON.stringify(body))).body);

  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
    if (backend === 'postgres') {
      plain = await startControlPlane(
        loadConfig({ SERVICE_PORT: '0', DATABASE_URL: cp.db.orm.config.get('clientUrl') as string, SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY }, []),
        createLogger({ logLevel: 'silent' }), { directWrites: false },
      );
    }
    const tenant = await platform('/tenants', { name: 'direct' });
    ids.tenant = tenant.id;
    ids.root = tenant.scopeId;
    ids.type = (await platform('/resource-types', { name: 'Doc', key: 'doc', scopeId: ids.root })).id;
    ids.service = (await platform('/api-keys', { name: 's', kind: 'service', tenantId: ids.tenant })).secretKey;
    ids.user = (await platform('/api-keys', { name: 'u', kind: 'user', tenantId: ids.tenant })).secretKey;
  });
  afterAll(async () => {
    await plain?.close();
    await cp?.close();
  });

  /** The resources of a batch, tagged so that the two processes create different ones. */
  const resources = (tag: string, more: Record<string, unknown> = {}) => JSON.stringify([
    { id: `resource_${tag}_1`, resourceTypeId: ids.type, ownerScopeId: ids.root, externalResourceId: `${tag}-1`, displayName: 'Tab\there "quoted" \\ é 😀', attributes: { n: 1.5, deep: { list: [true, null, 'x'] } }, ...more },
    { resource_type_id: ids.type, owner_scope_id: ids.root, external_resource_id: `${tag}-2` }, // proto names: the reflective decoder
    { resourceTypeId: ids.type, ownerScopeId: ids.root, externalResourceId: `${tag}-3`, displayName: null, attributes: JSON.parse('{"__proto__": {"x": 1}, "y": 2}') },
  ]);
  /** An answer with what each process makes on its own (ids, timestamps, the batch's tag) written alike. */
  const normal = (a: Answer, tag: string) => ({
    ...a,
    body: a.body.replaceAll(tag, 'TAG').replace(/resource_[0-9a-f]{8}-[0-9a-f-]{27}/g, 'resource_ID').replace(/"createdAt":"[^"]+"/g, '"createdAt":"T"'),
  });

  it('answers a resource batch as connect-node does, the rows and the REST body alike', async () => {
    const direct = await call(cp.url, '/resources/batch', resources('qdirectq'));
    expect(direct.status, direct.body).toBe(200);
    const rows = JSON.parse(direct.body) as Record<string, unknown>[];
    expect(rows.map((r) => r.externalResourceId)).toEqual(['qdirectq-1', 'qdirectq-2', 'qdirectq-3']);
    expect(rows[0]).toMatchObject({ displayName: 'Tab\there "quoted" \\ é 😀', attributes: { n: 1.5, deep: { list: [true, null, 'x'] } }, scopeId: ids.root });
    expect(rows[2]).toEqual(expect.not.objectContaining({ displayName: expect.anything() }));
    // What was stored reads back as answered.
    const got = await call(cp.url, `/resources/${rows[0].id as string}`, undefined, TEST_BOOTSTRAP_KEY, 'GET');
    expect(JSON.parse(got.body)).toEqual(rows[0]);
    if (plain) {
      const other = await call(plain.server.url, '/resources/batch', resources('qplainq'));
      expect(normal(direct, 'qdirectq')).toEqual(normal(other, 'qplainq'));
    }
  });

  it('refuses what connect-node refuses, with the same answer', async () => {
    const refused: [string, string | undefined, (string | undefined)?][] = [
      ['/resources/batch', '[]'],
      ['/resources/batch', '{"items": []}'],
      ['/resources/batch', resources('x', { ownerScopeId: 'scope_missing' })],
      ['/resources/batch', resources('x', { externalResourceId: 'x'.repeat(257) })],
      ['/resources/batch', resources('x', { displayName: 'nul \u0000' })],
      ['/resources/batch', resources('x', { attributes: { bad: 'lone \ud800' } })],
      ['/resources/batch', resources('x', { nope: 1 })],
      ['/resources/batch', resources('x', { externalResourceId: 7 })],
      ['/resources/batch', JSON.stringify(Array.from({ length: 1001 }, (_, i) => ({ resourceTypeId: ids.type, ownerScopeId: ids.root, externalResourceId: `m${i}` })))],
      ['/resources/batch', resources('x'), ''],
      ['/resources/batch', resources('x'), ids.service],
      ['/resources/batch', resources('x'), ids.user],
      ['/resources/batch', resources('x'), 'azk_unknown_secret_0123456789abcdefghijklmnop'],
      [`/tenants/${ids.tenant}/import`, '{"importId": "r", "sequence": 1, "firstLine": 1, "entities": [{"resource": {"type": "nope", "externalId": "a"}}]}'],
      [`/tenants/${ids.tenant}/import`, '{"importId": "r", "sequence": 1, "firstLine": 1, "entities": [{"resource": {"type": "doc"}, "subject": {"type": "user", "externalId": "a"}}]}'],
      [`/tenants/${ids.tenant}/import`, '{"importId": "r", "sequence": "one", "firstLine": 1, "entities": []}'],
      [`/tenants/${ids.tenant}/import`, '{"importId": "r", "sequence": 1, "firstLine": 1, "entities": [{}]}'],
      [`/tenants/${ids.tenant}/import`, '{"importId": "r", "sequence": 1, "firstLine": 1, "entities": [{"resource": {"type": "doc", "externalId": "a"}}]}', ids.service],
      ['/tenants/tenant_elsewhere/import', '{"importId": "r", "sequence": 1, "firstLine": 1, "entities": [{"resource": {"type": "doc", "externalId": "a"}}]}', ids.user],
    ];
    for (const [path, body, key = TEST_BOOTSTRAP_KEY] of refused) {
      const a = await call(cp.url, path, body, key);
      expect(a.status, `${path} ${body?.slice(0, 80)}: ${a.body}`).toBeGreaterThanOrEqual(400);
      if (plain) expect(a, `${path} ${body?.slice(0, 80)}`).toEqual(await call(plain.server.url, path, body, key));
    }
  });

  it('answers an import batch as connect-node does, and counts both in the RPC metrics', async () => {
    const batch = (id: string) => JSON.stringify({ importId: id, sequence: 1, firstLine: 1, entities: [{ resource: { type: 'doc', externalId: `${id}-1` } }, { subject: { type: 'user', externalId: `${id}-s` } }] });
    const direct = await call(cp.url, `/tenants/${ids.tenant}/import`, batch('imp-d'));
    expect(direct.status, direct.body).toBe(200);
    expect(JSON.parse(direct.body)).toMatchObject({ importId: 'imp-d', sequence: 1, applied: true, nextLine: 3, counts: { resources: 1, subjects: 1 } });
    expect(typeof JSON.parse(direct.body).revision).toBe('number');
    const again = await call(cp.url, `/tenants/${ids.tenant}/import`, batch('imp-d'));
    expect(JSON.parse(again.body)).toMatchObject({ applied: false, revision: JSON.parse(direct.body).revision });
    if (plain) {
      const other = await call(plain.server.url, `/tenants/${ids.tenant}/import`, batch('imp-p'));
      const strip = (a: Answer, tag: string) => ({ ...a, body: a.body.replaceAll(tag, 'TAG').replace(/"revision":\d+/, '"revision":0') });
      expect(strip(direct, 'imp-d')).toEqual(strip(other, 'imp-p'));
    }
    const metrics = await (await fetch(`${cp.url}/metrics`)).text();
    expect(metrics).toMatch(/authz_rpc_requests_total\{service="authz\.v1\.ImportService",method="ImportBatch",code="ok"\} 2/);
    expect(metrics).toMatch(/authz_rpc_requests_total\{service="authz\.v1\.ResourceService",method="BatchCreateResources",code="unauthenticated"\} 2/);
  });
});
