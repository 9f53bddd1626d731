/**
 * A sidecar under fuzz (sidecar-process.ts in a child process), following one tenant of the
 * fuzzed world from the control plane under fuzz, ready (a fresh snapshot) before it is used.
 */
import { forkChild, type FuzzChild } from './child.js';

const READY_TIMEOUT_MS = 60_000;

export async function startFuzzSidecar(controlPlaneUrl: string, apiKey: string, tenantId: string): Promise<FuzzChild> {
  const child = await forkChild('sidecar', './sidecar-process.ts', {
    SIDECAR_CONTROL_PLANE_URL: controlPlaneUrl,
    SIDECAR_API_KEY: apiKey,
    SIDECAR_TENANT_ID: tenantId,
    SIDECAR_PORT: '0',
    SIDECAR_HOST: '127.0.0.1',
    SIDECAR_LOG_LEVEL: 'warn',
    // A minRevision ahead of the tenant waits this long, then answers `unavailable` (contract §5).
    SIDECAR_MIN_REVISION_WAIT_MS: '100',
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const status = await fetch(`${child.url}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) return child;
    if (child.exited() || Date.now() > deadline) {
      const logs = child.logsSince(0).map((l) => l.text).join('\n').slice(-4000);
      await child.close();
      throw new Error(`the sidecar did not become ready (${child.exited() ?? `/readyz ${status}`}): ${logs}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
