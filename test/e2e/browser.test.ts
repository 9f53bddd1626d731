/**
 * The sidecar against a web page, in a real browser (Debian's Chromium, driven by
 * playwright-core; never a downloaded one). The sidecar answers without credentials on
 * loopback, so a page open on the same machine is the attacker to keep out:
 *
 * - from its own origin (a second server, `attacker.test`), it sends what needs no CORS
 *   preflight: a `no-cors` fetch with a text/plain body, a beacon without a content type, and
 *   form posts (text/plain, url-encoded, multipart). The sidecar must not evaluate them;
 * - by DNS rebinding, its name (`rebind.test`) resolves to 127.0.0.1, so the page is
 *   same-origin with the sidecar and could read its answers. Its requests carry
 *   `Host: rebind.test:<port>`, which the sidecar must refuse.
 *
 * CI installs chromium and sets AUTHZ_TEST_BROWSER_REQUIRED=1, so a machine without it fails
 * there; elsewhere the test is skipped with the reason.
 */
import * as http from 'node:http';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startSidecar, type Sidecar } from '../../sidecar/app.js';
import { ROOT, ROWS, TENANT, scriptedControlPlane, snapshot } from '../scripted-control-plane.js';

const CHROMIUM = process.env.AUTHZ_TEST_BROWSER ?? '/usr/bin/chromium';
const REQUIRED = process.env.AUTHZ_TEST_BROWSER_REQUIRED === '1';
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} not found; install Debian's chromium (apt-get install chromium) or set AUTHZ_TEST_BROWSER`;
if (missing && !REQUIRED) console.warn(`skipping the browser test: ${missing}`);

/** A decision the attacker wants: alice may read doc-1. */
const ask = { actor: { subjectId: 'subject_alice' }, scopeId: ROOT, action: 'read', resource: { resourceType: 'doc', externalResourceId: 'doc-1' } };
/**
 * A text/plain form sends `name=value\r\n`: with this name and value the body is the JSON of a
 * decision (the `=` lands inside the action), the classic way to post JSON from a form.
 */
const ASK_JSON = JSON.stringify(ask);
const CUT = ASK_JSON.indexOf('"action":"read') + '"action":"read'.length;
const [FORM_NAME, FORM_VALUE] = [ASK_JSON.slice(0, CUT), ASK_JSON.slice(CUT)];

async function counter(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}
const decisions = (url: string) => counter(url, 'authz_decisions_total');
const rejected = (url: string, reason: string) => counter(url, 'authz_http_rejected_total', `reason="${reason}"`);

/** Waits until `read` gives at least `n` (the browser sends beacons and form posts when it likes). */
async function reaches(read: () => Promise<number>, n: number, what: string): Promise<number> {
  const end = Date.now() + 20_000;
  for (;;) {
    const v = await read();
    if (v >= n) return v;
    if (Date.now() > end) throw new Error(`${what}: ${v}, expected ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const html = (body: string) => `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head><body>${body}</body></html>`;
const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

describe('the sidecar against a web page in Chromium', () => {
  if (missing && REQUIRED) {
    it('needs Debian\'s chromium (AUTHZ_TEST_BROWSER_REQUIRED=1)', () => {
      expect.fail(missing);
    });
  }

  describe.runIf(!missing)('a sidecar, an attacker\'s site and a rebinding name', () => {
    let cp: Awaited<ReturnType<typeof scriptedControlPlane>>;
    let sidecar: Sidecar;
    let attacker: http.Server;
    let attackerUrl: string;
    let profile: string;
    let browser: BrowserContext;

    beforeAll(async () => {
      cp = await scriptedControlPlane();
      sidecar = await startSidecar({
        controlPlaneUrl: cp.server.url, apiKey: 'azk_browser_test', tenantId: TENANT, host: '127.0.0.1', port: 0,
        maxStalenessMs: 30_000, minRevisionWaitMs: 50, watchCompression: 'none', logLevel: 'silent',
      }, pino({ level: 'silent' }));
      (await cp.next()).push(snapshot(5, 0, true, ROWS));
      while (!sidecar.follower.fresh()) await new Promise((r) => setTimeout(r, 5));

      // The attacker's site: pages that post to the sidecar as soon as they load.
      const target = `${sidecar.server.url}/evaluate`;
      const form = (enctype: string) => html(
        `<iframe name="sink"></iframe><form method="post" action="${target}" enctype="${enctype}" target="sink">`
        + `<input type="hidden" name="${attr(FORM_NAME)}" value="${attr(FORM_VALUE)}"></form>`
        + '<script>document.forms[0].submit()</script>',
      );
      const pages: Record<string, string> = {
        '/fetch': html(`<script>window.sent = fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', body: ${JSON.stringify(JSON.stringify(ask))} })
          .then(() => 'sent', (e) => 'failed: ' + e)</script>`),
        '/beacon': html(`<script>window.sent = navigator.sendBeacon(${JSON.stringify(target)}, new Blob([${JSON.stringify(JSON.stringify(ask))}]))</script>`),
        '/form-text': form('text/plain'),
        '/form-urlencoded': form('application/x-www-form-urlencoded'),
        '/form-multipart': form('multipart/form-data'),
      };
      attacker = http.createServer((req, res) => {
        const page = pages[req.url ?? ''];
        res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
        res.end(page ?? '');
      });
      await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
      attackerUrl = `http://attacker.test:${(attacker.address() as { port: number }).port}`;

      profile = mkdtempSync(join(tmpdir(), 'authz-chromium-'));
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        chromiumSandbox: false,
        args: [
          '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
          '--disable-sync', '--no-proxy-server', '--disable-features=HttpsUpgrades',
          // Both names resolve to loopback, as a rebinding DNS server would answer.
          '--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebind.test 127.0.0.1',
        ],
      });
    });
    afterAll(async () => {
      await browser?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
      await new Promise((r) => (attacker ? attacker.close(r) : r(undefined)));
      await sidecar?.close();
      await cp?.server.close();
    });

    const open = async (url: string): Promise<Page> => {
      const page = await browser.newPage();
      await page.goto(url);
      return page;
    };

    it('the text/plain form\'s body is a decision request: sent as JSON, it is answered', async () => {
      // What makes the form post below an attack when the content type is not checked.
      const before = await decisions(sidecar.server.url);
      const res = await fetch(`${sidecar.server.url}/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `${FORM_NAME}=${FORM_VALUE}\r\n` });
      expect(res.status).toBe(200);
      expect(await decisions(sidecar.server.url)).toBe(before + 1);
    });

    it('does not evaluate what another origin sends without a preflight: no-cors fetch, beacon, form posts (415)', async () => {
      const url = sidecar.server.url;
      const before = await decisions(url);
      const refused = await rejected(url, 'unsupported_media_type');
      const fetchPage = await open(`${attackerUrl}/fetch`);
      expect(await fetchPage.evaluate(() => (globalThis as unknown as { sent: Promise<string> }).sent)).toBe('sent');
      const beaconPage = await open(`${attackerUrl}/beacon`);
      expect(await beaconPage.evaluate(() => (globalThis as unknown as { sent: boolean }).sent)).toBe(true);
      for (const kind of ['text', 'urlencoded', 'multipart']) await open(`${attackerUrl}/form-${kind}`);
      // Five requests reached the sidecar, each refused before anything read it.
      expect(await reaches(() => rejected(url, 'unsupported_media_type'), refused + 5, 'requests refused as unsupported_media_type')).toBe(refused + 5);
      expect(await decisions(url)).toBe(before);
      for (const page of browser.pages()) await page.close();
    });

    it('a page rebound to the sidecar\'s address reads no decision: its Host is refused (403)', async () => {
      const url = sidecar.server.url;
      const before = await decisions(url);
      const refused = await rejected(url, 'host_not_allowed');
      const origin = `http://rebind.test:${sidecar.server.port}`;
      const page = await browser.newPage();
      const landing = await page.goto(`${origin}/`);
      expect(landing?.status()).toBe(403);
      // Same-origin now: the page may read whatever the sidecar answers.
      const answers = await page.evaluate(async ({ ask, root }) => {
        const read = async (r: Response) => ({ status: r.status, body: await r.text() });
        const json = { 'content-type': 'application/json' };
        return [
          await read(await fetch('/evaluate', { method: 'POST', headers: json, body: JSON.stringify(ask) })),
          await read(await fetch('/authz.v1.DecisionService/Evaluate', { method: 'POST', headers: json, body: JSON.stringify(ask) })),
          await read(await fetch(`/effective-permissions?subjectId=subject_alice&scopeId=${root}`)),
          await read(await fetch('/metrics')),
        ];
      }, { ask, root: ROOT });
      for (const a of answers) {
        expect(a.status).toBe(403);
        const body = JSON.parse(a.body);
        expect(body.code).toBe('permission_denied');
        expect(body.message).toContain(`Host "rebind.test:${sidecar.server.port}" is not a name this server answers to`);
        expect(a.body).not.toMatch(/allowed|subject_alice|authz_/);
      }
      expect(await rejected(url, 'host_not_allowed')).toBeGreaterThanOrEqual(refused + 1 + answers.length);
      expect(await decisions(url)).toBe(before);
      await page.close();
    });
  });
});
