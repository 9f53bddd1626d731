import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Code, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { createRegistry } from '../observability.js';
import type { RunningServer } from './server.js';
import { KEYS, startFakeServer } from './testkit.js';

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
    await fetch(`${server.url}/resources/batch`, { ...auth, method: 'POST', body: '{not json' });
    await fetch(`${server.url}/resources/batch`, { ...auth, method: 'POST', body: 'x'.repeat(4 * 1024 * 1024 + 1) });
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

  it('cuts an in-flight request after the grace period', async () => {
    const { server } = await startFakeServer({ shutdownGraceMs: 100 });
    // a request whose body never finishes keeps the connection active
    const sock = net.connect(server.port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(`POST /resources HTTP/1.1\r\nhost: x\r\nx-api-key: ${KEYS.platform}\r\ncontent-length: 100\r\n\r\n{`);
    sock.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await server.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    sock.destroy();
  });
});
