import * as http2 from 'node:http2';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KEYS, startFakeServer, type FakeWorld } from '../../../test/fake-control-plane.js';
import type { RunningServer } from '../../transport/server.js';
import { surfaceKey } from '../../transport/gateway/gateway.js';

let server: RunningServer;
let world: FakeWorld;

beforeAll(async () => {
  ({ server, world } = await startFakeServer());
});
afterAll(async () => {
  await server?.close();
});
beforeEach(() => {
  world.resources.clear();
  world.seq = 0;
});

async function rest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(server.url + path, {
    method,
    headers: { 'x-api-key': KEYS.platform, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const newResource = (id: string, ownerScopeId = 'scope_1') => ({
  id,
  resourceTypeId: 'resource_type_doc',
  ownerScopeId,
  externalResourceId: `ext-${id}`,
});

describe('REST gateway: requests', () => {
  it('POST with body "*" creates, answers the response_body field and x-revision', async () => {
    const r = await rest('POST', '/resources', { ...newResource('resource_a'), displayName: 'A', attributes: { color: 'red' } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      id: 'resource_a',
      ownerScopeId: 'scope_1',
      scopeId: 'scope_1',
      displayName: 'A',
      attributes: { color: 'red' },
      createdAt: '2025-01-02T03:04:05Z',
      createdBy: 'subject_platform',
    });
    expect(r.headers.get('x-revision')).toBe(String(world.revision));
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  it('accepts proto field names as well as JSON names in the body', async () => {
    const r = await rest('POST', '/resources', { id: 'resource_b', resource_type_id: 't', owner_scope_id: 's', external_resource_id: 'e' });
    expect(r.status).toBe(200);
    expect(r.json.resourceTypeId).toBe('t');
  });

  it('GET with a path parameter returns the message; an unknown id is 404 with an ErrorInfo detail', async () => {
    await rest('POST', '/resources', newResource('resource_c'));
    const r = await rest('GET', '/resources/resource_c');
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('resource_c');
    // implicit fields are always present
    expect(r.json.tenantId).toBe('tenant_a');

    const missing = await rest('GET', '/resources/resource_zzz');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({
      code: 'not_found',
      message: 'resource resource_zzz not found',
      details: [{ type: 'authz.v1.ErrorInfo', reason: 'ERROR_REASON_NOT_FOUND', field: 'id', message: 'resource resource_zzz not found' }],
    });
  });

  it('decodes percent-encoded path parameters', async () => {
    const r = await rest('GET', '/scopes/scope%20x%2Fy');
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('scope x/y');
  });

  it('body "items" takes a bare array and answers a bare array', async () => {
    const r = await rest('POST', '/resources/batch', [newResource('resource_1'), newResource('resource_2')]);
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    expect(r.json.map((x: { id: string }) => x.id)).toEqual(['resource_1', 'resource_2']);
    expect(r.headers.get('x-revision')).toBe(String(world.revision));
  });

  it('a batch body that is not an array is invalid_argument', async () => {
    const r = await rest('POST', '/resources/batch', { items: [] });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('invalid_argument');
    expect(r.json.message).toMatch(/must be a JSON array/);
  });

  it('errors inside batch items name the item path', async () => {
    const bad = await rest('POST', '/resources/batch', [newResource('resource_1'), { ...newResource('resource_2'), bogus: 1 }]);
    expect(bad.status).toBe(400);
    expect(bad.json.details[0]).toMatchObject({ reason: 'ERROR_REASON_INVALID_FIELD', field: 'items[1].bogus' });

    const dup = await rest('POST', '/resources/batch', [newResource('resource_1'), newResource('resource_1')]);
    expect(dup.status).toBe(400);
    expect(dup.json.details[0].field).toBe('items[1].id');
  });

  it('lists are bare arrays, paged by limit (int from query) and cursor, next cursor in x-next-cursor', async () => {
    await rest('POST', '/resources/batch', ['resource_1', 'resource_2', 'resource_3'].map((id) => newResource(id)));
    await rest('POST', '/resources', newResource('resource_9', 'scope_other'));
    const p1 = await rest('GET', '/resources?scopeId=scope_1&limit=2');
    expect(p1.status).toBe(200);
    expect(p1.json.map((x: { id: string }) => x.id)).toEqual(['resource_1', 'resource_2']);
    expect(p1.headers.get('x-next-cursor')).toBe('resource_2');
    const p2 = await rest('GET', `/resources?scope_id=scope_1&limit=2&cursor=${p1.headers.get('x-next-cursor')}`);
    expect(p2.json.map((x: { id: string }) => x.id)).toEqual(['resource_3']);
    expect(p2.headers.has('x-next-cursor')).toBe(false);
    const empty = await rest('GET', '/resources?scopeId=scope_none');
    expect(empty.json).toEqual([]);
  });

  it('bad query values and unknown query parameters are invalid_argument naming the parameter', async () => {
    const notInt = await rest('GET', '/resources?scopeId=s&limit=ten');
    expect(notInt.status).toBe(400);
    expect(notInt.json.details[0]).toMatchObject({ field: 'limit' });
    expect(notInt.json.message).toMatch(/limit: must be an integer/);

    const unknown = await rest('GET', '/resources?scopeId=s&colour=red');
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toMatch(/colour/);

    const twice = await rest('GET', '/resources?scopeId=a&scopeId=b');
    expect(twice.status).toBe(400);

    const pathParam = await rest('GET', '/resources/resource_1?id=other');
    expect(pathParam.status).toBe(400);
  });

  it('DELETE answers {} with x-revision', async () => {
    await rest('POST', '/resources', newResource('resource_d'));
    const r = await rest('DELETE', '/resources/resource_d');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({});
    expect(r.headers.get('x-revision')).toBe(String(world.revision));
    expect((await rest('GET', '/resources/resource_d')).status).toBe(404);
  });

  it('binds two path variables, and prefers literal segments over variables', async () => {
    const del = await rest('DELETE', '/resource-hierarchy/resource_p/resource_c');
    expect(del.status).toBe(200);
    expect(del.json).toEqual({});
    const anc = await rest('GET', '/resource-hierarchy/ancestors/resource_c');
    expect(anc.status).toBe(200);
    expect(anc.json).toEqual([{ id: 'resource_c_parent', cascade: 'inherit', depth: 1, resourceTypeId: '' }]);
    // the literal route only has GET; DELETE falls through to the two-variable route
    const delAnc = await rest('DELETE', '/resource-hierarchy/ancestors/resource_c');
    expect(delAnc.status).toBe(200);
  });

  it('serves additional_bindings', async () => {
    const a = await rest('GET', '/scopes/scope_1/children');
    const b = await rest('GET', '/scope-hierarchy/scope_1/children');
    expect(a.status).toBe(200);
    expect(b.json).toEqual(a.json);
    expect(a.json[0]).toMatchObject({ id: 'scope_1_child', typeId: 'scope_type_x' });
  });

  it('PATCH merges path and body; a body id that contradicts the path is rejected', async () => {
    await rest('POST', '/resources', newResource('resource_e'));
    const ok = await rest('PATCH', '/resources/resource_e', { displayName: 'renamed' });
    expect(ok.status).toBe(200);
    expect(ok.json.displayName).toBe('renamed');
    const same = await rest('PATCH', '/resources/resource_e', { id: 'resource_e', displayName: 'again' });
    expect(same.status).toBe(200);
    const clash = await rest('PATCH', '/resources/resource_e', { id: 'resource_other' });
    expect(clash.status).toBe(400);
    expect(clash.json.code).toBe('invalid_argument');
  });

  it('writes int64 fields as JSON numbers (tenant revision)', async () => {
    const r = await rest('GET', '/tenants/tenant_a');
    expect(r.status).toBe(200);
    expect(r.json.revision).toBe(9_007_199_254);
    expect(typeof r.json.revision).toBe('number');
  });

  it('always writes implicit fields: allowed false, revision as a number', async () => {
    const r = await rest('POST', '/evaluate', { actor: { subjectId: 'subject_1' }, scopeId: 'scope_1', action: 'read' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ allowed: false, decidedByPolicy: false, reason: 'no_match', revision: world.revision, trace: [] });
    expect(world.lastContext?.values.get(surfaceKey)).toBe('rest');
  });
});

describe('REST gateway: malformed requests', () => {
  it('a body that is not JSON is invalid_argument', async () => {
    const r = await rest('POST', '/evaluate', '{"scopeId": ');
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('invalid_argument');
    expect(r.json.message).toMatch(/not valid JSON/);
  });

  it('a body of the wrong JSON type is invalid_argument', async () => {
    expect((await rest('POST', '/evaluate', [1, 2])).json.message).toMatch(/must be a JSON object, got array/);
    const wrongField = await rest('POST', '/evaluate', { scopeId: 5 });
    expect(wrongField.status).toBe(400);
    expect(wrongField.json.details[0]).toMatchObject({ field: 'scopeId', reason: 'ERROR_REASON_INVALID_FIELD' });
    const wrongBool = await rest('POST', '/evaluate', { explain: 'yes' });
    expect(wrongBool.json.message).toMatch(/explain: must be a boolean/);
    const nested = await rest('POST', '/evaluate', { actor: { subjectId: 'x', nickname: 'y' } });
    expect(nested.json.details[0].field).toBe('actor.nickname');
  });

  it('unknown fields are rejected, naming the field', async () => {
    const r = await rest('POST', '/resources', { ...newResource('resource_u'), ownerScope: 'x' });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('invalid_argument');
    expect(r.json.message).toMatch(/ownerScope/);
    expect(r.json.details[0].field).toBe('ownerScope');
  });

  it('accepts free-form JSON inside Struct fields', async () => {
    const r = await rest('POST', '/evaluate', { scopeId: 's', context: { anything: { goes: [1, 'two', null] } } });
    expect(r.status).toBe(200);
  });

  it('bodies over 4 MiB are resource_exhausted, also without content-length', async () => {
    const big = JSON.stringify([{ ...newResource('resource_big'), displayName: 'x'.repeat(4 * 1024 * 1024) }]);
    const r = await rest('POST', '/resources/batch', big);
    expect(r.json.code).toBe('resource_exhausted');
    expect(r.status).toBe(429);

    // chunked (no content-length), over HTTP/2
    const streamed = await h2Request('POST', '/resources/batch', big, { 'content-type': 'application/json' });
    expect(streamed.status).toBe(429);
    expect(JSON.parse(streamed.body).code).toBe('resource_exhausted');
  });

  it('unknown paths are 404 not_found; known paths with another method are 405 with allow', async () => {
    const nf = await rest('GET', '/no-such-thing');
    expect(nf.status).toBe(404);
    expect(nf.json.code).toBe('not_found');
    const na = await rest('PUT', '/resources/resource_1');
    expect(na.status).toBe(405);
    expect(na.headers.get('allow')).toBe('DELETE, GET, PATCH');
  });

  it('an RPC the router does not implement is unimplemented', async () => {
    const r = await rest('GET', '/resources/resource_1/children');
    expect(r.status).toBe(501);
    expect(r.json.code).toBe('unimplemented');
  });

  it('an unexpected handler failure is a generic internal error that leaks nothing', async () => {
    const r = await rest('GET', '/resources/resource_boom');
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ code: 'internal', message: 'internal error', details: [] });
  });
});

function h2Request(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const session = http2.connect(server.url);
    session.on('error', reject);
    const stream = session.request({ ':method': method, ':path': path, 'x-api-key': KEYS.platform, ...headers });
    let status = 0;
    let resHeaders: http2.IncomingHttpHeaders = {};
    let data = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      resHeaders = h;
    });
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (data += c));
    stream.on('end', () => {
      session.close();
      resolve({ status, headers: resHeaders, body: data });
    });
    stream.on('error', (err) => {
      session.close();
      if (status) resolve({ status, headers: resHeaders, body: data });
      else reject(err);
    });
    if (body !== undefined) {
      // write in pieces so no content-length is known up front
      const buf = Buffer.from(body);
      for (let i = 0; i < buf.length; i += 256 * 1024) stream.write(buf.subarray(i, i + 256 * 1024));
    }
    stream.end();
  });
}

describe('REST gateway over h2c', () => {
  it('serves REST on HTTP/2 prior knowledge too', async () => {
    const r = await h2Request('GET', '/tenants/tenant_a');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).revision).toBe(9_007_199_254);
  });
});
