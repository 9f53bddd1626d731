import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Code, createClient } from '@connectrpc/connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { ErrorInfoSchema } from '../../../gen/authz/v1/error_reason_pb.js';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { createRegistry } from '../../transport/observability.js';
import type { RunningServer } from '../../transport/server.js';
import type { NodeServerRequest, NodeServerResponse } from '../../transport/node-types.js';
import { KEYS, startFakeServer } from '../../../test/fake-control-plane.js';

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(overrides: Parameters<typeof startFakeServer>[0] = {}) {
  const r = await startFakeServer(overrides);
  servers.push(r.server);
  return r;
}

const auth = { headers: { 'x-api-key': KEYS.platform } };

describe('probes', () => {
  it('GET /healthz is 200 {"status":"ok"} without credentials', async () => {
    const { server } = await start();
    const r = await fetch(`${server.url}/healthz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${server.url}/healthz`, { method: 'POST' })).status).toBe(405);
  });

  it('GET /readyz follows readiness(): true → 200, false → 503, throwing → 503', async () => {
    let ready: boolean | Error = true;
    const { server } = await start({
      readiness: async () => {
        if (ready instanceof Error) throw ready;
        return ready;
      },
    });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    ready = false;
    const notReady = await fetch(`${server.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not_ready' });
    ready = new Error('database down');
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
  });

  it('GET /metrics serves Prometheus text with RPC counters and durations', async () => {
    const registry = createRegistry();
    const { server } = await start({ registry });
    await fetch(`${server.url}/resources/resource_x`, auth);
    await fetch(`${server.url}/resources/resource_x`);
    const r = await fetch(`${server.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await r.text();
    expect(text).toContain('authz_rpc_requests_total{service="authz.v1.ResourceService",method="GetResource",code="not_found"} 1');
    expect(text).toContain('authz_rpc_requests_total{service="authz.v1.ResourceService",method="GetResource",code="unauthenticated"} 1');
    expect(text).toMatch(/authz_rpc_duration_seconds_bucket\{le="0.005",service="authz.v1.ResourceService",method="GetResource",code="not_found"\}/);
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('counts requests answered before any handler, by reason', async () => {
    const registry = createRegistry();
    const { server } = await start({ registry });
    await fetch(`${server.url}/no/such/path`, auth);
    await fetch(`${server.url}/resources/resource_x`, { ...auth, method: 'PUT' });
    const json = { headers: { ...auth.headers, 'content-type': 'application/json' } };
    await fetch(`${server.url}/resources/batch`, { ...json, method: 'POST', body: '{not json' });
    await fetch(`${server.url}/resources/batch`, { ...json, method: 'POST', body: 'x'.repeat(4 * 1024 * 1024 + 1) });
    await fetch(`${server.url}/healthz`, { method: 'DELETE' });
    const text = await (await fetch(`${server.url}/metrics`)).text();
    for (const reason of ['not_found', 'method_not_allowed', 'bad_request', 'body_too_large', 'probe_method']) {
      expect(text).toContain(`authz_http_rejected_total{reason="${reason}"} 1`);
    }
    // None of them reached a handler, so none is an RPC.
    expect(text).not.toContain('method="BatchCreateResources"');
  });
});

describe('one port, every protocol', () => {
  it('listens on a free port when asked for port 0', async () => {
    const a = await start();
    const b = await start();
    expect(a.server.port).toBeGreaterThan(0);
    expect(a.server.port).not.toBe(b.server.port);
    expect(a.server.url).toBe(`http://127.0.0.1:${a.server.port}`);
  });

  it('serves Connect (HTTP/1.1 and h2c, JSON and binary), gRPC and gRPC-Web', async () => {
    const { server } = await start();
    const transports = {
      'connect h1 json': createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', useBinaryFormat: false }),
      'connect h2 binary': createConnectTransport({ baseUrl: server.url, httpVersion: '2' }),
      grpc: createGrpcTransport({ baseUrl: server.url }),
      'grpc-web h1': createGrpcWebTransport({ baseUrl: server.url, httpVersion: '1.1' }),
      'grpc-web h2': createGrpcWebTransport({ baseUrl: server.url, httpVersion: '2' }),
    };
    let n = 0;
    for (const [name, transport] of Object.entries(transports)) {
      const client = createClient(ResourceService, transport);
      const id = `resource_p${n++}`;
      let trailer: Headers | undefined;
      let header: Headers | undefined;
      const res = await client.createResource(
        { id, resourceTypeId: 't', ownerScopeId: 's', externalResourceId: name },
        { ...auth, onTrailer: (t) => (trailer = t), onHeader: (h) => (header = h) },
      );
      expect(res.resource?.id, name).toBe(id);
      expect(trailer?.get('x-revision') ?? header?.get('x-revision'), name).toMatch(/^\d+$/);
      await expect(client.getResource({ id: 'resource_none' }, auth), name).rejects.toMatchObject({ code: Code.NotFound });
    }
  });

  it('holds many calls in flight without a listener-leak warning', async () => {
    // Every call waits at the gate until all are in flight, each linked to the shutdown signal.
    const calls = 24;
    let arrived = 0;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { server } = await start({
      interceptors: [
        (next) => async (req) => {
          if (++arrived === calls) open();
          await gate;
          return next(req);
        },
      ],
    });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const client = createClient(ResourceService, createConnectTransport({ baseUrl: server.url, httpVersion: '2' }));
      const results = await Promise.allSettled(Array.from({ length: calls }, () => client.getResource({ id: 'resource_none' }, auth)));
      expect(results.every((r) => r.status === 'rejected' && (r.reason as { code: Code }).code === Code.NotFound)).toBe(true);
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('Connect JSON responses always carry implicit fields', async () => {
    const { server } = await start();
    const r = await fetch(`${server.url}/authz.v1.DecisionService/Evaluate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEYS.service },
      body: JSON.stringify({ scopeId: 's', action: 'read' }),
    });
    expect(r.status).toBe(200);
    const json = (await r.json()) as { allowed: boolean; decidedByPolicy: boolean };
    expect(json.allowed).toBe(false);
    expect(json.decidedByPolicy).toBe(false);
  });

  it('Connect requests over 4 MiB are resource_exhausted', async () => {
    const { server } = await start();
    const client = createClient(ResourceService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1' }));
    await expect(
      client.createResource({ resourceTypeId: 't', ownerScopeId: 's', externalResourceId: 'x'.repeat(4 * 1024 * 1024 + 10) }, auth),
    ).rejects.toMatchObject({ code: Code.ResourceExhausted });
  });

  it('sniffs the protocol even when the first bytes arrive alone', async () => {
    const { server } = await start();
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(server.port, '127.0.0.1');
      let data = '';
      sock.setEncoding('utf8');
      sock.on('data', (c: string) => (data += c));
      sock.on('end', () => resolve(data));
      sock.on('error', reject);
      // "P" could start the HTTP/2 preface: the server must wait for more before deciding
      sock.write('P');
      setTimeout(() => sock.write('OST /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'), 50);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 405/);
  });
});

describe('close()', () => {
  it('closes promptly with idle HTTP/1.1 keep-alive and HTTP/2 connections open', async () => {
    const { server } = await startFakeServer();
    const agent = new http.Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      http.get(`${server.url}/healthz`, { agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    const session = http2.connect(server.url);
    await new Promise<void>((resolve, reject) => {
      const s = session.request({ ':path': '/healthz' });
      s.resume();
      s.on('end', resolve);
      s.on('error', reject);
    });
    const t0 = Date.now();
    await server.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    session.destroy();
    agent.destroy();
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('answers an HTTP/1.1 request in flight at close with connection: close, then ends its connection', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let asked!: () => void;
    const readinessAsked = new Promise<void>((r) => (asked = r));
    const { server } = await startFakeServer({ shutdownGraceMs: 5_000, readiness: async () => (asked(), await gate, true) });
    const sock = net.connect(server.port, '127.0.0.1');
    sock.on('error', () => undefined);
    let reply = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => (reply += c));
    const ended = new Promise<void>((r) => sock.once('end', () => r()));
    sock.write('GET /readyz HTTP/1.1\r\nhost: x\r\n\r\n');
    await readinessAsked;
    const t0 = Date.now();
    const closed = server.close();
    release();
    await ended;
    await closed;
    // Well within the grace period: the connection ended after its answer, not when cut.
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(reply).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(reply.toLowerCase()).toContain('connection: close');
    sock.destroy();
  });

  it('cuts an in-flight request after the grace period', async () => {
    const { server } = await startFakeServer({ shutdownGraceMs: 100 });
    // a request whose body never finishes keeps the connection active
    const sock = net.connect(server.port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(`POST /resources HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.platform}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`);
    sock.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await server.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    sock.destroy();
  });
});

describe('answers before any handler, in the caller\'s protocol', () => {
  it('a method an RPC path does not take is 405 with Allow and a Connect JSON error; Connect GET still works', async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const { server } = await start({ registry });
    const r = await fetch(`${server.url}/authz.v1.ResourceService/CreateResource`);
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(r.headers.get('content-type')).toBe('application/json');
    const body = (await r.json()) as { code: string; message: string; details: { type: string; debug: unknown }[] };
    expect(body).toMatchObject({ code: 'unimplemented', message: 'GET is not allowed on /authz.v1.ResourceService/CreateResource; allowed: POST' });
    expect(body.details.map((d) => d.type)).toEqual(['authz.v1.ErrorInfo']);
    // A method without side effects takes GET too (Connect's GET), so its Allow says both.
    const del = await fetch(`${server.url}/authz.v1.ResourceService/GetResource`, { method: 'DELETE' });
    expect([del.status, del.headers.get('allow')]).toEqual([405, 'POST, GET']);
    const get = await fetch(`${server.url}/authz.v1.ResourceService/GetResource?encoding=json&message=${encodeURIComponent('{"id":"resource_none"}')}&connect=v1`, auth);
    expect(get.status).toBe(404);
    expect(await get.json()).toMatchObject({ code: 'not_found' });
    expect(await (await fetch(`${server.url}/metrics`)).text()).toContain('authz_http_rejected_total{reason="method_not_allowed"} 2');
  });

  it('an unknown gRPC method is a trailers-only UNIMPLEMENTED with ErrorInfo, not the gateway\'s JSON 404', async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const { server } = await start({ registry });
    const session = http2.connect(server.url);
    const { headers, endStream, body } = await new Promise<{ headers: http2.IncomingHttpHeaders; endStream: boolean; body: number }>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/authz.v1.ResourceService/NoSuchMethod', 'content-type': 'application/grpc', te: 'trailers' });
      let got: { headers: http2.IncomingHttpHeaders; endStream: boolean } | undefined;
      let bytes = 0;
      req.on('response', (h, flags) => (got = { headers: h, endStream: (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0 }));
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => resolve({ ...got!, body: bytes }));
      req.on('error', reject);
      req.end(Buffer.alloc(5));
    });
    session.close();
    expect(headers[':status']).toBe(200);
    expect(endStream).toBe(true);
    expect(body).toBe(0);
    expect(headers['content-type']).toBe('application/grpc');
    const status = findTrailerError(new Headers(Object.entries(headers).filter(([k]) => !k.startsWith(':')).map(([k, v]) => [k, String(v)])));
    expect(status?.code).toBe(Code.Unimplemented);
    expect(status?.rawMessage).toBe('unknown method NoSuchMethod for service authz.v1.ResourceService');
    expect(status?.findDetails(ErrorInfoSchema)).toHaveLength(1);
    // A Connect caller of an unknown service gets its JSON error (501).
    const c = await fetch(`${server.url}/acme.v1.Nothing/Call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([c.status, ((await c.json()) as { code: string }).code]).toEqual([501, 'unimplemented']);
    // A REST path that no binding declares is still the gateway's 404.
    expect((await fetch(`${server.url}/no/such/path`)).status).toBe(404);
    expect(await (await fetch(`${server.url}/metrics`)).text()).toContain('authz_http_rejected_total{reason="unimplemented"} 2');
  });
});

describe('calls the client abandons', () => {
  it('are counted as canceled and logged once at debug level, not as transport failures (gateway and connect-node)', async () => {
    const registry = createRegistry({ defaultMetrics: false });
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
    // Every call takes 300 ms, so the client leaves while it runs.
    const { server } = await start({ registry, logger, interceptors: [(next) => async (req) => (await new Promise((r) => setTimeout(r, 300)), next(req))] });
    const abandon = async (url: string, init: RequestInit) => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      await fetch(url, { ...init, signal: ac.signal }).catch(() => undefined);
    };
    await abandon(`${server.url}/resources/resource_x`, auth);
    await abandon(`${server.url}/authz.v1.ResourceService/GetResource`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth.headers }, body: '{"id":"resource_x"}' });
    await new Promise((r) => setTimeout(r, 400));
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toContain('authz_http_rejected_total{reason="canceled"} 2');
    expect(text).not.toContain('reason="transport_error"');
    expect(lines.filter((l) => l.msg === 'rpc canceled by the client').map((l) => l.level)).toEqual([20, 20]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';
  /** A lean-path stand-in: answers `POST /lean` itself, before the router, as the lean decision path does. */
  const leanPath = (req: NodeServerRequest, res: NodeServerResponse) => {
    if (req.url !== '/lean') return false;
    res.writeHead(200, { 'content-type': 'application/json', 'x-revision': '7' });
    res.end('{}');
    return true;
  };
  const corsHeaders = (r: Response) => [...r.headers.keys()].filter((k) => k.startsWith('access-control-'));
  const preflight = (url: string, origin: string) => fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key,connect-protocol-version' },
  });

  it('answers a preflight from an allowed origin, with the headers Connect, gRPC-Web and the API key need', async () => {
    const { server } = await start({ corsOrigins: [ORIGIN, 'http://localhost:5173'], leanPath });
    for (const path of ['/resources', '/authz.v1.ResourceService/CreateResource', '/lean']) {
      const r = await preflight(server.url + path, ORIGIN);
      expect(r.status, path).toBe(204);
      expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(r.headers.get('access-control-allow-methods')).toBe('GET,HEAD,POST,PUT,PATCH,DELETE');
      const allowed = r.headers.get('access-control-allow-headers')!.toLowerCase().split(',');
      for (const h of ['content-type', 'connect-protocol-version', 'connect-timeout-ms', 'x-grpc-web', 'x-user-agent', 'grpc-timeout', 'x-api-key', 'authorization']) {
        expect(allowed, h).toContain(h);
      }
      expect(r.headers.get('access-control-max-age')).toBe('7200');
      expect(r.headers.get('vary')).toContain('Origin');
    }
  });

  it('gives no CORS headers to another origin', async () => {
    const { server } = await start({ corsOrigins: [ORIGIN], leanPath });
    const r = await preflight(`${server.url}/resources`, 'https://evil.example.com');
    expect(r.status).toBe(405);
    expect(corsHeaders(r)).toEqual([]);
    const call = await fetch(`${server.url}/lean`, { method: 'POST', headers: { origin: 'https://evil.example.com' } });
    expect(call.status).toBe(200);
    expect(corsHeaders(call)).toEqual([]);
  });

  it('exposes the revision, the cursor and the gRPC status on real answers: the lean path, connect-node and the gateway', async () => {
    const { server } = await start({ corsOrigins: [ORIGIN], leanPath });
    const lean = await fetch(`${server.url}/lean`, { method: 'POST', headers: { origin: ORIGIN } });
    const rest = await fetch(`${server.url}/resources/resource_none`, { headers: { origin: ORIGIN, ...auth.headers } });
    const grpcWeb = await fetch(`${server.url}/authz.v1.ResourceService/GetResource`, {
      method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', ...auth.headers }, body: Buffer.alloc(5),
    });
    for (const [name, r] of [['lean path', lean], ['gateway', rest], ['gRPC-Web', grpcWeb]] as const) {
      expect(r.headers.get('access-control-allow-origin'), name).toBe(ORIGIN);
      const exposed = r.headers.get('access-control-expose-headers')!.toLowerCase().split(',');
      for (const h of ['x-revision', 'trailer-x-revision', 'x-next-cursor', 'grpc-status', 'grpc-message', 'grpc-status-details-bin']) expect(exposed, `${name} ${h}`).toContain(h);
    }
    expect(lean.headers.get('x-revision')).toBe('7');
  });

  it('is off by default: no CORS headers, and a preflight is the method not allowed it always was', async () => {
    const { server } = await start({ leanPath });
    const r = await preflight(`${server.url}/resources`, ORIGIN);
    expect(r.status).toBe(405);
    expect(corsHeaders(r)).toEqual([]);
    const call = await fetch(`${server.url}/lean`, { method: 'POST', headers: { origin: ORIGIN } });
    expect(corsHeaders(call)).toEqual([]);
    expect(call.headers.get('vary')).toBeNull();
  });
});
