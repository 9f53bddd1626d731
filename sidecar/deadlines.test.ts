/**
 * The sidecar honours the caller's deadline and cancellation on the wire, on the lean path
 * (gRPC, gRPC-Web, REST, Connect, compressed or not) and on connect-node's (Connect GET): see
 * test/conformance/deadlines.ts.
 */
import { describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { pino } from 'pino';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { startSidecar } from './app.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from '../test/scripted-control-plane.js';
import { captureLogger, deadlineCases } from '../test/conformance/deadlines.js';

const WAIT_MS = 6000;

describe('the sidecar\'s deadlines and cancellation', () => {
  deadlineCases(async () => {
    const cp = await scriptedControlPlane();
    const { logger, lines } = captureLogger();
    const sidecar = await startSidecar({
      controlPlaneUrl: cp.server.url, apiKey: 'azk_deadlines', tenantId: TENANT, host: '127.0.0.1', port: 0,
      maxStalenessMs: 60_000, minRevisionWaitMs: WAIT_MS, watchCompression: 'none', logLevel: 'debug',
    }, logger);
    (await cp.next()).push(snapshot(9, 0, true, ROWS));
    while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
    return {
      url: sidecar.server.url,
      request: { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read' },
      headers: {},
      lines,
      waitMs: WAIT_MS,
      close: async () => {
        await sidecar.close();
        await cp.server.close();
      },
    };
  });
});

describe('a wait for minRevision when the server shuts down', () => {
  const waiting = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', consistency: { minRevision: 1_000_000n } };
  /** The call on one surface: undefined when answered, else the error. */
  const surfaces: [string, (url: string) => Promise<ConnectError | undefined>][] = [
    ['gRPC-Web (lean path)', (url) => rpc(createGrpcWebTransport({ baseUrl: url, httpVersion: '1.1' }))],
    ['gRPC (lean path)', (url) => rpc(createGrpcTransport({ baseUrl: url }))],
    ['Connect JSON (lean path)', (url) => rpc(createConnectTransport({ baseUrl: url, httpVersion: '1.1' }))],
    ['gzip Connect binary (lean path)', (url) => rpc(createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: true, sendCompression: compressionGzip, compressMinBytes: 0 }))],
    // Connect GET is left to connect-node, whose handlers see the shutdown signal.
    ['Connect GET (connect-node)', (url) => rpc(createConnectTransport({ baseUrl: url, httpVersion: '1.1', useHttpGet: true }))],
    ['REST (lean path)', async (url) => {
      const res = await fetch(`${url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...waiting, consistency: { minRevision: 1_000_000 } }) });
      const body = (await res.json()) as { code: string; message: string };
      expect(res.status).toBe(503);
      return new ConnectError(body.message, body.code === 'unavailable' ? Code.Unavailable : Code.Unknown);
    }],
  ];
  const rpc = (transport: Transport) => createClient(DecisionService, transport).evaluate(waiting).then(() => undefined, (e: unknown) => ConnectError.from(e));

  for (const [name, call] of surfaces) {
    it(`answers unavailable at once (retry elsewhere), not canceled and not a cut connection: ${name}`, async () => {
      const cp = await scriptedControlPlane();
      const sidecar = await startSidecar({
        controlPlaneUrl: cp.server.url, apiKey: 'azk_deadlines', tenantId: TENANT, host: '127.0.0.1', port: 0,
        maxStalenessMs: 60_000, minRevisionWaitMs: WAIT_MS, watchCompression: 'none', logLevel: 'silent',
      }, pino({ level: 'silent' }));
      try {
        (await cp.next()).push(snapshot(9, 0, true, ROWS));
        while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
        const started = Date.now();
        const answer = call(sidecar.server.url);
        await new Promise((r) => setTimeout(r, 100));
        const closing = sidecar.close();
        const err = await answer;
        await closing;
        expect(err?.code).toBe(Code.Unavailable);
        expect(err?.rawMessage).toBe('the server is shutting down; retry on another replica');
        expect(Date.now() - started).toBeLessThan(WAIT_MS / 2);
      } finally {
        await sidecar.close();
        await cp.server.close();
      }
    });
  }
});
