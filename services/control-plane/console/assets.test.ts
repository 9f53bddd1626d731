import * as http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoute, loadConsoleAssets } from './assets.js';

/** A server answering with `consoleRoute` over `dir`'s build, 404 for the paths it leaves. */
async function serve(dir: string | undefined): Promise<{ url: string; close: () => Promise<void> }> {
  const route = consoleRoute(dir === undefined ? undefined : loadConsoleAssets(dir));
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (!route(req, res, path)) {
      res.statusCode = 404;
      res.end('not the console');
    }
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => server.close(() => ok())) };
}

describe('the console\'s static files', () => {
  let dir: string;
  let built: Awaited<ReturnType<typeof serve>>;
  let unbuilt: Awaited<ReturnType<typeof serve>>;
  const script = `console.log(${JSON.stringify('x'.repeat(4000))});`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-assets-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>console</title>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), script);
    writeFileSync(join(dir, 'assets', 'notes.exe'), 'not a type the console serves');
    writeFileSync(join(dir, '..', 'outside.txt'), 'secret');
    built = await serve(dir);
    unbuilt = await serve(undefined);
  });
  afterAll(async () => {
    await built.close();
    await unbuilt.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(dir, '..', 'outside.txt'), { force: true });
  });

  it('redirects / (for a browser) and /console to /console/, and leaves other paths to the server', async () => {
    expect(await (await fetch(`${built.url}/`, { headers: { accept: 'application/json' } })).text()).toBe('not the console');
    for (const path of ['/', '/console']) {
      const res = await fetch(`${built.url}${path}`, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('/console/');
    }
    expect((await fetch(`${built.url}/consoles`)).status).toBe(404);
    expect(await (await fetch(`${built.url}/tenants`)).text()).toBe('not the console');
  });

  it('serves a hashed asset as immutable, gzipped when asked, with the security headers', async () => {
    const res = await fetch(`${built.url}/console/assets/index-abc123.js`, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const plain = await fetch(`${built.url}/console/assets/index-abc123.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(script);
    const raw = await new Promise<{ encoding?: string; body: Buffer }>((ok) => {
      http.get(`${built.url}/console/assets/index-abc123.js`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c)).on('end', () => ok({ encoding: r.headers['content-encoding'], body: Buffer.concat(chunks) }));
      });
    });
    expect(raw.encoding).toBe('gzip');
    expect(gunzipSync(raw.body).toString()).toBe(script);
  });

  it('answers a view\'s path with index.html (not cached), and a missing asset with 404', async () => {
    for (const path of ['/console/', '/console/t/tenant_1/scopes', '/console/t/x/playground?subject=alice']) {
      const res = await fetch(`${built.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toContain('<title>console</title>');
    }
    expect((await fetch(`${built.url}/console/assets/index-gone.js`)).status).toBe(404);
  });

  it('never reads outside the build, nor a file of a type it does not serve', async () => {
    for (const path of ['/console/../outside.txt', '/console/%2e%2e/outside.txt', '/console/assets/..%2f..%2foutside.txt', '/console/assets/notes.exe']) {
      const res = await fetch(`${built.url}${path}`);
      expect(await res.text()).not.toContain('secret');
      expect(await (await fetch(`${built.url}${path}`)).text()).not.toContain('not a type the console serves');
    }
  });

  it('allows GET and HEAD only', async () => {
    const res = await fetch(`${built.url}/console/`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(`${built.url}/console/assets/index-abc123.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('says how to build the console when there is no build', async () => {
    expect(loadConsoleAssets(join(dir, 'assets'))).toBeUndefined();
    const res = await fetch(`${unbuilt.url}/console/`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npm run build:console');
  });
});
