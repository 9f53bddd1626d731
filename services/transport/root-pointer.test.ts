/**
 * `GET /` on both processes: a small JSON pointer to the API document and the probes instead of
 * a bare 404, without credentials; every path it names answers.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConsoleDir } from '../control-plane/console/assets.js';
import { pino } from 'pino';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import { ROWS, TENANT, scriptedControlPlane, snapshot } from '../../test/scripted-control-plane.js';
import { startTestControlPlane } from '../../test/harness.js';

/** GETs `url` + `/`, then every path the answer names; returns the answer and each path's status. */
async function followPointer(url: string): Promise<{ status: number; type: string | null; body: Record<string, string>; linked: Record<string, number> }> {
  const res = await fetch(`${url}/`);
  const body = (await res.json()) as Record<string, string>;
  const linked: Record<string, number> = {};
  for (const [name, path] of Object.entries(body)) {
    if (name !== 'service') linked[path] = (await fetch(url + path)).status;
  }
  return { status: res.status, type: res.headers.get('content-type'), body, linked };
}

describe('GET / points at the API document and the probes', () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let scripted: Awaited<ReturnType<typeof scriptedControlPlane>>;
  let sidecar: Sidecar;

  beforeAll(async () => {
    cp = await startTestControlPlane('embedded');
    scripted = await scriptedControlPlane();
    sidecar = await startSidecar({
      controlPlaneUrl: scripted.server.url, apiKey: 'azk_root_pointer', tenantId: TENANT, host: '127.0.0.1', port: 0,
      maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
    }, pino({ level: 'silent' }));
    (await scripted.next()).push(snapshot(3, 0, true, ROWS));
    while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));
  });
  afterAll(async () => {
    await sidecar?.close();
    await scripted?.server.close();
    await cp?.close();
  });

  it('on the control plane: the OpenAPI document, health, readiness, metrics and the console, with no key', async () => {
    // `npm test` builds the console first; run alone without a build, /console/ says so with a 503.
    const built = existsSync(`${defaultConsoleDir()}/index.html`);
    expect(await followPointer(cp.server.url)).toEqual({
      status: 200,
      type: 'application/json',
      body: { service: 'authz control plane', docs: '/openapi.json', health: '/healthz', ready: '/readyz', metrics: '/metrics', console: '/console/' },
      linked: { '/openapi.json': 200, '/healthz': 200, '/readyz': 200, '/metrics': 200, '/console/': built ? 200 : 503 },
    });
  });

  it('on the control plane, a browser asking for a page is sent to the console', async () => {
    const res = await fetch(`${cp.server.url}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console/');
  });

  it('on the sidecar: health, readiness and metrics (it serves no API document)', async () => {
    expect(await followPointer(sidecar.server.url)).toEqual({
      status: 200,
      type: 'application/json',
      body: { service: 'authz sidecar', health: '/healthz', ready: '/readyz', metrics: '/metrics' },
      linked: { '/healthz': 200, '/readyz': 200, '/metrics': 200 },
    });
  });

  it('answers a method other than GET and HEAD as the probes do: 405 with Allow', async () => {
    const res = await fetch(`${cp.server.url}/`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(`${sidecar.server.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });
});
