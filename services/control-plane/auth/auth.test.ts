import { create, createFileRegistry, type DescService } from '@bufbuild/protobuf';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { FileDescriptorProtoSchema, type EmptySchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema, ErrorReason } from '../../../gen/authz/v1/error_reason_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import type { RunningServer } from '../../transport/server.js';
import { KEYS, PRINCIPALS, startFakeServer, type FakeKeyVerifier, type FakeWorld } from '../../../test/fake-control-plane.js';
import { credentialsOf } from './interceptor.js';
import { assertTenantReach, principalKey, principalOf } from './principal.js';

/** A service whose only RPC declares no access tier: it must be denied to everyone. */
type NoTier = GenService<{ ping: { methodKind: 'unary'; input: typeof EmptySchema; output: typeof EmptySchema } }>;
const NoTierService = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: 'test/no_tier.proto',
    package: 'test.v1',
    syntax: 'proto3',
    messageType: [{ name: 'Ping' }, { name: 'Pong' }],
    service: [{ name: 'NoTierService', method: [{ name: 'Ping', inputType: '.test.v1.Ping', outputType: '.test.v1.Pong' }] }],
  }),
  () => undefined,
).getService('test.v1.NoTierService') as DescService as unknown as NoTier;

let server: RunningServer;
let world: FakeWorld;
let verifier: FakeKeyVerifier;
let noTierCalled = 0;

beforeAll(async () => {
  ({ server, world, verifier } = await startFakeServer({
    routes: (router) => {
      router.service(NoTierService, { ping: () => (noTierCalled++, {}) });
    },
  }));
});
afterAll(async () => {
  await server?.close();
});

async function rest(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const key = (k: keyof typeof KEYS) => ({ 'x-api-key': KEYS[k] });
const bearer = (k: keyof typeof KEYS) => ({ authorization: `Bearer ${KEYS[k]}` });
const evaluateBody = { actor: { subjectId: 'subject_1' }, scopeId: 'scope_1', action: 'read' };

describe('credentials', () => {
  it('missing credentials are 401 on REST, with an ErrorInfo detail and a challenge', async () => {
    const r = await rest('GET', '/resources/resource_1', {});
    expect(r.status).toBe(401);
    expect(r.json.code).toBe('unauthenticated');
    expect(r.json.details[0]).toMatchObject({ reason: 'ERROR_REASON_UNAUTHENTICATED' });
    expect(r.headers.get('www-authenticate')).toMatch(/Bearer/);
  });

  it('unknown keys are 401; a malformed Authorization header is 401', async () => {
    expect((await rest('GET', '/resources/resource_1', { 'x-api-key': 'sk_nope' })).status).toBe(401);
    expect((await rest('GET', '/resources/resource_1', { authorization: 'Bearer sk_nope' })).status).toBe(401);
    expect((await rest('GET', '/resources/resource_1', { authorization: `Basic ${KEYS.platform}` })).status).toBe(401);
  });

  it('accepts x-api-key and Authorization: Bearer alike', async () => {
    expect((await rest('GET', '/tenants/tenant_a', key('platform'))).status).toBe(200);
    expect((await rest('GET', '/tenants/tenant_a', bearer('platform'))).status).toBe(200);
    expect((await rest('GET', '/tenants/tenant_a', { authorization: `bearer ${KEYS.platform}` })).status).toBe(200);
  });

  it('two different credentials are refused', () => {
    const h = new Headers({ 'x-api-key': 'a', authorization: 'Bearer b' });
    expect(() => credentialsOf(h)).toThrow(ConnectError);
    expect(credentialsOf(new Headers({ 'x-api-key': 'a', authorization: 'Bearer a' }))).toBe('a');
    expect(credentialsOf(new Headers())).toBeUndefined();
  });

  it('missing and unknown credentials are unauthenticated for Connect and gRPC clients', async () => {
    for (const transport of [
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }),
      createGrpcTransport({ baseUrl: server.url }),
    ]) {
      const client = createClient(ResourceService, transport);
      await expect(client.getResource({ id: 'resource_1' })).rejects.toMatchObject({ code: Code.Unauthenticated });
      await expect(client.getResource({ id: 'resource_1' }, { headers: { 'x-api-key': 'sk_nope' } })).rejects.toMatchObject({
        code: Code.Unauthenticated,
      });
    }
  });
});

describe('tiers', () => {
  const cases: Array<[keyof typeof KEYS, string, string, unknown, number]> = [
    // PLATFORM tier
    ['user', 'GET', '/resources/resource_x', undefined, 403],
    ['service', 'GET', '/resources/resource_x', undefined, 403],
    ['platform', 'GET', '/resources/resource_x', undefined, 404],
    // DECISION tier
    ['user', 'POST', '/evaluate', evaluateBody, 403],
    ['service', 'POST', '/evaluate', evaluateBody, 200],
    ['platform', 'POST', '/evaluate', evaluateBody, 200],
    // TENANT tier
    ['user', 'GET', '/tenants/tenant_a', undefined, 200],
    ['service', 'GET', '/tenants/tenant_a', undefined, 403],
    ['platform', 'GET', '/tenants/tenant_a', undefined, 200],
    // tenant reach inside a TENANT-tier handler
    ['user', 'GET', '/tenants/tenant_b', undefined, 403],
    ['otherUser', 'GET', '/tenants/tenant_b', undefined, 200],
    ['platform', 'GET', '/tenants/tenant_b', undefined, 200],
  ];
  for (const [who, method, path, body, status] of cases) {
    it(`${who} key: ${method} ${path} → ${status}`, async () => {
      const r = await rest(method, path, key(who), body);
      expect(r.status).toBe(status);
      if (status === 403) {
        expect(r.json.code).toBe('permission_denied');
        expect(r.json.details[0].reason).toBe('ERROR_REASON_TIER');
      }
    });
  }

  it('Connect clients get permission_denied with an ErrorInfo TIER detail', async () => {
    const client: Client<typeof ResourceService> = createClient(
      ResourceService,
      createConnectTransport({ baseUrl: server.url, httpVersion: '2' }),
    );
    const err = await client.getResource({ id: 'r' }, { headers: key('user') }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.PermissionDenied);
    const [info] = (err as ConnectError).findDetails(ErrorInfoSchema);
    expect(info.reason).toBe(ErrorReason.TIER);
  });

  it('a service key may call the decision path over gRPC; a user key may not', async () => {
    const client = createClient(DecisionService, createGrpcTransport({ baseUrl: server.url }));
    const res = await client.evaluate(evaluateBody, { headers: key('service') });
    expect(res.allowed).toBe(false);
    await expect(client.evaluate(evaluateBody, { headers: key('user') })).rejects.toMatchObject({ code: Code.PermissionDenied });
  });

  it('puts the principal in the handler context', async () => {
    await rest('POST', '/evaluate', key('service'), evaluateBody);
    expect(world.lastContext?.values.get(principalKey)).toEqual(PRINCIPALS.service);
    expect(principalOf(world.lastContext!)).toEqual(PRINCIPALS.service);
  });

  it('a method without an access tier is denied to every key (fail closed)', async () => {
    const client = createClient(NoTierService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }));
    for (const k of Object.keys(KEYS) as Array<keyof typeof KEYS>) {
      await expect(client.ping({}, { headers: key(k) })).rejects.toMatchObject({ code: Code.PermissionDenied });
    }
    expect(noTierCalled).toBe(0);
  });

  it('TenancyService user-tier write checks reach', async () => {
    const client = createClient(TenancyService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }));
    await expect(client.createProject({ tenantId: 'tenant_b', name: 'p' }, { headers: key('user') })).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
    const ok = await client.createProject({ tenantId: 'tenant_a', name: 'p' }, { headers: key('user') });
    expect(ok.project?.tenantId).toBe('tenant_a');
    expect(verifier.calls).toBeGreaterThan(0);
  });
});

describe('principal helpers', () => {
  it('assertTenantReach: platform reaches all, others only their own tenant', () => {
    expect(() => assertTenantReach(PRINCIPALS.platform, 'tenant_z')).not.toThrow();
    expect(() => assertTenantReach(PRINCIPALS.user, 'tenant_a')).not.toThrow();
    expect(() => assertTenantReach(PRINCIPALS.user, 'tenant_b')).toThrow(/does not reach/);
    expect(() => assertTenantReach(PRINCIPALS.service, '')).toThrow();
    expect(() => assertTenantReach({ ...PRINCIPALS.user, tenantId: undefined }, 'tenant_a')).toThrow();
  });

  it('principalOf fails closed without a principal', () => {
    const values = { get: () => undefined } as unknown as Parameters<typeof principalOf>[0]['values'];
    expect(() => principalOf({ values })).toThrow(/no verified credentials/);
  });
});
