/**
 * The sidecar honours the caller's deadline and cancellation on the wire, on the lean path
 * (gRPC, REST, Connect) and on connect-node's (gRPC-Web over HTTP/1.1): see
 * test/conformance/deadlines.ts.
 */
import { describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcWebTransport } from '@connectrpc/connect-node';
import { pino } from 'pino';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { startSidecar } from './app.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from './testing.js';
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
  it('answers unavailable at once (retry elsewhere), not canceled and not a cut connection', async () => {
    const cp = await scriptedControlPlane();
    const sidecar = await startSidecar({
      controlPlaneUrl: cp.server.url, apiKey: 'azk_deadlines', tenantId: TENANT, host: '127.0.0.1', port: 0,
      maxStalenessMs: 60_000, minRevisionWaitMs: WAIT_MS, watchCompression: 'none', logLevel: 'silent',
    }, pino({ level: 'silent' }));
    try {
      (await cp.next()).push(snapshot(9, 0, true, ROWS));
      while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
      // gRPC-Web is served by connect-node, whose handlers see the server's shutdown signal.
      const client = createClient(DecisionService, createGrpcWebTransport({ baseUrl: sidecar.server.url, httpVersion: '1.1' }));
      const started = Date.now();
      const call = client.evaluate({ actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', consistency: { minRevision: 1_000_000n } })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      await new Promise((r) => setTimeout(r, 100));
      const closing = sidecar.close();
      const err = await call;
      await closing;
      expect(err?.code).toBe(Code.Unavailable);
      expect(err?.rawMessage).toBe('the server is shutting down; retry on another replica');
      expect(Date.now() - started).toBeLessThan(WAIT_MS / 2);
    } finally {
      await sidecar.close();
      await cp.server.close();
    }
  });
});
