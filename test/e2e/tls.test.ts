/**
 * TLS between the sidecar and the control plane, as the Kubernetes manifests run it: a real
 * control-plane process serving TLS (a CA of its own signed its certificate, as cert-manager's
 * does) answering gRPC over HTTP/2 (grpc-js), Connect over HTTP/1.1, REST and its probes on its
 * one port; real sidecar processes following it over TLS with that CA, on the main thread and on
 * the Watch thread, and answering decisions; and sidecars that cannot verify it (another CA, or
 * the default roots only), up but not ready, saying why once while they retry. On PostgreSQL
 * when DATABASE_URL is set, else on the embedded database.
 */
import { spawnSync } from 'node:child_process';
import { request } from 'node:https';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionService } from '../../gen/authz/v1/decision_service_pb.js';
import { startControlPlane } from '../../services/control-plane/app.js';
import { loadConfig } from '../../services/control-plane/config.js';
import { ConfigError } from '../../services/common/settings.js';
import { createLogger } from '../../services/transport/observability.js';
import { startSidecar } from '../../sidecar/app.js';
import { loadSidecarConfig } from '../../sidecar/config.js';
import { testCertificates, type TestCertificates } from '../certificates.js';
import { createScratchDatabase } from '../databases.js';
import { callUnary, loadGrpcJsClient } from '../interop/grpc-js-client.js';
import { freePort, startProcess, waitFor200, type RunningProcess } from '../processes.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BOOTSTRAP = 'azk_e2e_tls_bootstrap_0123456789abcdefghijklmn';
const UNTRUSTED = "the control plane's TLS certificate does not verify";

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

let certs: TestCertificates;
let stranger: TestCertificates;
let scratch: { url: string; drop: () => Promise<void> } | undefined;
let cp: RunningProcess;
const processes: RunningProcess[] = [];
const w = {} as { tenantId: string; scopeId: string; subjectId: string; resourceId: string; serviceKey: string; revision: number };

/** A REST call to the control plane over HTTPS (HTTP/1.1), verified against the test CA. */
function call(method: string, path: string, body?: unknown, key: string | null = BOOTSTRAP): Promise<Reply> {
  return new Promise((done, fail) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key) headers['x-api-key'] = key;
    const req = request(new URL(path, cp.url), { method, headers, ca: certs.ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        done({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', fail);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
async function ok(p: Promise<Reply>): Promise<Reply> {
  const r = await p;
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r;
}
const check = () => ({ actor: { subjectId: w.subjectId }, scopeId: w.scopeId, action: 'read', resource: { resourceId: w.resourceId } });

async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
async function metric(base: string, name: string): Promise<number> {
  const line = (await (await fetch(`${base}/metrics`)).text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

async function startFollower(env: Record<string, string>): Promise<RunningProcess> {
  const p = await startProcess('sidecar', {
    SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: w.serviceKey, SIDECAR_TENANT_ID: w.tenantId, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info', ...env,
  });
  processes.push(p);
  return p;
}

beforeAll(async () => {
  [certs, stranger] = await Promise.all([testCertificates(), testCertificates()]);
  const database: Record<string, string> = process.env.DATABASE_URL
    ? { DATABASE_URL: (scratch = await createScratchDatabase(process.env.DATABASE_URL, 'authz_e2e_tls')).url }
    : { SERVICE_DATA_DIR: 'memory://' };
  // A fixed (free) port: the health check reads it from the process's settings.
  cp = await startProcess('control-plane', {
    ...database, SERVICE_PORT: String(await freePort()), SERVICE_BOOTSTRAP_API_KEY: BOOTSTRAP, SERVICE_WATCH_HEARTBEAT_MS: '200', SERVICE_LOG_LEVEL: 'info',
    SERVICE_TLS_CERT_FILE: certs.certFile, SERVICE_TLS_KEY_FILE: certs.keyFile,
  });
  processes.push(cp);
  const tenant = await ok(call('POST', '/tenants', { name: 'tls' }));
  w.tenantId = tenant.body.id;
  w.scopeId = tenant.body.scopeId;
  w.subjectId = (await ok(call('POST', '/subjects', { tenantId: w.tenantId, type: 'user', externalId: 'alice' }))).body.id;
  const roleId = (await ok(call('POST', '/roles', { scopeId: w.scopeId, key: 'reader', name: 'Reader' }))).body.id;
  const permission = await ok(call('POST', '/permissions', { scopeId: w.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }));
  await ok(call('POST', '/role-permissions', { roleId, permissionId: permission.body.id }));
  const membershipId = (await ok(call('POST', '/memberships', { subjectId: w.subjectId, scopeId: w.scopeId }))).body.id;
  const type = await ok(call('POST', '/resource-types', { name: 'Document', key: 'doc', scopeId: w.scopeId }));
  w.resourceId = (await ok(call('POST', '/resources', { resourceTypeId: type.body.id, ownerScopeId: w.scopeId, externalResourceId: 'readme' }))).body.id;
  const granted = await ok(call('POST', '/role-assignments', { membershipId, roleId }));
  w.revision = Number(granted.headers['x-revision']);
  w.serviceKey = (await ok(call('POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: w.tenantId }))).body.secretKey;
}, 60_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await scratch?.drop();
  certs?.remove();
  stranger?.remove();
});

describe('a control plane serving TLS', () => {
  it('answers REST and its probes over HTTPS, and nothing in plain text', async () => {
    expect(cp.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await call('GET', '/healthz', undefined, null)).status).toBe(200);
    expect((await call('GET', '/readyz', undefined, null)).body).toEqual({ status: 'ready' });
    expect((await ok(call('POST', '/evaluate', check()))).body).toMatchObject({ allowed: true, reason: 'role' });
    await expect(fetch(cp.url.replace('https:', 'http:') + '/healthz')).rejects.toThrow();
  });

  it('answers gRPC over HTTP/2 (grpc-js, trusting the CA) and Connect over HTTP/1.1', async () => {
    const grpcClient = loadGrpcJsClient('authz.v1.DecisionService', cp.url, grpc.credentials.createSsl(Buffer.from(certs.ca)));
    try {
      const { response } = await callUnary<{ allowed: boolean }>(grpcClient, 'evaluate', check(), { 'x-api-key': BOOTSTRAP });
      expect(response.allowed).toBe(true);
    } finally {
      grpcClient.close();
    }
    const connect = createClient(DecisionService, createConnectTransport({ baseUrl: cp.url, httpVersion: '1.1', nodeOptions: { ca: certs.ca } }));
    const answer = await connect.evaluate(check(), { headers: { 'x-api-key': BOOTSTRAP } });
    expect(answer.allowed).toBe(true);
  });

  it('refuses a certificate that does not load before it touches the database, naming the setting', async () => {
    // A database nothing listens for: reaching it would fail differently.
    const config = loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/authz_unreachable', SERVICE_TLS_CERT_FILE: `${certs.dir}/missing.crt`, SERVICE_TLS_KEY_FILE: certs.keyFile }, []);
    const started = startControlPlane(config, createLogger({ logLevel: 'silent' }));
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(/^SERVICE_TLS_CERT_FILE: cannot read .*missing\.crt: ENOENT/);
  });

  it('is found healthy by the image\'s health check, over HTTPS', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', resolve(ROOT, 'cmd/healthcheck/main.ts'), '--pid', String(cp.child.pid)], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect({ code: r.status, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('sidecars following it', () => {
  it.each([
    ['on the main thread', 'off'],
    ['on the Watch thread', 'on'],
  ])('verify it with SIDECAR_CONTROL_PLANE_CA_FILE and answer decisions (%s)', async (_, thread) => {
    const sidecar = await startFollower({ SIDECAR_CONTROL_PLANE_CA_FILE: certs.caFile, SIDECAR_WATCH_THREAD: thread });
    await waitFor200(`${sidecar.url}/readyz`);
    const res = await fetch(`${sidecar.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...check(), consistency: { minRevision: w.revision } }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ allowed: true, reason: 'role' });
    expect(sidecar.output.join('\n')).not.toContain(UNTRUSTED);
  });

  it.each([
    ['another CA, on the main thread', () => ({ SIDECAR_CONTROL_PLANE_CA_FILE: stranger.caFile, SIDECAR_WATCH_THREAD: 'off' })],
    ['the default roots only, on the Watch thread', () => ({ SIDECAR_WATCH_THREAD: 'on' })],
  ])('stay up and not ready when it does not verify, saying why once while retrying (%s)', async (_, env) => {
    const sidecar = await startFollower(env());
    // Retried with backoff: several attempts, one error line.
    await until(async () => (await metric(sidecar.url, 'authz_sidecar_reconnects_total')) >= 3, 20_000, 'three attempts');
    const said = sidecar.output.filter((l) => l.includes(UNTRUSTED));
    expect(said).toHaveLength(1);
    const line = JSON.parse(said[0]);
    expect(line.level).toBe(50);
    // OpenSSL's reason and its code (which one depends on the CA's name: the same as the real one's, or not)
    expect(line.msg).toMatch(/does not verify: [a-z].* \([A-Z_]+\); /);
    expect(line.msg).toContain('SIDECAR_CONTROL_PLANE_CA_FILE');
    expect((await fetch(`${sidecar.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${sidecar.url}/readyz`)).status).toBe(503);
    const res = await fetch(`${sidecar.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(check()) });
    expect(res.status).toBe(503);
  });

  it('refuses a CA file that does not load, naming the setting', async () => {
    await expect(startFollower({ SIDECAR_CONTROL_PLANE_CA_FILE: certs.keyFile })).rejects.toThrow(/SIDECAR_CONTROL_PLANE_CA_FILE: .*tls\.key holds no PEM certificate/);
    await expect(startFollower({ SIDECAR_CONTROL_PLANE_CA_FILE: `${certs.dir}/missing.crt` })).rejects.toThrow(/SIDECAR_CONTROL_PLANE_CA_FILE: cannot read .*missing\.crt: ENOENT/);
  });
});

describe('a sidecar given a plain http:// control plane', () => {
  /** The warnings a sidecar logs at start for `url`. */
  async function warningsFor(url: string): Promise<string[]> {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, next) => (lines.push(...String(chunk).split('\n').filter(Boolean)), next()) });
    const config = loadSidecarConfig({ SIDECAR_CONTROL_PLANE_URL: url, SIDECAR_API_KEY: 'azk_x', SIDECAR_TENANT_ID: 'tenant_plain', SIDECAR_PORT: '0' }, []);
    const sidecar = await startSidecar(config, pino({ level: 'warn' }, sink));
    await sidecar.close();
    return lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40).map((l) => l.msg as string);
  }

  it('warns at start when it is another host, naming the risk; not on loopback', async () => {
    const remote = await warningsFor('http://authz-control-plane.example.invalid:8080');
    expect(remote.filter((m) => m.startsWith('SIDECAR_CONTROL_PLANE_URL is plain http://'))).toHaveLength(1);
    expect(remote.join('\n')).toMatch(/API key .* unencrypted/);
    for (const url of ['http://127.0.0.1:1', 'http://localhost:1', 'http://[::1]:1']) {
      expect((await warningsFor(url)).filter((m) => m.startsWith('SIDECAR_CONTROL_PLANE_URL'))).toEqual([]);
    }
  });
});
