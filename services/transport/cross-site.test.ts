/**
 * What a web page cannot do to a listener (cross-site.ts): name it by a host of its own (DNS
 * rebinding; the sidecar's Host allowlist), or send it a body without a CORS preflight (form
 * posts, `text/plain`; both processes). Raw HTTP/1.1 and HTTP/2 requests, so that `Host`,
 * `:authority`, the content type and the body's framing are exactly what the case says.
 * test/e2e/browser.test.ts makes the same requests from Chromium.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import type { SidecarConfig } from '../../sidecar/config.js';
import { ROOT, TENANT, ROWS, scriptedControlPlane, snapshot } from '../../test/scripted-control-plane.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../test/harness.js';
import { crossSiteBody, hostAllowlist } from './cross-site.js';
import type { NodeServerRequest } from './node-types.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An HTTP/1.1 request with exactly these headers (no Host added); `chunks` sends the body chunked. */
function h1(port: number, method: string, path: string, headers: Record<string, string>, body?: string | Buffer, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, setHost: false, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    if (body !== undefined && !chunked) req.setHeader('content-length', Buffer.byteLength(body));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** An HTTP/2 request; `:authority` is the URL's unless `headers` says otherwise. */
function h2(url: string, headers: http2.OutgoingHttpHeaders, body?: string | Buffer): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on('error', reject);
    const stream = session.request(headers, { endStream: body === undefined });
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    let text = '';
    stream.on('response', (h) => (head = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (text += c));
    stream.on('end', () => {
      session.close();
      resolve({ headers: head, trailers, body: text });
    });
    stream.on('error', (err) => {
      session.close();
      reject(err);
    });
    if (body !== undefined) stream.end(body);
  });
}

/** A gRPC frame around `message`. */
const frame = (message: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);

const ask = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', resource: { resourceType: 'doc', externalResourceId: 'doc-1' } };
const JSON_TYPE = { 'content-type': 'application/json' };

async function counter(url: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}
const decisions = (url: string) => counter(url, 'authz_decisions_total', '');
const rejected = (url: string, reason: string) => counter(url, 'authz_http_rejected_total', `reason="${reason}"`);

describe('the sidecar\'s Host allowlist', () => {
  let cp: Awaited<ReturnType<typeof scriptedControlPlane>>;
  const sidecars: Sidecar[] = [];
  async function start(over: Partial<SidecarConfig> = {}): Promise<Sidecar> {
    const s = await startSidecar({
      controlPlaneUrl: cp.server.url, apiKey: 'azk_cross_site', tenantId: TENANT, host: '127.0.0.1', port: 0,
      maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent', ...over,
    }, pino({ level: 'silent' }));
    sidecars.push(s);
    (await cp.next()).push(snapshot(3, 0, true, ROWS));
    while (!s.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
    return s;
  }
  let sidecar: Sidecar;
  beforeAll(async () => {
    cp = await scriptedControlPlane();
    sidecar = await start();
  });
  afterAll(async () => {
    for (const s of sidecars) await s.close();
    await cp?.server.close();
  });

  it('answers requests that name a loopback host, whatever the port and spelling', async () => {
    const { port } = sidecar.server;
    for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, 'LOCALHOST.:1', 'app.localhost', '127.9.8.7:80', `[::1]:${port}`, '[0:0::1]', '0x7f.1', '[::ffff:127.0.0.1]']) {
      const r = await h1(port, 'POST', '/evaluate', { host, ...JSON_TYPE }, JSON.stringify(ask));
      expect([host, r.status, JSON.parse(r.body).allowed]).toEqual([host, 200, true]);
    }
    expect(await h2(sidecar.server.url, { ':method': 'GET', ':path': '/readyz' })).toMatchObject({ headers: { ':status': 200 } });
  });

  it('refuses any other name before anything answers: 403 permission_denied on REST and Connect, PERMISSION_DENIED on gRPC', async () => {
    const { port, url } = sidecar.server;
    const before = await decisions(url);
    const refusedBefore = await rejected(url, 'host_not_allowed');
    const hosts = [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`, 'localhost.evil.example', '0.0.0.0', `[::]:${port}`, 'evil@127.0.0.1', '127.0.0.1:x', '::1', '[::1', ''];
    for (const host of hosts) {
      const r = await h1(port, 'POST', '/evaluate', { host, ...JSON_TYPE }, JSON.stringify(ask));
      expect([host, r.status]).toEqual([host, 403]);
      const body = JSON.parse(r.body);
      expect(body).toMatchObject({ code: 'permission_denied', details: [{ type: 'authz.v1.ErrorInfo', reason: 'ERROR_REASON_UNSPECIFIED' }] });
      expect(body.message).toContain(`Host ${JSON.stringify(host)} is not a name this server answers to`);
    }
    // Every path and surface: effective permissions, the probes, Connect, gRPC over HTTP/2.
    const evil = { host: 'rebind.test' };
    expect((await h1(port, 'GET', `/effective-permissions?subjectId=subject_alice&scopeId=${ROOT}`, evil)).status).toBe(403);
    for (const path of ['/readyz', '/metrics', '/healthz']) expect((await h1(port, 'GET', path, evil)).status).toBe(403);
    const connect = await h1(port, 'POST', '/authz.v1.DecisionService/Evaluate', { ...evil, ...JSON_TYPE }, JSON.stringify(ask));
    expect(connect.status).toBe(403);
    expect(JSON.parse(connect.body)).toMatchObject({ code: 'permission_denied', details: [{ type: 'authz.v1.ErrorInfo', value: expect.any(String) }] });
    const grpc = await h2(url, { ':method': 'POST', ':path': '/authz.v1.DecisionService/Evaluate', ':authority': 'rebind.test:443', 'content-type': 'application/grpc', te: 'trailers' }, frame(Buffer.alloc(0)));
    expect(grpc.headers[':status']).toBe(200);
    expect(grpc.headers['grpc-status'] ?? grpc.trailers['grpc-status']).toBe('7');
    const h2rest = await h2(url, { ':method': 'POST', ':path': '/evaluate', ':authority': 'rebind.test', ...JSON_TYPE }, JSON.stringify(ask));
    expect(h2rest.headers[':status']).toBe(403);
    expect(await decisions(url)).toBe(before);
    expect(await rejected(url, 'host_not_allowed')).toBe(refusedBefore + hosts.length + 7);
  });

  it('answers the names of SIDECAR_ALLOWED_HOSTS, any port', async () => {
    const s = await start({ allowedHosts: ['authz-sidecar', '10.1.2.3', '[fd00::7]'] });
    const { port } = s.server;
    for (const host of ['authz-sidecar:8181', 'AUTHZ-SIDECAR', '10.1.2.3:1', '[fd00:0::7]:80', `localhost:${port}`]) {
      expect([host, (await h1(port, 'POST', '/evaluate', { host, ...JSON_TYPE }, JSON.stringify(ask))).status]).toEqual([host, 200]);
    }
    for (const host of ['authz-sidecar.evil.example', '10.1.2.4', 'sidecar']) {
      expect([host, (await h1(port, 'POST', '/evaluate', { host, ...JSON_TYPE }, JSON.stringify(ask))).status]).toEqual([host, 403]);
    }
  });
});

describe('hostAllowlist', () => {
  const req = (host?: string) => ({ httpVersionMajor: 1, rawHeaders: host === undefined ? [] : ['Host', host] }) as unknown as NodeServerRequest;

  it('adds the listen address when it is a specific one, never 0.0.0.0 or ::', () => {
    expect(hostAllowlist([], '10.1.2.3')(req('10.1.2.3:8181'))).toBe(true);
    expect(hostAllowlist([], 'sidecar.internal')(req('Sidecar.Internal'))).toBe(true);
    expect(hostAllowlist([], '10.1.2.3')(req('10.1.2.4:8181'))).toBe(false);
    for (const listen of ['0.0.0.0', '::', '[::]']) {
      const allowed = hostAllowlist([], listen);
      expect([listen, allowed(req('0.0.0.0:8181')), allowed(req('[::]:8181')), allowed(req('127.0.0.1:8181'))]).toEqual([listen, false, false, true]);
    }
  });

  it('lets a request without Host through (no browser sends one), and refuses a bad entry', () => {
    expect(hostAllowlist([], '127.0.0.1')(req())).toBe(true);
    expect(() => hostAllowlist(['http://x'], '127.0.0.1')).toThrow(/allowedHosts: "http:\/\/x" is not a host name or address/);
  });
});

describe('crossSiteBody', () => {
  const req = (method: string, headers: string[], httpVersionMajor = 1) => ({ method, httpVersionMajor, rawHeaders: headers }) as unknown as NodeServerRequest;

  it('finds the CORS-safelisted types and bodies without a type, on every method but GET, HEAD and OPTIONS', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(crossSiteBody(req(method, ['Content-Type', 'text/plain;charset=UTF-8']))).toBe('text/plain');
      expect(crossSiteBody(req(method, ['content-type', ' APPLICATION/X-WWW-FORM-URLENCODED ']))).toBe('application/x-www-form-urlencoded');
      expect(crossSiteBody(req(method, ['content-type', 'multipart/form-data; boundary=----x']))).toBe('multipart/form-data');
      expect(crossSiteBody(req(method, ['content-length', '2']))).toBe('');
      expect(crossSiteBody(req(method, ['transfer-encoding', 'chunked']))).toBe('');
      expect(crossSiteBody(req(method, ['content-type', '', 'content-length', '2']))).toBe('');
    }
    for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(crossSiteBody(req(method, ['content-type', 'text/plain', 'content-length', '2']))).toBeUndefined();
  });

  it('lets through JSON, protobuf, Connect, gRPC, gRPC-Web and empty bodies without a type', () => {
    const types = [
      'application/json', 'application/json; charset=utf-8', 'application/proto', 'application/connect+json', 'application/connect+proto',
      'application/grpc', 'application/grpc+proto', 'application/grpc+json', 'application/grpc-web', 'application/grpc-web+proto', 'application/grpc-web-text',
    ];
    for (const type of types) expect([type, crossSiteBody(req('POST', ['content-type', type, 'content-length', '5']))]).toEqual([type, undefined]);
    expect(crossSiteBody(req('POST', []))).toBeUndefined();
    expect(crossSiteBody(req('POST', ['content-length', '0']))).toBeUndefined();
  });
});

describe('bodies a web page can send without a preflight', () => {
  let cp: Awaited<ReturnType<typeof scriptedControlPlane>>;
  let sidecar: Sidecar;
  let control: Awaited<ReturnType<typeof startTestControlPlane>>;
  beforeAll(async () => {
    cp = await scriptedControlPlane();
    sidecar = await startSidecar({
      controlPlaneUrl: cp.server.url, apiKey: 'azk_cross_site', tenantId: TENANT, host: '127.0.0.1', port: 0,
      maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
    }, pino({ level: 'silent' }));
    (await cp.next()).push(snapshot(3, 0, true, ROWS));
    while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
    control = await startTestControlPlane(process.env.DATABASE_URL ? 'postgres' : 'embedded');
  });
  afterAll(async () => {
    await sidecar?.close();
    await cp?.server.close();
    await control?.close();
  });

  const REFUSED: [string, Record<string, string>][] = [
    ['text/plain', { 'content-type': 'text/plain' }],
    ['text/plain with a charset', { 'content-type': 'Text/Plain; charset=UTF-8' }],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['a multipart form', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['no content type', {}],
  ];

  for (const which of ['sidecar', 'control plane'] as const) {
    describe(which, () => {
      const target = (): { url: string; port: number; key: Record<string, string> } =>
        (which === 'sidecar' ? { url: sidecar.server.url, port: sidecar.server.port, key: {} } : { url: control.url, port: control.server.port, key: { 'x-api-key': TEST_BOOTSTRAP_KEY } });
      const paths = which === 'sidecar' ? ['/evaluate', '/authz.v1.DecisionService/Evaluate'] : ['/evaluate', '/authz.v1.DecisionService/Evaluate', '/tenants'];

      it('refuses text/plain, form-encoded and multipart bodies, and a body without a content type: 415 invalid_argument', async () => {
        const { url, port, key } = target();
        const before = await decisions(url);
        const refusedBefore = await rejected(url, 'unsupported_media_type');
        let n = 0;
        for (const path of paths) {
          for (const [name, headers] of REFUSED) {
            const r = await h1(port, 'POST', path, { host: `127.0.0.1:${port}`, ...key, ...headers }, JSON.stringify(ask));
            n++;
            expect([path, name, r.status]).toEqual([path, name, 415]);
            const body = JSON.parse(r.body);
            expect(body.code).toBe('invalid_argument');
            expect(body.message).toMatch(/is not accepted: send application\/json/);
            // In the caller's protocol: Connect's error details on an RPC path, the gateway's on REST.
            expect(body.details[0]).toMatchObject(path.startsWith('/authz.v1.') ? { type: 'authz.v1.ErrorInfo', value: expect.any(String) } : { type: 'authz.v1.ErrorInfo', reason: 'ERROR_REASON_INVALID_FIELD' });
          }
          // Chunked (no content-length), and over HTTP/2 without one either.
          const chunked = await h1(port, 'POST', path, { host: `127.0.0.1:${port}`, ...key }, JSON.stringify(ask), true);
          expect([path, chunked.status]).toEqual([path, 415]);
          const overH2 = await h2(url, { ':method': 'POST', ':path': path, ...key }, JSON.stringify(ask));
          expect([path, overH2.headers[':status']]).toEqual([path, 415]);
          n += 2;
        }
        expect(await rejected(url, 'unsupported_media_type')).toBe(refusedBefore + n);
        expect(await decisions(url)).toBe(before);
      });

      it('keeps answering JSON (with or without a charset), GETs and empty bodies', async () => {
        const { url, port, key } = target();
        const refusedBefore = await rejected(url, 'unsupported_media_type');
        for (const type of ['application/json', 'application/json; charset=utf-8']) {
          const r = await h1(port, 'POST', '/evaluate', { host: `127.0.0.1:${port}`, ...key, 'content-type': type }, JSON.stringify(ask));
          expect([type, r.status]).not.toEqual([type, 415]);
        }
        expect((await h1(port, 'GET', `/effective-permissions?subjectId=subject_alice&scopeId=${ROOT}`, { host: 'localhost', ...key, 'content-type': 'text/plain' })).status).not.toBe(415);
        expect((await h1(port, 'POST', '/evaluate', { host: 'localhost', ...key })).status).not.toBe(415);
        expect((await h1(port, 'POST', '/evaluate', { host: 'localhost', ...key, 'content-length': '0' })).status).not.toBe(415);
        expect((await h2(url, { ':method': 'POST', ':path': '/evaluate', ...key })).headers[':status']).not.toBe(415);
        expect(await rejected(url, 'unsupported_media_type')).toBe(refusedBefore);
      });
    });
  }

  it('keeps answering protobuf, Connect, gRPC and gRPC-Web on the sidecar', async () => {
    const { url, port } = sidecar.server;
    const refusedBefore = await rejected(url, 'unsupported_media_type');
    const empty = Buffer.alloc(0);
    // An empty Evaluate is invalid, but it is the handler that says so (400), not the guard (415).
    expect((await h1(port, 'POST', '/authz.v1.DecisionService/Evaluate', { host: 'localhost', 'content-type': 'application/proto' }, empty)).status).toBe(400);
    const web = await h1(port, 'POST', '/authz.v1.DecisionService/Evaluate', { host: 'localhost', 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' }, frame(empty));
    expect(web.body).toContain('grpc-status: 3');
    const grpc = await h2(url, { ':method': 'POST', ':path': '/authz.v1.DecisionService/Evaluate', 'content-type': 'application/grpc', te: 'trailers' }, frame(empty));
    expect(grpc.headers['grpc-status'] ?? grpc.trailers['grpc-status']).toBe('3');
    expect(await rejected(url, 'unsupported_media_type')).toBe(refusedBefore);
  });
});
