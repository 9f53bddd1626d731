/**
 * OpenTelemetry tracing as it runs in production: a control plane (exporting OTLP/HTTP JSON) and
 * a sidecar (OTLP/HTTP protobuf, the default) as real processes, with a local OTLP receiver. A
 * request carrying a W3C `traceparent` gives a server span in the caller's trace, the child of
 * the caller's span, on every surface: the lean decision path, connect-node, the REST gateway.
 */
import * as http2 from 'node:http2';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, toBinary } from '@bufbuild/protobuf';
import { EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { createScratchDatabase } from '../databases.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../otlp-receiver.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { evaluateOn } from '../conformance/surfaces.js';

const BOOTSTRAP = 'azk_tracing_bootstrap_0123456789abcdefghijkl';

async function call(base: string, method: string, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A caller's span: a fresh span id in one trace of the test. */
const traceId = randomBytes(16).toString('hex');
const parent = () => randomBytes(8).toString('hex');
const traceparent = (spanId: string) => `00-${traceId}-${spanId}-01`;

/** gRPC Evaluate over a raw HTTP/2 stream (the lean path takes it); resolves with grpc-status. */
function grpcEvaluate(base: string, request: Parameters<typeof create<typeof EvaluateRequestSchema>>[1], headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base);
    session.on('error', reject);
    const message = toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, request));
    const framed = Buffer.alloc(5 + message.length);
    framed.writeUInt32BE(message.length, 1);
    framed.set(message, 5);
    const req = session.request({ ':method': 'POST', ':path': '/authz.v1.DecisionService/Evaluate', 'content-type': 'application/grpc', te: 'trailers', ...headers });
    req.on('data', () => undefined);
    req.on('trailers', (t) => {
      session.close();
      resolve(String(t['grpc-status']));
    });
    req.on('error', reject);
    req.end(framed);
  });
}

describe('tracing over OTLP, control plane and sidecar as real processes', () => {
  let receiver: OtlpReceiver;
  let cp: RunningProcess;
  let sidecar: RunningProcess;
  let drop = async () => {};
  const w = {} as { tenantId: string; scopeId: string; subjectId: string; resourceId: string; serviceKey: string; userKey: string };

  /** The spans of the test's trace whose parent is `spanId` (waits for the batch exporters). */
  async function childrenOf(spanId: string, count = 1): Promise<ReceivedSpan[]> {
    const end = Date.now() + 15_000;
    for (;;) {
      const found = receiver.spans.filter((s) => s.traceId === traceId && s.parentSpanId === spanId);
      if (found.length >= count || Date.now() > end) return found;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' };
    const env: Record<string, string> = { ...otel, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_DATA_DIR: 'memory://' };
    if (process.env.DATABASE_URL) {
      const scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_tracing');
      env.DATABASE_URL = scratch.url;
      drop = scratch.drop;
    }
    cp = await startProcess('control-plane', env);
    const k = { 'x-api-key': BOOTSTRAP };
    const tenant = (await call(cp.url, 'POST', '/tenants', { name: 'traced' }, k)).body;
    w.tenantId = tenant.id;
    w.scopeId = tenant.scopeId;
    w.subjectId = (await call(cp.url, 'POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }, k)).body.id;
    const role = (await call(cp.url, 'POST', '/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' }, k)).body;
    const perm = (await call(cp.url, 'POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }, k)).body;
    await call(cp.url, 'POST', '/role-permissions', { roleId: role.id, permissionId: perm.id }, k);
    const m = (await call(cp.url, 'POST', '/memberships', { subjectId: w.subjectId, scopeId: w.scopeId }, k)).body;
    await call(cp.url, 'POST', '/role-assignments', { membershipId: m.id, roleId: role.id }, k);
    const type = (await call(cp.url, 'POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: w.scopeId }, k)).body;
    w.resourceId = (await call(cp.url, 'POST', '/resources', { resourceTypeId: type.id, ownerScopeId: w.scopeId, externalResourceId: 'doc-1' }, k)).body.id;
    w.serviceKey = (await call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }, k)).body.secretKey;
    w.userKey = (await call(cp.url, 'POST', '/api-keys', { name: 'user', kind: 'user', tenantId: w.tenantId }, k)).body.secretKey;
    sidecar = await startProcess('sidecar', {
      ...otel, SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0',
    });
    await waitFor200(`${sidecar.url}/readyz`);
  }, 60_000);
  afterAll(async () => {
    await sidecar?.stop();
    await cp?.stop();
    await receiver?.close();
    await drop();
  });

  const evaluate = () => ({ actor: { subjectId: w.subjectId }, scopeId: w.scopeId, action: 'read', resource: { resourceId: w.resourceId } });
  const decisionSpan = (surface: string, service = 'control-plane') => ({
    service, name: 'authz.v1.DecisionService/Evaluate', kind: 2, encoding: service === 'sidecar' ? 'protobuf' : 'json',
    attributes: expect.objectContaining({
      'rpc.service': 'authz.v1.DecisionService', 'rpc.method': 'Evaluate', 'rpc.status_code': 'OK', 'authz.surface': surface, 'authz.tenant_id': w.tenantId,
    }),
  });

  it('the control plane\'s lean path: REST, Connect JSON and gRPC, each a child of the caller\'s span', async () => {
    const [rest, connect, grpc] = [parent(), parent(), parent()];
    expect((await call(cp.url, 'POST', '/evaluate', evaluate(), { 'x-api-key': w.serviceKey, traceparent: traceparent(rest) })).body.allowed).toBe(true);
    expect((await call(cp.url, 'POST', '/authz.v1.DecisionService/Evaluate', evaluate(), { 'x-api-key': w.serviceKey, traceparent: traceparent(connect) })).body.allowed).toBe(true);
    expect(await grpcEvaluate(cp.url, evaluate(), { 'x-api-key': w.serviceKey, traceparent: traceparent(grpc) })).toBe('0');
    expect(await childrenOf(rest)).toEqual([expect.objectContaining({ ...decisionSpan('rest'), attributes: expect.objectContaining({ 'rpc.system': 'connect_rpc' }) })]);
    expect(await childrenOf(connect)).toEqual([expect.objectContaining(decisionSpan('connect'))]);
    expect(await childrenOf(grpc)).toEqual([expect.objectContaining({ ...decisionSpan('grpc'), attributes: expect.objectContaining({ 'rpc.system': 'grpc', 'rpc.grpc.status_code': 0 }) })]);
  });

  it('connect-node and the REST gateway: gRPC-Web, and a management call with the key\'s tenant', async () => {
    const [web, rest] = [parent(), parent()];
    expect(await evaluateOn('grpc-web', cp.url, evaluate(), { 'x-api-key': w.serviceKey, traceparent: traceparent(web) })).toMatchObject({ ok: { allowed: true } });
    expect((await call(cp.url, 'GET', `/tenants/${w.tenantId}`, undefined, { 'x-api-key': w.userKey, traceparent: traceparent(rest) })).status).toBe(200);
    expect(await childrenOf(web)).toEqual([expect.objectContaining({ ...decisionSpan('grpc-web'), attributes: expect.objectContaining({ 'rpc.system': 'grpc' }) })]);
    expect(await childrenOf(rest)).toEqual([expect.objectContaining({
      service: 'control-plane', name: 'authz.v1.TenancyService/GetTenant', kind: 2,
      attributes: expect.objectContaining({ 'rpc.method': 'GetTenant', 'authz.surface': 'rest', 'rpc.status_code': 'OK', 'authz.tenant_id': w.tenantId }),
    })]);
  });

  it('a failed call carries its code; a server fault marks the span an error, a refusal does not', async () => {
    const [denied, stale] = [parent(), parent()];
    expect((await call(cp.url, 'POST', '/evaluate', evaluate(), { 'x-api-key': 'azk_not_a_key_at_all_0123456789abcdefghijklmn', traceparent: traceparent(denied) })).status).toBe(401);
    const far = { ...evaluate(), consistency: { minRevision: 1_000_000 } };
    expect((await call(sidecar.url, 'POST', '/evaluate', far, { traceparent: traceparent(stale) })).status).toBe(503);
    expect(await childrenOf(denied)).toEqual([expect.objectContaining({
      statusCode: 0, attributes: expect.objectContaining({ 'rpc.status_code': 'UNAUTHENTICATED', 'rpc.connect_rpc.error_code': 'unauthenticated' }),
    })]);
    expect(await childrenOf(stale)).toEqual([expect.objectContaining({
      service: 'sidecar', statusCode: 2, attributes: expect.objectContaining({ 'rpc.status_code': 'UNAVAILABLE' }),
    })]);
  });

  it('the sidecar: its lean path and its REST gateway, exported as protobuf', async () => {
    const [rest, grpc, effective] = [parent(), parent(), parent()];
    expect((await call(sidecar.url, 'POST', '/evaluate', evaluate(), { traceparent: traceparent(rest) })).body.allowed).toBe(true);
    expect(await grpcEvaluate(sidecar.url, evaluate(), { traceparent: traceparent(grpc) })).toBe('0');
    const res = await fetch(`${sidecar.url}/effective-permissions?subjectId=${w.subjectId}&scopeId=${w.scopeId}`, { headers: { traceparent: traceparent(effective) } });
    expect(res.status).toBe(200);
    expect(await childrenOf(rest)).toEqual([expect.objectContaining(decisionSpan('rest', 'sidecar'))]);
    expect(await childrenOf(grpc)).toEqual([expect.objectContaining(decisionSpan('grpc', 'sidecar'))]);
    expect(await childrenOf(effective)).toEqual([expect.objectContaining({
      service: 'sidecar', name: 'authz.v1.DecisionService/GetEffectivePermissions', kind: 2,
      attributes: expect.objectContaining({ 'authz.surface': 'rest', 'authz.tenant_id': w.tenantId, 'rpc.status_code': 'OK' }),
    })]);
  });

  it('a request without a traceparent starts a trace of its own', async () => {
    const before = receiver.spans.length;
    const body = (await call(sidecar.url, 'POST', '/evaluate', { ...evaluate(), action: 'untraced' }, {})).body;
    expect(body.allowed).toBe(false);
    const end = Date.now() + 15_000;
    let mine: ReceivedSpan | undefined;
    while (!mine && Date.now() < end) {
      mine = receiver.spans.slice(before).find((s) => s.service === 'sidecar' && s.name === 'authz.v1.DecisionService/Evaluate' && s.traceId !== traceId);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(mine).toMatchObject({ parentSpanId: '', kind: 2 });
    expect(mine!.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});
