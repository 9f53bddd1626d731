/**
 * The control plane honours the caller's deadline and cancellation on the wire, on the lean
 * decision path (gRPC, REST, Connect) and on connect-node's (gRPC-Web over HTTP/1.1): see
 * test/conformance/deadlines.ts. On every backend.
 */
import { startControlPlane } from '../app.js';
import { loadConfig } from '../config.js';
import { TEST_BOOTSTRAP_KEY, createScratchDatabase, describeEachBackend } from '../../../test/harness.js';
import { captureLogger, deadlineCases } from '../../../test/conformance/deadlines.js';

const WAIT_MS = 6000;

describeEachBackend('the control plane\'s deadlines and cancellation on %s', (backend) => {
  deadlineCases(async () => {
    const scratch = backend === 'postgres' ? await createScratchDatabase(process.env.DATABASE_URL!) : undefined;
    const { logger, lines } = captureLogger();
    const cp = await startControlPlane(loadConfig({
      SERVICE_PORT: '0', SERVICE_BOOTSTRAP_API_KEY: TEST_BOOTSTRAP_KEY, SERVICE_DATA_DIR: 'memory://',
      SERVICE_MIN_REVISION_WAIT_MS: String(WAIT_MS), ...(scratch ? { DATABASE_URL: scratch.url } : {}),
    }, []), logger);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(cp.server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_BOOTSTRAP_KEY }, body: JSON.stringify(body) });
      return (await res.json()) as Record<string, string>;
    };
    const tenant = await post('/tenants', { name: 'deadlines' });
    const alice = await post('/subjects', { tenantId: tenant.id, type: 'user', externalId: 'alice' });
    const key = await post('/api-keys', { name: 'decisions', kind: 'service', tenantId: tenant.id });
    return {
      url: cp.server.url,
      request: { actor: { subjectId: alice.id }, scopeId: tenant.scopeId, action: 'read' },
      headers: { 'x-api-key': key.secretKey },
      lines,
      waitMs: WAIT_MS,
      close: async () => {
        await cp.close();
        await scratch?.drop();
      },
    };
  });
});
