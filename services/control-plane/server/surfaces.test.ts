/**
 * Every surface of the control plane answers DecisionService alike: REST, Connect JSON and
 * binary and gRPC take the lean path (keys from the cache), gRPC-Web and `GET
 * /effective-permissions` connect-node. The sidecar's conformance cases run here too, plus the
 * auth cases, and the lean answers are compared byte for byte (status, headers, body, trailers)
 * with those of a control plane on the same database that leaves the decision RPCs to
 * connect-node.
 */
import * as http2 from 'node:http2';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, fromJson, toBinary, type DescMessage, type JsonObject } from '@bufbuild/protobuf';
import {
  EvaluateBatchRequestSchema, EvaluateRequestSchema, GetEffectivePermissionsRequestSchema, LookupResourcesRequestSchema, LookupSubjectsRequestSchema,
} from '../../../gen/authz/v1/decision_service_pb.js';
import { CreateMembershipRequestSchema } from '../../../gen/authz/v1/membership_service_pb.js';
import { CreateRoleRequestSchema } from '../../../gen/authz/v1/role_service_pb.js';
import { CreateTenantRequestSchema } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { MAX_BODY_BYTES } from '../../transport/request-limits.js';
import { startControlPlane, type ControlPlane } from '../app.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../../transport/observability.js';
import { describeEachBackend, TEST_BOOTSTRAP_KEY, startTestControlPlane } from '../../../test/harness.js';
import {
  SURFACES, effectiveOn, envelope, errorClassOn, evaluateBatchOn, evaluateOn, expectedOutcomes, transportErrorClasses, type ErrorClass, type Outcome, type RawCall,
} from '../../../test/conformance/surfaces.js';

interface Answer { status: number; body: Record<string, unknown> & { message?: string } }

describeEachBackend('the control plane\'s decision surfaces on %s', (backend) => {
  let cp: ControlPlane & { url: string };
  /** A second process on the same database, without the lean path (connect-node only); postgres only. */
  let plain: ControlPlane | undefined;
  const ids: Record<string, string> = {};
  const keys: Record<string, string> = {};

  async function as(key: string | undefined, method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key !== undefined) headers['x-api-key'] = key;
    const res = await fetch(cp.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : {} };
  }
  const ok = async (a: Promise<Answer>) => {
    const r = await a;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const platform = (method: string, path: string, body?: unknown) => ok(as(TEST_BOOTSTRAP_KEY, method, path, body));

  beforeAll(async () => {
    cp = await startTestControlPlane(backend, { SERVICE_MIN_REVISION_WAIT_MS: '50' });
    if (backend === 'postgres') {
      const url = cp.db.orm.config.get('clientUrl') as string;
      plain = await startControlPlane(
        loadConfig({ SERVICE_PORT: '0', DATABASE_URL: url, SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY, SERVICE_MIN_REVISION_WAIT_MS: '50' }, []),
        createLogger({ logLevel: 'silent' }), { leanDecisions: false },
      );
    }
    const tenant = await platform('POST', '/tenants', { name: 'surfaces' });
    ids.tenant = tenant.id as string;
    ids.root = tenant.scopeId as string;
    const other = await platform('POST', '/tenants', { name: 'elsewhere' });
    ids.otherRoot = other.scopeId as string;
    ids.alice = (await platform('POST', '/subjects', { tenantId: ids.tenant, type: 'user', externalId: 'alice' })).id as string;
    ids.bob = (await platform('POST', '/subjects', { tenantId: ids.tenant, type: 'user', externalId: 'bob' })).id as string;
    const role = await platform('POST', '/roles', { scopeId: ids.root, key: 'reader', name: 'Reader' });
    const perm = await platform('POST', '/permissions', { scopeId: ids.root, action: 'read', resourceType: 'doc', resourcePattern: '*' });
    await platform('POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
    const m = await platform('POST', '/memberships', { subjectId: ids.alice, scopeId: ids.root });
    await platform('POST', '/role-assignments', { membershipId: m.id, roleId: role.id });
    // A second reader with a non-ASCII external id, for the listings.
    ids.carol = (await platform('POST', '/subjects', { tenantId: ids.tenant, type: 'user', externalId: 'çarol-😀' })).id as string;
    const mc = await platform('POST', '/memberships', { subjectId: ids.carol, scopeId: ids.root });
    await platform('POST', '/role-assignments', { membershipId: mc.id, roleId: role.id });
    ids.role = role.id as string;
    const type = await platform('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: ids.root });
    ids.doc1 = (await platform('POST', '/resources', { resourceTypeId: type.id, ownerScopeId: ids.root, externalResourceId: 'doc-1' })).id as string;
    ids.policy = (await platform('POST', '/resource-policies', {
      scopeId: ids.root, target: { kind: 'resource', resourceId: ids.doc1 }, actions: ['delete'], effect: 'deny', priority: 5,
    })).id as string;
    const project = await platform('POST', '/projects', { tenantId: ids.tenant, name: 'app' });
    const prod = await platform('POST', '/environments', { tenantId: ids.tenant, projectId: project.id, name: 'prod' });
    ids.prodScope = prod.scopeId as string;
    const key = async (name: string, body: Record<string, unknown>) => {
      const k = await platform('POST', '/api-keys', { name, tenantId: ids.tenant, ...body });
      ids[name] = k.id as string;
      keys[name] = k.secretKey as string;
    };
    await key('service', { kind: 'service' });
    await key('user', { kind: 'user' });
    await key('revoked', { kind: 'service' });
    await key('prodService', { kind: 'service', environmentId: prod.id });
    await ok(as(TEST_BOOTSTRAP_KEY, 'DELETE', `/api-keys/${ids.revoked}`));
  });
  afterAll(async () => {
    await plain?.close();
    await cp?.close();
  });

  const read = (extra: Record<string, unknown> = {}) => ({ actor: { subjectId: ids.alice }, scopeId: ids.root, action: 'read', ...extra });
  const auth = (key: string) => ({ 'x-api-key': key });

  /** The same call on every surface; they must all agree, and the first is returned. */
  async function everywhere(call: (surface: (typeof SURFACES)[number]) => Promise<Outcome>): Promise<Outcome> {
    const outcomes = await Promise.all(SURFACES.map(async (s) => [s, await call(s)] as const));
    for (const [s, o] of outcomes) expect(o, `${s} differs from ${outcomes[0][0]}`).toEqual(outcomes[0][1]);
    return outcomes[0][1];
  }

  describe('conformance', () => {
    const cases: [string, () => Record<string, unknown>, (o: Outcome) => void][] = [
      ['a role allows', () => read({ resource: { externalResourceId: 'doc-9', resourceType: 'doc' } }), (o) => expect(o).toMatchObject({ ok: { allowed: true, reason: 'role' } })],
      ['no role denies', () => read({ actor: { subjectId: ids.bob } }), (o) => expect(o).toMatchObject({ ok: { allowed: false, reason: 'no_match' } })],
      ['a policy denies, naming itself', () => read({ action: 'delete', resource: { resourceId: ids.doc1 } }),
        (o) => expect(o).toMatchObject({ ok: { allowed: false, reason: 'policy_deny', decidedByPolicy: true, evaluatedPolicy: { id: ids.policy, effect: 'deny', priority: 5 } } })],
      ['an explanation', () => read({ explain: true }), (o) => expect((o as { ok: { trace: unknown[] } }).ok.trace.length).toBeGreaterThan(3)],
      ['a missing field', () => ({ scopeId: ids.root, action: 'read' }), (o) => expect(o).toEqual({ error: { code: 'InvalidArgument', message: 'actor.subjectId: is required (or actor.externalId)', reason: 'INVALID_FIELD', field: 'actor.subjectId' } })],
      ['a NUL byte', () => read({ action: 'r\u0000' }), (o) => expect(o).toMatchObject({ error: { code: 'InvalidArgument', field: 'action' } })],
      ['an unknown scope', () => read({ scopeId: 'scope_nowhere' }), (o) => expect(o).toMatchObject({ error: { code: 'NotFound', field: 'scopeId' } })],
      ['a scope of another tenant', () => read({ scopeId: ids.otherRoot }), (o) => expect(o).toMatchObject({ error: { code: 'PermissionDenied', field: 'scopeId' } })],
      ['a revision not reached', () => read({ consistency: { minRevision: '99999' } }), (o) => expect(o).toMatchObject({ error: { code: 'Unavailable', reason: 'STALE' } })],
      ['full consistency', () => read({ consistency: { fullyConsistent: true } }), (o) => expect(o).toMatchObject({ ok: { allowed: true } })],
    ];
    for (const [name, request, check] of cases) {
      it(name, async () => check(await everywhere((s) => evaluateOn(s, cp.url, request() as never, auth(keys.service)))));
    }

    it('batches', async () => {
      const o = await everywhere((s) => evaluateBatchOn(s, cp.url, [read(), read({ actor: { subjectId: ids.bob } })] as never, auth(keys.service)));
      expect(o).toMatchObject({ ok: { results: [{ allowed: true }, { allowed: false }] } });
      const bad = await everywhere((s) => evaluateBatchOn(s, cp.url, [read(), read({ scopeId: '' })] as never, auth(keys.service)));
      expect(bad).toMatchObject({ error: { code: 'InvalidArgument', field: 'requests[1].scopeId' } });
    });

    it('effective permissions, with the revision', async () => {
      const o = await everywhere((s) => effectiveOn(s, cp.url, { subjectId: ids.alice, scopeId: ids.root }, auth(keys.service)));
      expect(o).toMatchObject({ ok: { permissions: [{ key: 'doc:read:*', source: 'role', roleId: ids.role }] } });
    });
  });

  describe('auth on the lean path', () => {
    const unauthenticated = (message: string) => ({ error: { code: 'Unauthenticated', message, reason: 'UNAUTHENTICATED', field: '' } });
    it('a missing key is 401', async () => {
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never))).toEqual(unauthenticated('missing credentials: send x-api-key or Authorization: Bearer'));
      expect(await everywhere((s) => effectiveOn(s, cp.url, { subjectId: ids.alice, scopeId: ids.root }))).toEqual(unauthenticated('missing credentials: send x-api-key or Authorization: Bearer'));
    });
    it('an unknown or revoked key is 401', async () => {
      for (const key of [keys.revoked, 'azk_not_a_key_at_all_0123456789abcdefghijklmno', 'short']) {
        expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, auth(key)))).toEqual(unauthenticated('unknown, revoked or expired API key'));
        expect(await everywhere((s) => evaluateBatchOn(s, cp.url, [read()] as never, auth(key)))).toEqual(unauthenticated('unknown, revoked or expired API key'));
      }
    });
    it('a malformed Authorization header is 401', async () => {
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, { authorization: 'Basic abc' })))
        .toEqual(unauthenticated('the Authorization header must be "Bearer <API key>"'));
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, { authorization: `Bearer ${keys.service}` }))).toMatchObject({ ok: { allowed: true } });
    });
    it('a user key is 403 (tier), as from the interceptor', async () => {
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, auth(keys.user)))).toEqual({
        error: {
          code: 'PermissionDenied', reason: 'TIER', field: '',
          message: 'a user key cannot call authz.v1.DecisionService.Evaluate (tier decision: service or platform keys)',
        },
      });
      expect(await everywhere((s) => effectiveOn(s, cp.url, { subjectId: ids.alice, scopeId: ids.root }, auth(keys.user))))
        .toMatchObject({ error: { code: 'PermissionDenied', reason: 'TIER', message: 'a user key cannot call authz.v1.DecisionService.GetEffectivePermissions (tier decision: service or platform keys)' } });
    });
    it('another tenant is 403, and an environment key outside its environment is 403', async () => {
      const refused = { error: { code: 'PermissionDenied', reason: 'TIER', field: 'scopeId', message: 'the API key does not reach the tenant of scopeId' } };
      expect(await everywhere((s) => evaluateOn(s, cp.url, read({ scopeId: ids.otherRoot }) as never, auth(keys.service)))).toEqual(refused);
      // Again once the other tenant's index is cached and current (a platform key asked there):
      // the decision then reads nothing from the database, and the reach check must hold there too.
      expect(await everywhere((s) => evaluateOn(s, cp.url, read({ scopeId: ids.otherRoot }) as never, auth(TEST_BOOTSTRAP_KEY)))).toMatchObject({ ok: { allowed: false } });
      expect(await everywhere((s) => evaluateOn(s, cp.url, read({ scopeId: ids.otherRoot }) as never, auth(keys.service)))).toEqual(refused);
      expect(await everywhere((s) => evaluateBatchOn(s, cp.url, [read({ scopeId: ids.otherRoot })] as never, auth(keys.service))))
        .toEqual({ error: { ...refused.error, field: 'requests[0].scopeId', message: 'the API key does not reach the tenant of requests[0].scopeId' } });
      expect(await everywhere((s) => evaluateOn(s, cp.url, read({ scopeId: ids.prodScope }) as never, auth(keys.prodService)))).toMatchObject({ ok: { allowed: true } });
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, auth(keys.prodService))))
        .toMatchObject({ error: { code: 'PermissionDenied', field: 'scopeId' } });
    });
    it('a platform key decides for any tenant', async () => {
      expect(await everywhere((s) => evaluateOn(s, cp.url, read() as never, auth(TEST_BOOTSTRAP_KEY)))).toMatchObject({ ok: { allowed: true } });
    });
  });

  /**
   * One error shape on every surface: each class of mistake gets the same Connect code and
   * ErrorInfo (reason, field) over REST, Connect JSON and binary, gRPC and gRPC-Web, on the lean
   * decision path and on connect-node's CRUD services alike.
   */
  describe('error classes', () => {
    /** A call of a CRUD RPC with its REST binding, in JSON and binary. */
    const crud = (rest: string, rpc: string, schema: DescMessage, body: JsonObject, headers: Record<string, string>): RawCall => ({
      rest: { method: 'POST', path: rest }, rpc, json: JSON.stringify(body), binary: toBinary(schema, fromJson(schema, body)), headers,
    });
    const classes: [string, ErrorClass][] = [
      ...transportErrorClasses({
        rest: { method: 'POST', path: '/evaluate' }, rpc: '/authz.v1.DecisionService/Evaluate', valid: () => read(),
        headers: () => auth(keys.service), bodyLimit: MAX_BODY_BYTES,
      }).map((c): [string, ErrorClass] => ['DecisionService (lean path)', c]),
      ...transportErrorClasses({
        rest: { method: 'POST', path: '/tenants' }, rpc: '/authz.v1.TenancyService/CreateTenant', valid: () => ({ name: 'classes' }),
        headers: () => auth(TEST_BOOTSTRAP_KEY), bodyLimit: MAX_BODY_BYTES,
      }).map((c): [string, ErrorClass] => ['TenancyService (connect-node)', c]),
      ['RoleService', {
        name: 'already_exists',
        call: () => crud('/roles', '/authz.v1.RoleService/CreateRole', CreateRoleRequestSchema, { scopeId: ids.root, key: 'reader', name: 'Reader' }, auth(TEST_BOOTSTRAP_KEY)),
        expect: { code: 'AlreadyExists', reason: 'ALREADY_EXISTS', field: 'key' },
      }],
      ['MembershipService', {
        name: 'a missing reference',
        call: () => crud('/memberships', '/authz.v1.MembershipService/CreateMembership', CreateMembershipRequestSchema, { subjectId: 'subject_nowhere', scopeId: ids.root }, auth(TEST_BOOTSTRAP_KEY)),
        expect: { code: 'FailedPrecondition', reason: 'MISSING_REFERENCE', field: 'subjectId' },
      }],
      ['TenancyService', {
        name: 'no API key',
        call: () => crud('/tenants', '/authz.v1.TenancyService/CreateTenant', CreateTenantRequestSchema, { name: 'nobody' }, {}),
        expect: { code: 'Unauthenticated', reason: 'UNAUTHENTICATED' },
      }],
      ['RoleService', {
        name: 'a key below the method\'s tier',
        call: () => crud('/roles', '/authz.v1.RoleService/CreateRole', CreateRoleRequestSchema, { scopeId: ids.root, key: 'writer', name: 'Writer' }, auth(keys.service)),
        expect: { code: 'PermissionDenied', reason: 'TIER' },
      }],
    ];
    for (const [where, c] of classes) {
      it(`${where}: ${c.name}`, async () => {
        expect(await errorClassOn(cp.url, c)).toEqual(expectedOutcomes(c));
      });
    }
  });

  it('counts lean calls in the RPC metrics', async () => {
    await as(keys.service, 'POST', '/evaluate', read());
    await as(keys.user, 'POST', '/evaluate', read());
    const text = await (await fetch(`${cp.url}/metrics`)).text();
    const count = (code: string) => Number(new RegExp(`authz_rpc_requests_total\\{service="authz.v1.DecisionService",method="Evaluate",code="${code}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    expect(count('ok')).toBeGreaterThan(0);
    expect(count('permission_denied')).toBeGreaterThan(0);
    expect(count('unauthenticated')).toBeGreaterThan(0);
    expect(text).toMatch(/authz_api_key_cache_total\{result="hit"\} [1-9]/);
  });

  describe('byte for byte as connect-node', () => {
    const evaluateBody = () => read({ resource: { resourceId: ids.doc1 } });
    /**
     * Status, headers and body of a HTTP/1.1 call. Not compared: date and connection, and how the
     * body is framed (the lean path knows its length, connect-node streams gRPC-Web chunked). The
     * lean path never compresses an answer (a loopback sidecar gains nothing from it, and gzip of
     * a large batch would hold the event loop), so the calls accept only identity.
     */
    async function h1(base: string, path: string, headers: Record<string, string>, body: string | Uint8Array) {
      const res = await fetch(base + path, { method: 'POST', headers: { 'accept-encoding': 'identity', 'grpc-accept-encoding': 'identity', ...headers }, body });
      const h: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) h[k] = v;
      });
      return { status: res.status, headers: h, body: Buffer.from(await res.arrayBuffer()).toString('base64') };
    }
    /** Headers, body and trailers of a gRPC call. */
    function grpc(base: string, method: string, message: Uint8Array, headers: Record<string, string>, flags = 0) {
      return new Promise<{ headers: Record<string, unknown>; body: string; trailers: Record<string, unknown> }>((resolve, reject) => {
        const session = http2.connect(base);
        session.on('error', reject);
        const framed = envelope(message, flags);
        const req = session.request({ ':method': 'POST', ':path': `/authz.v1.DecisionService/${method}`, 'content-type': 'application/grpc', te: 'trailers', ...headers });
        let got: Record<string, unknown> = {};
        let trailers: Record<string, unknown> = {};
        const chunks: Buffer[] = [];
        req.on('response', (h) => (got = { ...h }));
        req.on('trailers', (t) => (trailers = { ...t }));
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          session.close();
          delete got.date;
          resolve({ headers: got, body: Buffer.concat(chunks).toString('base64'), trailers });
        });
        req.on('error', reject);
        req.end(framed);
      });
    }
    const json = { 'content-type': 'application/json' };
    const grpcWeb = { 'content-type': 'application/grpc-web', 'x-grpc-web': '1' };
    /** Explained decisions of every kind here: a role allow, a policy deny (with its policy), a no match. */
    const explainedBatch = () => ({
      requests: [
        read({ explain: true }),
        read({ explain: true, action: 'delete', resource: { resourceId: ids.doc1 } }),
        read({ explain: true, actor: { subjectId: ids.bob }, context: { nested: { list: [1, 'two', null, true] } } }),
      ],
    });
    const calls: [string, () => [string, Record<string, string>, string | Uint8Array]][] = [
      ['REST allow', () => ['/evaluate', { ...json, ...auth(keys.service) }, JSON.stringify(evaluateBody())]],
      ['REST explain', () => ['/evaluate', { ...json, ...auth(keys.service) }, JSON.stringify(read({ explain: true, context: { time: '2026-01-01T00:00:00Z' } }))]],
      ['REST batch', () => ['/evaluate/batch', { ...json, ...auth(keys.service) }, JSON.stringify({ requests: [read(), evaluateBody()] })]],
      ['REST missing key', () => ['/evaluate', json, JSON.stringify(read())]],
      ['REST user key', () => ['/evaluate', { ...json, ...auth(keys.user) }, JSON.stringify(read())]],
      ['REST bad field', () => ['/evaluate', { ...json, ...auth(keys.service) }, JSON.stringify({ ...read(), bogus: 1 })]],
      ['REST other tenant', () => ['/evaluate', { ...json, ...auth(keys.service) }, JSON.stringify(read({ scopeId: ids.otherRoot }))]],
      ['Connect JSON allow', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service) }, JSON.stringify(evaluateBody())]],
      ['Connect JSON missing key', () => ['/authz.v1.DecisionService/Evaluate', json, JSON.stringify(read())]],
      ['Connect JSON user key', () => ['/authz.v1.DecisionService/EvaluateBatch', { ...json, ...auth(keys.user) }, JSON.stringify({ requests: [read()] })]],
      ['Connect JSON effective', () => ['/authz.v1.DecisionService/GetEffectivePermissions', { ...json, ...auth(keys.service) }, JSON.stringify({ subjectId: ids.alice, scopeId: ids.root })]],
      ['Connect binary allow', () => ['/authz.v1.DecisionService/Evaluate', { 'content-type': 'application/proto', ...auth(keys.service) }, toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never))]],
      ['Connect binary revoked', () => ['/authz.v1.DecisionService/Evaluate', { 'content-type': 'application/proto', ...auth(keys.revoked) }, toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, read() as never))]],
      ['Connect JSON explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { ...json, ...auth(keys.service) }, JSON.stringify(explainedBatch())]],
      ['Connect binary explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { 'content-type': 'application/proto', ...auth(keys.service) }, toBinary(EvaluateBatchRequestSchema, create(EvaluateBatchRequestSchema, explainedBatch() as never))]],
      ['gRPC-Web allow', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service) }, envelope(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never)))]],
      ['gRPC-Web explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { ...grpcWeb, ...auth(keys.service) }, envelope(toBinary(EvaluateBatchRequestSchema, create(EvaluateBatchRequestSchema, explainedBatch() as never)))]],
      ['gRPC-Web JSON explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { 'content-type': 'application/grpc-web+json', 'x-grpc-web': '1', ...auth(keys.service) }, envelope(Buffer.from(JSON.stringify(explainedBatch())))]],
      ['gRPC-Web effective', () => ['/authz.v1.DecisionService/GetEffectivePermissions', { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', ...auth(keys.service) }, envelope(toBinary(GetEffectivePermissionsRequestSchema, create(GetEffectivePermissionsRequestSchema, { subjectId: ids.alice, scopeId: ids.root })))]],
      ['gRPC-Web missing key', () => ['/authz.v1.DecisionService/Evaluate', grpcWeb, envelope(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, read() as never)))]],
      ['gRPC-Web other tenant', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service) }, envelope(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, read({ scopeId: ids.otherRoot }) as never)))]],
      ['gRPC-Web JSON bad field', () => ['/authz.v1.DecisionService/Evaluate', { 'content-type': 'application/grpc-web+json', 'x-grpc-web': '1', ...auth(keys.service) }, envelope(Buffer.from(JSON.stringify({ ...read(), bogus: 1 })))]],
      // Compressed requests (connect-node accepts gzip and br).
      ['gzip Connect JSON explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, gzipSync(JSON.stringify(explainedBatch()))]],
      ['gzip REST explained batch', () => ['/evaluate/batch', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, gzipSync(JSON.stringify(explainedBatch()))]],
      ['br Connect binary allow', () => ['/authz.v1.DecisionService/Evaluate', { 'content-type': 'application/proto', ...auth(keys.service), 'content-encoding': 'br' }, brotliCompressSync(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never)))]],
      ['gzip Connect JSON missing key', () => ['/authz.v1.DecisionService/Evaluate', { ...json, 'content-encoding': 'gzip' }, gzipSync(JSON.stringify(read()))]],
      ['gzip Connect JSON bad field', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, gzipSync(JSON.stringify({ ...read(), bogus: 1 }))]],
      ['gzip Connect JSON not gzip', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, 'not gzip at all']],
      ['gzip Connect JSON empty body', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, '']],
      ['gzip Connect JSON over the limit once inflated', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1, 0x20))]],
      ['deflate Connect JSON (not accepted)', () => ['/authz.v1.DecisionService/Evaluate', { ...json, ...auth(keys.service), 'content-encoding': 'deflate' }, deflateSync(JSON.stringify(read()))]],
      ['gzip gRPC-Web explained batch', () => ['/authz.v1.DecisionService/EvaluateBatch', { ...grpcWeb, ...auth(keys.service), 'grpc-encoding': 'gzip' }, envelope(gzipSync(toBinary(EvaluateBatchRequestSchema, create(EvaluateBatchRequestSchema, explainedBatch() as never))), 1)]],
      ['gzip gRPC-Web uncompressed message', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service), 'grpc-encoding': 'gzip' }, envelope(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never)))]],
      ['gRPC-Web compressed message without grpc-encoding', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service) }, envelope(gzipSync(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never))), 1)]],
      ['gzip gRPC-Web not gzip', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service), 'grpc-encoding': 'gzip' }, envelope(Buffer.from('not gzip'), 1)]],
      ['gzip gRPC-Web over the limit once inflated', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service), 'grpc-encoding': 'gzip' }, envelope(gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1, 0)), 1)]],
      ['gRPC-Web two messages', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service) }, Buffer.concat([0, 0].map(() => envelope(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never)))))]],
      ['gzip gRPC-Web two compressed messages', () => ['/authz.v1.DecisionService/Evaluate', { ...grpcWeb, ...auth(keys.service), 'grpc-encoding': 'gzip' }, Buffer.concat([0, 0].map(() => envelope(gzipSync(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never))), 1)))]],
      ['br gRPC-Web JSON bad field', () => ['/authz.v1.DecisionService/Evaluate', { 'content-type': 'application/grpc-web+json', 'x-grpc-web': '1', ...auth(keys.service), 'grpc-encoding': 'br' }, envelope(brotliCompressSync(JSON.stringify({ ...read(), bogus: 1 })), 1)]],
    ];
    // The listings: pages with and without a cursor, the last (empty) page, explained grants.
    const subjectsBody = (extra: Record<string, unknown> = {}) => ({ scopeId: ids.root, action: 'read', resource: { resourceId: ids.doc1 }, ...extra });
    const resourcesBody = (extra: Record<string, unknown> = {}) => ({ actor: { subjectId: ids.alice }, scopeId: ids.root, action: 'read', ...extra });
    /** The cursor of a first page of one (the listing's own, the same at both processes). */
    const cursorOf = async (path: string, body: unknown) =>
      (await fetch(cp.url + path, { method: 'POST', headers: { ...json, ...auth(keys.service) }, body: JSON.stringify(body) })).headers.get('x-next-cursor') ?? '';
    const subjectsBinary = (extra: Record<string, unknown> = {}) => toBinary(LookupSubjectsRequestSchema, create(LookupSubjectsRequestSchema, subjectsBody(extra) as never));
    const resourcesBinary = (extra: Record<string, unknown> = {}) => toBinary(LookupResourcesRequestSchema, create(LookupResourcesRequestSchema, resourcesBody(extra) as never));
    const SUBJECTS = '/authz.v1.DecisionService/LookupSubjects';
    const RESOURCES = '/authz.v1.DecisionService/LookupResources';
    const listingCalls: [string, () => Promise<[string, Record<string, string>, string | Uint8Array]>][] = [
      ['REST subjects explained', async () => ['/lookup/subjects', { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ explain: true }))]],
      ['REST subjects, a first page with a cursor', async () => ['/lookup/subjects', { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ pageSize: 1 }))]],
      ['REST subjects, the last page', async () => ['/lookup/subjects', { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ pageSize: 1, cursor: await cursorOf('/lookup/subjects', subjectsBody({ pageSize: 1 })) }))]],
      ['REST subjects, an unknown resource (empty)', async () => ['/lookup/subjects', { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ resource: { resourceId: 'resource_nowhere' } }))]],
      ['REST resources', async () => ['/lookup/resources', { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody())]],
      ['REST resources, none', async () => ['/lookup/resources', { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody({ actor: { subjectId: ids.bob } }))]],
      ['REST bad page size', async () => ['/lookup/subjects', { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ pageSize: 1001 }))]],
      ['REST a cursor of another listing', async () => ['/lookup/resources', { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody({ cursor: await cursorOf('/lookup/subjects', subjectsBody({ pageSize: 1 })) }))]],
      ['REST user key', async () => ['/lookup/subjects', { ...json, ...auth(keys.user) }, JSON.stringify(subjectsBody())]],
      ['gzip REST subjects explained', async () => ['/lookup/subjects', { ...json, ...auth(keys.service), 'content-encoding': 'gzip' }, gzipSync(JSON.stringify(subjectsBody({ explain: true })))]],
      ['Connect JSON subjects explained', async () => [SUBJECTS, { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ explain: true }))]],
      ['Connect JSON subjects, proto names and an int32 as a string', async () => [SUBJECTS, { ...json, ...auth(keys.service) }, JSON.stringify({ scope_id: ids.root, action: 'read', page_size: '1', subject_type: 'user' })]],
      ['Connect JSON resources, the last page', async () => [RESOURCES, { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody({ cursor: await cursorOf('/lookup/resources', resourcesBody({ pageSize: 1 })), pageSize: 1 }))]],
      ['Connect JSON context too deep', async () => [SUBJECTS, { ...json, ...auth(keys.service) }, JSON.stringify(subjectsBody({ context: JSON.parse(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`) as unknown }))]],
      ['Connect JSON a NUL byte in the context', async () => [RESOURCES, { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody({ context: { 'k\u0000': 1 } }))]],
      ['Connect JSON another tenant', async () => [RESOURCES, { ...json, ...auth(keys.service) }, JSON.stringify(resourcesBody({ scopeId: ids.otherRoot }))]],
      ['Connect binary subjects explained', async () => [SUBJECTS, { 'content-type': 'application/proto', ...auth(keys.service) }, subjectsBinary({ explain: true })]],
      ['Connect binary resources with a cursor', async () => [RESOURCES, { 'content-type': 'application/proto', ...auth(keys.service) }, resourcesBinary({ pageSize: 1 })]],
      ['gRPC-Web subjects explained', async () => [SUBJECTS, { ...grpcWeb, ...auth(keys.service) }, envelope(subjectsBinary({ explain: true, pageSize: 1 }))]],
      ['gRPC-Web JSON resources', async () => [RESOURCES, { 'content-type': 'application/grpc-web+json', 'x-grpc-web': '1', ...auth(keys.service) }, envelope(Buffer.from(JSON.stringify(resourcesBody())))]],
      ['gRPC-Web bad cursor', async () => [SUBJECTS, { ...grpcWeb, ...auth(keys.service) }, envelope(subjectsBinary({ cursor: 'not a cursor' }))]],
    ];
    for (const [name, call] of listingCalls) {
      it(`listing: ${name}`, async ({ skip }) => {
        if (!plain) return skip();
        const [path, headers, body] = await call();
        const [lean, reference] = [await h1(cp.url, path, headers, body), await h1(plain.server.url, path, headers, body)];
        expect(lean).toEqual(reference);
      });
    }
    for (const [name, call] of calls) {
      it(name, async ({ skip }) => {
        if (!plain) return skip();
        const [path, headers, body] = call();
        const [lean, reference] = [await h1(cp.url, path, headers, body), await h1(plain.server.url, path, headers, body)];
        expect(lean).toEqual(reference);
      });
    }
    const grpcCalls: [string, () => [string, Uint8Array, Record<string, string>, number?]][] = [
      ['gRPC allow', () => ['Evaluate', toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never)), auth(keys.service)]],
      ['gRPC missing key', () => ['Evaluate', toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, read() as never)), {}]],
      ['gRPC user key', () => ['Evaluate', toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, read() as never)), auth(keys.user)]],
      ['gRPC effective', () => ['GetEffectivePermissions', toBinary(GetEffectivePermissionsRequestSchema, create(GetEffectivePermissionsRequestSchema, { subjectId: ids.alice, scopeId: ids.root })), auth(keys.service)]],
      ['gzip gRPC allow', () => ['Evaluate', gzipSync(toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, evaluateBody() as never))), { ...auth(keys.service), 'grpc-encoding': 'gzip' }, 1]],
      ['gzip gRPC explained batch', () => ['EvaluateBatch', gzipSync(toBinary(EvaluateBatchRequestSchema, create(EvaluateBatchRequestSchema, explainedBatch() as never))), { ...auth(keys.service), 'grpc-encoding': 'gzip' }, 1]],
      ['gzip gRPC not gzip', () => ['Evaluate', Buffer.from('not gzip'), { ...auth(keys.service), 'grpc-encoding': 'gzip' }, 1]],
      ['gRPC subjects explained', () => ['LookupSubjects', subjectsBinary({ explain: true }), auth(keys.service)]],
      ['gRPC subjects with a cursor', () => ['LookupSubjects', subjectsBinary({ pageSize: 1 }), auth(keys.service)]],
      ['gRPC resources', () => ['LookupResources', resourcesBinary(), auth(keys.service)]],
      ['gRPC resources, a bad page size', () => ['LookupResources', resourcesBinary({ pageSize: -1 }), auth(keys.service)]],
    ];
    for (const [name, call] of grpcCalls) {
      it(name, async ({ skip }) => {
        if (!plain) return skip();
        const [method, message, headers, flags] = call();
        // The lean path never compresses an answer (see h1); connect-node does for a client that accepts it.
        const h = { 'grpc-accept-encoding': 'identity', ...headers };
        expect(await grpc(cp.url, method, message, h, flags)).toEqual(await grpc(plain.server.url, method, message, h, flags));
      });
    }
  });
});
