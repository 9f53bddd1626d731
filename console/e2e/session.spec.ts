/**
 * The session's life in a real browser: idle expiry, a revoked key, and pages of other origins
 * that try to use the signed-in browser's cookie (CSRF).
 */
import * as http from 'node:http';
import pg from 'pg';
import type { Browser } from '@playwright/test';
import { expect, openView, signIn, test, type Backend } from './backends.js';

const json = { 'content-type': 'application/json' };

async function tenantCount(b: Backend): Promise<number> {
  let n = 0;
  let cursor = '';
  do {
    const res = await fetch(`${b.url}/tenants?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: { 'x-api-key': b.platformKey } });
    n += ((await res.json()) as unknown[]).length;
    cursor = res.headers.get('x-next-cursor') ?? '';
  } while (cursor !== '');
  return n;
}

test('an idle session ends: the next request goes back to sign-in with the reason', async ({ page, backend }) => {
  test.skip(backend.databaseUrl === undefined, 'the embedded database lives inside the control-plane process; idle expiry is checked on PostgreSQL here and on both databases by sessions.test.ts');
  await signIn(page, backend);
  await openView(page, backend, 'scopes');
  await expect(page.getByRole('heading', { name: 'Scopes', level: 1 })).toBeVisible();
  // Thirty minutes pass without a request (SERVICE_SESSION_IDLE_MINUTES' default).
  const db = new pg.Client({ connectionString: backend.databaseUrl });
  await db.connect();
  try {
    const aged = await db.query(`update sessions set last_seen_at = now() - interval '31 minutes'`);
    expect(aged.rowCount).toBeGreaterThan(0);
  } finally {
    await db.end();
  }
  // The next request meets the ended session: this click's, or one the page makes in the background first.
  await page.getByRole('button', { name: /^Expand eng/ }).click({ timeout: 5_000 }).catch(() => undefined);
  await expect(page.getByRole('status').filter({ hasText: 'Your session has ended' })).toBeVisible();
  await expect(page.getByLabel('API key')).toBeVisible();
});

test('a session ends when its key expires, on either database: back to sign-in with the reason', async ({ page, backend }) => {
  // The key must outlive signing in and opening a view, which takes longer on a busy machine:
  // when it ran out first, or nearly (within the cookie's second of rounding and a margin), the
  // same steps run again with a key that lives longer.
  const nearlyOut = () => Date.now() >= Date.parse(expiresAt) - 2_000;
  let expiresAt = '';
  for (const lifeMs of [6_000, 15_000, 40_000]) {
    expiresAt = new Date(Date.now() + lifeMs).toISOString();
    const res = await fetch(`${backend.url}/api-keys`, { method: 'POST', headers: { ...json, 'x-api-key': backend.platformKey }, body: JSON.stringify({ name: 'short-lived', kind: 'platform', expiresAt }) });
    expect(res.status).toBe(200);
    const key = (await res.json()) as { secretKey: string };
    // Each try starts signed out: a session of the try before may still be alive.
    await page.context().clearCookies();
    try {
      await signIn(page, backend, key.secretKey);
      await openView(page, backend, 'roles');
      await expect(page.getByRole('heading', { name: 'Roles', level: 1 })).toBeVisible();
      const session = await (await page.request.get('/console/session')).json() as { expiresAt: string };
      expect(Date.parse(session.expiresAt)).toBeLessThanOrEqual(Date.parse(expiresAt));
      if (!nearlyOut()) break;
    } catch (err) {
      if (!nearlyOut() || lifeMs === 40_000) throw err;
    }
  }
  await page.waitForTimeout(Math.max(0, Date.parse(expiresAt) - Date.now() + 500));
  await page.getByRole('link', { name: 'Subjects' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Your session has ended' })).toBeVisible();
  await expect(page.getByLabel('API key')).toBeVisible();
});

test('a user key is told which tier a refused call needs; revoking the key ends its session at once', async ({ page, backend }) => {
  const res = await fetch(`${backend.url}/api-keys`, { method: 'POST', headers: { ...json, 'x-api-key': backend.platformKey }, body: JSON.stringify({ name: 'to revoke', kind: 'user', tenantId: backend.tenantId }) });
  const key = (await res.json()) as { id: string; secretKey: string };
  await signIn(page, backend, key.secretKey);
  await expect(page.getByRole('heading', { name: 'Scopes', level: 1 })).toBeVisible();
  // The scope tree is the platform tier's (contract: scopes are a platform key's to read).
  const refusal = page.getByRole('alert').filter({ hasText: 'ScopeService.GetScope' });
  await expect(refusal).toContainText('Not allowed with this key');
  await expect(refusal).toContainText('tier platform: platform keys');
  const revoked = await fetch(`${backend.url}/api-keys/${key.id}`, { method: 'DELETE', headers: { 'x-api-key': backend.platformKey } });
  expect(revoked.status).toBe(200);
  await refusal.getByRole('button', { name: 'Try again' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Your session has ended' })).toBeVisible();
  // And a new sign-in with it is refused.
  await page.getByLabel('API key').fill(key.secretKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('unknown, revoked or expired API key');
});

/**
 * A page on another origin: `127.0.0.1` on another port is the same *site* as the console (ports
 * do not count for SameSite), so the browser sends the Strict cookie along: only the server's
 * origin check and its refusal of form bodies stand between it and a write.
 */
async function attackerPage(browser: Browser, backend: Backend, host: '127.0.0.1' | 'localhost') {
  const target = backend.url;
  const body = JSON.stringify({ name: 'csrf' });
  const cut = body.indexOf('"csrf') + 1;
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>attacker</title></head><body>
    <form id="f" method="POST" action="${target}/authz.v1.TenancyService/CreateTenant" enctype="text/plain">
      <input type="hidden" name='${body.slice(0, cut)}' value='${body.slice(cut)}'></form>
    <form id="g" method="POST" action="${target}/tenants"><input type="hidden" name="name" value="csrf"></form>
  </body></html>`;
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://${host}:${(server.address() as { port: number }).port}/`;
  return { url, close: () => new Promise<void>((ok) => server.close(() => ok())) };
}

for (const host of ['127.0.0.1', 'localhost'] as const) {
  test(`a page on ${host === '127.0.0.1' ? 'a sibling origin of the same site' : 'another site'} cannot write with the signed-in browser's session`, async ({ page, context, browser, backend }) => {
    await signIn(page, backend);
    expect(await context.cookies(backend.url)).toHaveLength(1);
    const before = await tenantCount(backend);
    // The positive control: the console's own origin can write with the cookie.
    const own = await page.evaluate(async () => (await fetch('/authz.v1.TenancyService/CreateTenant', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"own-origin"}' })).status);
    expect(own).toBe(200);
    expect(await tenantCount(backend)).toBe(before + 1);

    const attacker = await attackerPage(browser, backend, host);
    try {
      const evil = await context.newPage();
      await evil.goto(attacker.url);
      // A cross-origin fetch with the cookie: JSON needs a preflight, which the control plane does not grant.
      const cors = await evil.evaluate(async (t) => {
        try {
          return String((await fetch(`${t}/authz.v1.TenancyService/CreateTenant`, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body: '{"name":"csrf"}' })).status);
        } catch (err) {
          return `blocked: ${(err as Error).name}`;
        }
      }, backend.url);
      expect(cors).toBe('blocked: TypeError');
      // What needs no preflight: no-cors fetches with a simple content type, and form posts.
      await evil.evaluate(async (t) => {
        for (const [path, type] of [['/authz.v1.TenancyService/CreateTenant', 'text/plain'], ['/tenants', 'text/plain'], ['/authz.v1.TenancyService/CreateTenant', 'application/x-www-form-urlencoded']]) {
          await fetch(`${t}${path}`, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': type }, body: '{"name":"csrf"}' }).catch(() => undefined);
        }
      }, backend.url);
      for (const form of ['#f', '#g']) {
        await evil.goto(attacker.url);
        await Promise.all([evil.waitForURL((u) => u.toString().startsWith(backend.url)), evil.locator(form).evaluate((f: HTMLFormElement) => f.submit())]);
        expect(await evil.content()).not.toContain('"scopeId"');
      }
      expect(await tenantCount(backend)).toBe(before + 1);
    } finally {
      await attacker.close();
    }
  });
}

test('a request with the cookie from another origin is refused even without a body (the server checks Origin and Sec-Fetch-Site)', async ({ page, context, backend }) => {
  await signIn(page, backend);
  const cookie = (await context.cookies(backend.url))[0];
  const send = (headers: Record<string, string>) =>
    fetch(`${backend.url}/authz.v1.TenancyService/ListTenants`, { method: 'POST', headers: { ...json, cookie: `${cookie.name}=${cookie.value}`, ...headers }, body: '{}' });
  expect((await send({ origin: backend.url, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  const other = await send({ origin: 'http://127.0.0.1:1', 'sec-fetch-site': 'same-site' });
  expect(other.status).toBe(403);
  expect(((await other.json()) as { message: string }).message).toContain("must come from the console's own origin");
  expect((await send({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
});
