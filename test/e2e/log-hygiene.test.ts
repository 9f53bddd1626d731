/**
 * Log hygiene: a full run of real processes at debug level (a control plane on PostgreSQL
 * through a role with a password, key creation, a sidecar with its key and a decision log on
 * stdout, a sidecar with a refused key, bad requests of every kind, a start that fails on the
 * database), and then every secret the run used is looked for in everything both processes
 * printed: API-key secrets, keys that never existed, and the database password.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase } from '../databases.js';
import { startProcess, waitFor200, type RunningProcess } from '../processes.js';

const admin = process.env.DATABASE_URL;

async function sql(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

async function call(base: string, method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, {
    method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A gRPC call with `headers` on a raw HTTP/2 stream; resolves with grpc-status. */
function grpcStatus(base: string, path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    req.on('data', () => undefined);
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) {
        session.close();
        resolve(String(h['grpc-status']));
      }
    });
    req.on('trailers', (t) => {
      session.close();
      resolve(String(t['grpc-status']));
    });
    req.on('error', reject);
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

/** Raw bytes on a TCP connection (for requests no HTTP client would send); resolves with the answer. */
function raw(base: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(bytes));
    let answer = '';
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(!admin)('log hygiene on PostgreSQL: no secret in the logs of a full run', () => {
  const role = `authz_log_test_${randomBytes(4).toString('hex')}`;
  // What a password manager would make: letters, digits and URL-safe punctuation.
  const password = `Pw-${randomBytes(18).toString('base64url')}`;
  const bootstrap = `azk_${randomBytes(32).toString('base64url')}`;
  const madeUp = `azk_${randomBytes(32).toString('base64url')}`;
  const refusedSidecarKey = `azk_${randomBytes(32).toString('base64url')}`;
  const otlpToken = `otlp-${randomBytes(24).toString('hex')}`;
  const secrets: Record<string, string> = { password, bootstrap, madeUp, refusedSidecarKey, otlpToken };
  let scratch: { url: string; drop: () => Promise<void> };
  let databaseUrl: string;
  const outputs: { name: string; lines: string[] }[] = [];
  const running: RunningProcess[] = [];
  const track = (name: string, p: RunningProcess) => (outputs.push({ name, lines: p.output }), running.push(p), p);

  beforeAll(async () => {
    // Empty (not the run's migrated copy): the role it is handed to migrates it, so owns its tables.
    scratch = await createScratchDatabase(admin!, 'authz_log_hygiene', 'template template1');
    await sql(admin!, `create role ${role} login password '${password}'`);
    await sql(admin!, `alter database ${new URL(scratch.url).pathname.slice(1)} owner to ${role}`);
    const u = new URL(scratch.url);
    u.username = role;
    u.password = password;
    databaseUrl = u.toString();
  });
  afterAll(async () => {
    for (const p of running) await p.stop().catch(() => undefined);
    await scratch?.drop();
    await sql(admin!, `drop role if exists ${role}`).catch(() => undefined);
  });

  it('a control plane, two sidecars and bad requests at debug level print no secret', async () => {
    const cp = track('control plane', await startProcess('control-plane', {
      DATABASE_URL: databaseUrl, SERVICE_BOOTSTRAP_API_KEY: bootstrap, SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'debug',
      // Tracing to a collector that is not there, with a credential: its failures are logged.
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${otlpToken}`, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '300',
    }));
    const k = { 'x-api-key': bootstrap };
    const tenant = (await call(cp.url, 'POST', '/tenants', { name: 'hygiene' }, k)).body;
    const subject = (await call(cp.url, 'POST', '/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' }, k)).body;
    const role = (await call(cp.url, 'POST', '/roles', { scopeId: tenant.scopeId, key: 'reader', name: 'Reader' }, k)).body;
    const perm = (await call(cp.url, 'POST', '/permissions', { scopeId: tenant.scopeId, action: 'read', resourceType: 'doc', resourcePattern: '*' }, k)).body;
    await call(cp.url, 'POST', '/role-permissions', { roleId: role.id, permissionId: perm.id }, k);
    const m = (await call(cp.url, 'POST', '/memberships', { subjectId: subject.id, scopeId: tenant.scopeId }, k)).body;
    await call(cp.url, 'POST', '/role-assignments', { membershipId: m.id, roleId: role.id }, k);
    const service = (await call(cp.url, 'POST', '/api-keys', { name: 'sidecar', kind: 'service', tenantId: tenant.id }, k)).body;
    const user = (await call(cp.url, 'POST', '/api-keys', { name: 'user', kind: 'user', tenantId: tenant.id }, k)).body;
    expect(service.secretKey).toMatch(/^azk_/);
    secrets.service = service.secretKey;
    secrets.user = user.secretKey;
    const ask = { actor: { subjectId: subject.id }, scopeId: tenant.scopeId, action: 'read' };

    const sidecar = track('sidecar', await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: service.secretKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: '0',
      SIDECAR_LOG_LEVEL: 'debug', SIDECAR_DECISION_LOG: 'stdout',
    }));
    await waitFor200(`${sidecar.url}/readyz`);
    const refused = track('refused sidecar', await startProcess('sidecar', {
      SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: refusedSidecarKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'debug',
    }));

    // Decisions, and every kind of bad request, with real and made-up secrets.
    expect((await call(cp.url, 'POST', '/evaluate', ask, { 'x-api-key': service.secretKey })).body.allowed).toBe(true);
    expect((await call(sidecar.url, 'POST', '/evaluate', ask)).body.allowed).toBe(true);
    expect((await call(sidecar.url, 'POST', '/evaluate/batch', { requests: [ask, { ...ask, action: 'write' }] })).status).toBe(200);
    const bad: [string, string, string, unknown, Record<string, string>, number][] = [
      [cp.url, 'POST', '/evaluate', ask, { 'x-api-key': madeUp }, 401],
      [cp.url, 'GET', '/tenants', undefined, { authorization: `Bearer ${madeUp}` }, 401],
      [cp.url, 'GET', '/tenants', undefined, { authorization: `Basic ${user.secretKey}` }, 401],
      [cp.url, 'POST', '/evaluate', ask, { 'x-api-key': service.secretKey, authorization: `Bearer ${user.secretKey}` }, 401],
      [cp.url, 'POST', '/evaluate', ask, { 'x-api-key': user.secretKey }, 403],
      [cp.url, 'POST', '/tenants', '{"name": ', { 'x-api-key': bootstrap }, 400],
      [cp.url, 'POST', '/tenants', { name: 'x', secret: bootstrap }, { 'x-api-key': bootstrap }, 400],
      [cp.url, 'POST', '/api-keys', { name: bootstrap, kind: 'nope', tenantId: tenant.id }, { 'x-api-key': bootstrap }, 400],
      [cp.url, 'POST', '/evaluate', { ...ask, scopeId: madeUp }, { 'x-api-key': service.secretKey }, 404],
      [sidecar.url, 'POST', '/evaluate', '{"actor":', {}, 400],
      [sidecar.url, 'POST', '/evaluate', { ...ask, scopeId: 'scope_elsewhere' }, { 'x-api-key': madeUp }, 403],
    ];
    for (const [base, method, path, body, headers, status] of bad) {
      expect((await call(base, method, path, body, headers)).status, `${method} ${path}`).toBe(status);
    }
    expect((await call(cp.url, 'POST', '/evaluate', 'x'.repeat(5 * 1024 * 1024), { 'x-api-key': service.secretKey })).status).toBe(429);
    // Malformed HTTP carrying a key: the parser's error holds the raw request (logged at debug).
    for (const base of [cp.url, sidecar.url]) {
      expect(await raw(base, `POST /evaluate HTTP/1.1\r\nhost: x\r\nx-api-key: ${service.secretKey}\r\nbad header\r\n\r\n`)).toMatch(/^HTTP\/1.1 400/);
      expect(await raw(base, `GET /tenants HTTP/1.1\r\nauthorization: Bearer ${bootstrap}\r\nx-pad: ${'p'.repeat(20_000)}\r\n\r\n`)).toMatch(/^HTTP\/1.1 431/);
    }
    expect(await grpcStatus(cp.url, '/authz.v1.TenancyService/ListTenants', { 'x-api-key': madeUp })).toBe('16');
    expect(await grpcStatus(cp.url, '/authz.v1.SnapshotService/Watch', { authorization: `Bearer ${madeUp}` })).toBe('16');
    // A revoked key.
    expect((await call(cp.url, 'DELETE', `/api-keys/${user.id}`, undefined, k)).status).toBe(200);
    expect((await call(cp.url, 'GET', `/tenants/${tenant.id}`, undefined, { 'x-api-key': user.secretKey })).status).toBe(401);
    await until(() => refused.output.some((l) => l.includes('refuses this sidecar')), 'the refused sidecar to say so');
    await until(() => cp.output.some((l) => l.includes('"component":"opentelemetry"') && l.includes('"level":40')), 'a failed span export');

    // A control plane that cannot start: the same role and password, a database that does not exist.
    const missing = new URL(databaseUrl);
    missing.pathname = '/authz_log_hygiene_missing';
    const failed = await startProcess('control-plane', { DATABASE_URL: missing.toString(), SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'debug' }).then(
      (p) => (running.push(p), 'started'),
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited \(2\) before listening/);
    expect(failed).toContain('authz_log_hygiene_missing');
    outputs.push({ name: 'failed control plane', lines: failed.split('\n') });

    for (const p of running) await p.stop();

    // Debug logs were on (the malformed requests are logged at debug), and the processes did print.
    expect(cp.output.some((l) => l.includes('"level":20'))).toBe(true);
    expect(sidecar.output.some((l) => l.includes('"level":20'))).toBe(true);
    // The decision log went to the sidecar's stdout (the control plane's is off by default).
    const decisions = (lines: string[]) => lines.filter((l) => l.startsWith('{"time"') && l.includes('"reason"'));
    expect(decisions(sidecar.output).map((l) => JSON.parse(l))).toMatchObject([
      { service: 'sidecar', method: 'Evaluate', subject: subject.id, scope: tenant.scopeId, action: 'read', allowed: true, reason: 'role', tenant: tenant.id },
      { method: 'EvaluateBatch', action: 'read', allowed: true },
      { method: 'EvaluateBatch', action: 'write', allowed: false, reason: 'no_match' },
    ]);
    expect(decisions(cp.output)).toEqual([]);

    // The point: no secret of the run, anywhere.
    for (const { name, lines } of outputs) {
      const all = lines.join('\n');
      for (const [what, secret] of Object.entries(secrets)) {
        // As text, URL-encoded, base64, and as a logged Buffer's byte list.
        for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64').slice(0, 40), Buffer.from(secret.slice(0, 16)).join(',')]) {
          expect(all.includes(form), `${what} (${form.slice(0, 12)}…) in the output of the ${name}`).toBe(false);
        }
      }
    }
  }, 120_000);
});
