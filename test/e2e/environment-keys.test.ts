/**
 * API keys restricted to an environment (`environmentId`) reach that environment's scope and
 * its descendants only: on the decision path and in management, and they cannot mint a key
 * wider than themselves. Real keys against a real control plane, on both databases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../services/control-plane/app.js';
import { describeEachBackend, TEST_BOOTSTRAP_KEY, startTestControlPlane } from '../harness.js';

interface Answer { status: number; body: Record<string, unknown> & { message?: string } }

describeEachBackend('environment-restricted keys on %s', (backend) => {
  let cp: ControlPlane & { url: string };
  const ids: Record<string, string> = {};
  const keys: Record<string, string> = {};

  async function as(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
    const res = await fetch(cp.url + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : {} };
  }
  const platform = (method: string, path: string, body?: unknown) => as(TEST_BOOTSTRAP_KEY, method, path, body);
  const ok = async (a: Promise<Answer>) => {
    const r = await a;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };

  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
    const tenant = await ok(platform('POST', '/tenants', { name: 'envs' }));
    ids.tenant = tenant.id as string;
    ids.root = tenant.scopeId as string;
    ids.other = (await ok(platform('POST', '/tenants', { name: 'elsewhere' }))).id as string;
    const project = await ok(platform('POST', '/projects', { tenantId: ids.tenant, name: 'app' }));
    ids.project = project.id as string;
    const prod = await ok(platform('POST', '/environments', { tenantId: ids.tenant, projectId: ids.project, name: 'prod' }));
    const dev = await ok(platform('POST', '/environments', { tenantId: ids.tenant, projectId: ids.project, name: 'dev' }));
    [ids.prod, ids.prodScope, ids.dev, ids.devScope] = [prod.id, prod.scopeId, dev.id, dev.scopeId] as string[];
    ids.team = (await ok(platform('POST', '/scopes', { parentId: ids.prodScope, name: 'team', typeId: 'scope_type_project' }))).id as string;
    ids.outside = (await ok(platform('POST', '/scopes', { tenantId: ids.tenant, name: 'outside', typeId: 'scope_type_project' }))).id as string;
    const key = async (name: string, body: Record<string, unknown>) => {
      const k = await ok(platform('POST', '/api-keys', { name, tenantId: ids.tenant, ...body }));
      ids[name] = k.id as string;
      keys[name] = k.secretKey as string;
    };
    await key('prodService', { kind: 'service', environmentId: ids.prod });
    await key('prodUser', { kind: 'user', environmentId: ids.prod });
    await key('tenantUser', { kind: 'user' });
  });
  afterAll(() => cp?.close());

  const ask = (scopeId: string) => ({ actor: { subjectId: 'subject_nobody' }, scopeId, action: 'read' });

  it('decides only at the environment\'s scope and below', async () => {
    for (const scope of [ids.prodScope, ids.team]) expect((await as(keys.prodService, 'POST', '/evaluate', ask(scope))).status).toBe(200);
    for (const scope of [ids.root, ids.outside, ids.devScope]) {
      const a = await as(keys.prodService, 'POST', '/evaluate', ask(scope));
      expect([a.status, a.body.code]).toEqual([403, 'permission_denied']);
    }
    const batch = await as(keys.prodService, 'POST', '/evaluate/batch', { requests: [ask(ids.team), ask(ids.outside)] });
    expect(batch.status).toBe(403);
    expect(batch.body.message).toContain('requests[1].scopeId');
    expect((await as(keys.prodService, 'GET', `/effective-permissions?subjectId=subject_nobody&scopeId=${ids.team}`)).status).toBe(200);
    expect((await as(keys.prodService, 'GET', `/effective-permissions?subjectId=subject_nobody&scopeId=${ids.outside}`)).status).toBe(403);
  });

  it('manages only its environment: no tenant-level entities, its own environment listed, keys of it only', async () => {
    const u = keys.prodUser;
    for (const [method, path, body] of [
      ['POST', '/projects', { tenantId: ids.tenant, name: 'p2' }],
      ['POST', '/workspaces', { tenantId: ids.tenant, name: 'w' }],
      ['POST', '/environments', { tenantId: ids.tenant, projectId: ids.project, name: 'qa' }],
      ['GET', `/tenants/${ids.tenant}`, undefined],
      ['GET', `/projects/tenant/${ids.tenant}`, undefined],
      ['GET', `/workspaces/tenant/${ids.tenant}`, undefined],
    ] as const) {
      expect((await as(u, method, path, body)).status, `${method} ${path}`).toBe(403);
    }
    expect(((await ok(as(u, 'GET', `/environments/tenant/${ids.tenant}`))) as unknown as { id: string }[]).map((e) => e.id)).toEqual([ids.prod]);
    expect(((await ok(as(u, 'GET', `/environments/project/${ids.project}`))) as unknown as { id: string }[]).map((e) => e.id)).toEqual([ids.prod]);

    // Keys it mints are of its environment; it cannot mint one for another or for the tenant.
    const minted = await ok(as(u, 'POST', '/api-keys', { name: 'ci', kind: 'service' }));
    expect(minted.environmentId).toBe(ids.prod);
    const wider = await as(u, 'POST', '/api-keys', { name: 'dev', kind: 'service', environmentId: ids.dev });
    expect([wider.status, (wider.body.details as { field: string }[])[0].field]).toEqual([403, 'environmentId']);
    const listed = (await ok(as(u, 'GET', '/api-keys'))) as unknown as { id: string; environmentId: string }[];
    expect(new Set(listed.map((k) => k.environmentId))).toEqual(new Set([ids.prod]));
    expect(listed.map((k) => k.id)).toContain(minted.id);
    expect((await as(u, 'DELETE', `/api-keys/${ids.tenantUser}`)).status).toBe(403);
    expect((await as(u, 'DELETE', `/api-keys/${minted.id as string}`)).status).toBe(200);

    // An unrestricted user key still reaches the whole tenant.
    expect((await as(keys.tenantUser, 'GET', `/tenants/${ids.tenant}`)).status).toBe(200);
    expect((await as(keys.tenantUser, 'POST', '/workspaces', { tenantId: ids.tenant, name: 'w1' })).status).toBe(200);
  });

  it('answers 403 without naming another tenant', async () => {
    for (const [method, path, body] of [
      ['GET', `/tenants/${ids.other}`, undefined],
      ['POST', '/projects', { tenantId: ids.other, name: 'p' }],
      ['GET', `/environments/tenant/${ids.other}`, undefined],
    ] as const) {
      const a = await as(keys.tenantUser, method, path, body);
      expect(a.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(a.body)).not.toContain(ids.other);
    }
    const a = await as(keys.prodService, 'POST', '/evaluate', ask((await ok(platform('GET', `/tenants/${ids.other}`))).scopeId as string));
    expect(a.status).toBe(403);
    expect(JSON.stringify(a.body)).not.toContain(ids.other);
  });
});
