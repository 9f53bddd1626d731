/**
 * The sidecar's probe listener (SIDECAR_PROBE_PORT): what the kubelet and Prometheus reach on the
 * pod's IP. It answers /healthz, /readyz (as the main listener: the follower's freshness) and
 * /metrics (the same registry), and never a decision, on any surface.
 */
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { pino } from 'pino';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { startSidecar, type Sidecar } from './app.js';
import type { SidecarConfig } from './config.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from '../test/scripted-control-plane.js';
import { freePort } from '../test/processes.js';

const running: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function setup(opts: { refuse?: () => ConnectError | undefined; config?: Partial<SidecarConfig> } = {}) {
  const cp = await scriptedControlPlane(opts.refuse);
  running.push(cp.server);
  const sidecar: Sidecar = await startSidecar({
    controlPlaneUrl: cp.server.url, apiKey: 'azk_probes_test_key', tenantId: TENANT, host: '127.0.0.1', port: 0,
    // 0 is "off" for this setting, so a port free right now
    probeHost: '127.0.0.1', probePort: await freePort(),
    maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
    ...opts.config,
  }, pino({ level: 'silent' }));
  running.push(sidecar);
  return { cp, sidecar };
}

const until = async (cond: () => boolean, what: string, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const ask = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', resource: { externalResourceId: 'x', resourceType: 'doc' } };

describe('the probe listener', () => {
  it('is off unless SIDECAR_PROBE_PORT is set', async () => {
    const { sidecar } = await setup({ config: { probePort: undefined, probeHost: undefined } });
    expect(sidecar.probes).toBeUndefined();
  });

  it('answers /healthz, /readyz and /metrics (GET and HEAD), on its own port', async () => {
    const { sidecar } = await setup();
    const probes = sidecar.probes!;
    expect(probes.port).not.toBe(sidecar.server.port);
    const health = await fetch(`${probes.url}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
    const head = await fetch(`${probes.url}/healthz?x=1`, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([200, '']);
    const metrics = await fetch(`${probes.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toContain('authz_sidecar_ready 0');
    expect(text).toContain('process_cpu_seconds_total');
  });

  it('answers 405 with Allow for other methods on its paths, and 404 JSON for anything else', async () => {
    const { sidecar } = await setup();
    const url = sidecar.probes!.url;
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const r = await fetch(url + path, { method: 'POST', body: '{}' });
      expect(r.status, path).toBe(405);
      expect(r.headers.get('allow')).toBe('GET, HEAD');
      expect(await r.json()).toEqual({ code: 'unimplemented', message: `POST is not allowed on ${path}`, details: [] });
    }
    for (const path of ['/', '/healthz/', '/openapi.json', '/grpc.health.v1.Health/Check']) {
      const r = await fetch(url + path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(await r.json()).toMatchObject({ code: 'not_found', details: [] });
    }
    const rejected = (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('authz_http_rejected_total'));
    expect(rejected).toContain('authz_http_rejected_total{reason="probe_method"} 3');
    expect(rejected).toContain('authz_http_rejected_total{reason="not_found"} 4');
  });

  it('never answers a decision, on any surface, while the main listener does', async () => {
    const { cp, sidecar } = await setup();
    (await cp.next()).push(snapshot(3, 0, true, ROWS));
    await until(() => sidecar.follower.fresh(), 'the snapshot');
    const main = createClient(DecisionService, createConnectTransport({ baseUrl: sidecar.server.url, httpVersion: '1.1' }));
    expect((await main.evaluate(ask)).allowed).toBe(true);

    const url = sidecar.probes!.url;
    // REST and Connect unary JSON
    for (const path of ['/evaluate', '/evaluate/batch', '/authz.v1.DecisionService/Evaluate']) {
      const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ask) });
      expect(r.status, path).toBe(404);
      expect(JSON.stringify(await r.json())).not.toContain('allowed');
    }
    expect((await fetch(`${url}/effective-permissions?actor.subjectId=subject_alice&scopeId=${ROOT}`)).status).toBe(404);
    // Connect and gRPC clients get an error, never an answer
    const failed = async (p: Promise<unknown>) => {
      try {
        await p;
        return 'answered';
      } catch (e) {
        return ConnectError.from(e).code;
      }
    };
    const overConnect = createClient(DecisionService, createConnectTransport({ baseUrl: url, httpVersion: '1.1' }));
    expect(await failed(overConnect.evaluate(ask))).toBe(Code.NotFound);
    const overGrpc = createClient(DecisionService, createGrpcTransport({ baseUrl: url }));
    expect(await failed(overGrpc.evaluate(ask, { timeoutMs: 2000 }))).not.toBe('answered');
  });

  it('is ready when the follower is fresh, as the main listener: not before a snapshot, not after a refusal', async () => {
    let refusing = false;
    const { cp, sidecar } = await setup({ refuse: () => (refusing ? new ConnectError('revoked', Code.Unauthenticated) : undefined) });
    const status = async (base: string) => (await fetch(`${base}/readyz`)).status;
    const both = async () => [await status(sidecar.probes!.url), await status(sidecar.server.url)];
    const s = await cp.next();
    expect(await both()).toEqual([503, 503]);
    expect(await (await fetch(`${sidecar.probes!.url}/readyz`)).json()).toEqual({ status: 'not_ready' });
    s.push(snapshot(4, 0, true, ROWS));
    await until(() => sidecar.follower.fresh(), 'the snapshot');
    expect(await both()).toEqual([200, 200]);
    expect(await (await fetch(`${sidecar.probes!.url}/metrics`)).text()).toMatch(/^authz_sidecar_revision 4$/m);
    refusing = true;
    s.fail(new ConnectError('the API key of this Watch stream was revoked or has expired', Code.Unauthenticated));
    await until(() => !sidecar.follower.fresh(), 'not fresh after the refusal');
    expect(await both()).toEqual([503, 503]);
    // liveness never depends on the control plane
    expect((await fetch(`${sidecar.probes!.url}/healthz`)).status).toBe(200);
  });

  it('serves the main listener\'s registry: decisions made there are counted here', async () => {
    const { cp, sidecar } = await setup();
    (await cp.next()).push(snapshot(2, 0, true, ROWS));
    await until(() => sidecar.follower.fresh(), 'the snapshot');
    const main = createClient(DecisionService, createConnectTransport({ baseUrl: sidecar.server.url, httpVersion: '1.1' }));
    await main.evaluate(ask);
    await main.evaluate({ ...ask, actor: { subjectId: 'subject_bob' } });
    const text = await (await fetch(`${sidecar.probes!.url}/metrics`)).text();
    expect(text).toMatch(/^authz_decisions_total\{reason="role",allowed="true"\} 1$/m);
    expect(text).toMatch(/^authz_decisions_total\{reason="no_match",allowed="false"\} 1$/m);
    expect(text).toMatch(/^authz_rpc_requests_total\{service="authz.v1.DecisionService",method="Evaluate",code="ok"\} 2$/m);
  });

  it('answers the kubelet, whose probes name the pod\'s IP in Host, where the decision listener refuses that name', async () => {
    const { cp, sidecar } = await setup();
    (await cp.next()).push(snapshot(2, 0, true, ROWS));
    await until(() => sidecar.follower.fresh(), 'the snapshot');
    const probe = (port: number, path: string) => new Promise<string>((resolve, reject) => {
      // What the kubelet's httpGet sends: the pod's IP and the probe port in Host.
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 10.244.1.7:8182\r\nUser-Agent: kube-probe/1.31\r\nAccept: */*\r\nConnection: close\r\n\r\n`));
      let answer = '';
      socket.on('data', (d) => (answer += d.toString('latin1')));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
    for (const path of ['/readyz', '/healthz', '/metrics']) {
      expect(await probe(sidecar.probes!.port, path), path).toMatch(/^HTTP\/1\.1 200 /);
      expect(await probe(sidecar.server.port, path), path).toMatch(/^HTTP\/1\.1 403 /);
    }
  });

  it('closes with the sidecar at once, even with connections open', async () => {
    const { sidecar } = await setup();
    const url = sidecar.probes!.url;
    const open = async (request: string) => {
      const socket = net.connect(sidecar.probes!.port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.write(request);
      return { socket, closed: new Promise((r) => socket.once('close', r)) };
    };
    // kept alive after an answer, as Prometheus holds between scrapes
    const idle = await open('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
    await new Promise((r) => idle.socket.once('data', r));
    // a request still arriving (its headers unfinished), which close() alone would wait for
    const busy = await open('GET /metrics HTTP/1.1\r\nhost: x\r\n');
    await new Promise((r) => setTimeout(r, 20));
    // without cutting them, this would wait for the unfinished request's timeout
    await sidecar.close();
    await Promise.all([idle.closed, busy.closed]);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('a probe port already taken stops start-up and leaves nothing listening', async () => {
    const cp = await scriptedControlPlane();
    running.push(cp.server);
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    running.push({ close: () => new Promise<void>((r) => taken.close(() => r())) });
    const mainPort = await freePort();
    await expect(startSidecar({
      controlPlaneUrl: cp.server.url, apiKey: 'azk_probes_test_key', tenantId: TENANT, host: '127.0.0.1', port: mainPort,
      probeHost: '127.0.0.1', probePort: (taken.address() as net.AddressInfo).port,
      maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
    }, pino({ level: 'silent' }))).rejects.toThrow(/EADDRINUSE/);
    // the main listener was closed again: its port can be taken
    const again = net.createServer();
    await new Promise<void>((resolve, reject) => again.once('error', reject).listen(mainPort, '127.0.0.1', resolve));
    await new Promise((r) => again.close(r));
  });
});
