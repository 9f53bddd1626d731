/**
 * The server's listener with the `tls` option: one port, ALPN handing `h2` and `http/1.1` (and
 * clients that offer no ALPN) to the same servers; a renewed certificate pair served without a
 * restart; a client that does not trust it, or speaks plain text, turned away; close() not held
 * by a connection that never finishes its handshake.
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCertificates, type TestCertificates } from '../../test/certificates.js';
import { ConfigError } from '../common/settings.js';
import { Health } from './health.js';
import { createLogger, createRegistry } from './observability.js';
import { startServer, type RunningServer } from './server.js';

let certs: TestCertificates;
let server: RunningServer;

const start = (reloadMs = 50, files: Partial<{ certFile: string; keyFile: string }> = {}) =>
  startServer({
    port: 0,
    routes: () => undefined,
    logger: createLogger({ logLevel: 'silent' }),
    registry: createRegistry({ defaultMetrics: false }),
    tls: { certFile: certs.certFile, keyFile: certs.keyFile, certSetting: 'TEST_TLS_CERT_FILE', keySetting: 'TEST_TLS_KEY_FILE', reloadMs, ...files },
  });

/** GET over HTTP/1.1 on a fresh connection; `alpn` offers protocols (none by default, like curl --no-alpn). */
function getH1(url: string, path: string, opts: { ca?: string; alpn?: string[] } = {}): Promise<{ status: number; protocol: string | false | null; fingerprint: string }> {
  // ALPNProtocols reaches tls.connect; Node's typings leave it out of https.RequestOptions.
  const options: https.RequestOptions & { ALPNProtocols?: string[] } = { ca: opts.ca ?? certs.ca, agent: false, ALPNProtocols: opts.alpn };
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, url), options, (res) => {
      const socket = res.socket as TLSSocket;
      const out = { status: res.statusCode!, protocol: socket.alpnProtocol, fingerprint: socket.getPeerCertificate().fingerprint256 };
      res.resume();
      res.on('end', () => resolve(out));
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET over HTTP/2 (ALPN h2). */
async function getH2(url: string, path: string): Promise<{ status: number; protocol: string | undefined }> {
  const session = http2.connect(url, { ca: certs.ca });
  try {
    return await new Promise((resolve, reject) => {
      session.once('error', reject);
      const req = session.request({ ':path': path });
      req.once('response', (headers) => {
        req.resume();
        req.once('end', () => resolve({ status: Number(headers[':status']), protocol: session.alpnProtocol }));
      });
      req.once('error', reject);
      req.end();
    });
  } finally {
    session.close();
  }
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

beforeAll(async () => {
  certs = await testCertificates();
  server = await start();
});
afterAll(async () => {
  await server?.close();
  certs?.remove();
});

describe('startServer with tls', () => {
  it('serves https:// on one port: HTTP/2 and HTTP/1.1 by ALPN, and HTTP/1.1 without ALPN', async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await getH2(server.url, '/healthz')).toEqual({ status: 200, protocol: 'h2' });
    expect(await getH1(server.url, '/readyz', { alpn: ['http/1.1'] })).toMatchObject({ status: 200, protocol: 'http/1.1' });
    expect(await getH1(server.url, '/healthz')).toMatchObject({ status: 200, protocol: false });
  });

  it('answers gRPC over HTTP/2 with TLS', async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca: certs.ca } }));
    expect((await client.check({})).status).toBe(1); // SERVING
  });

  it('turns away a client that does not trust the certificate, and one speaking plain text, and keeps serving', async () => {
    const stranger = await testCertificates();
    try {
      await expect(getH1(server.url, '/healthz', { ca: stranger.ca })).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
    } finally {
      stranger.remove();
    }
    await expect(fetch(server.url.replace('https:', 'http:') + '/healthz')).rejects.toThrow();
    expect((await getH2(server.url, '/healthz')).status).toBe(200);
  });

  it('serves a renewed pair without a restart, and keeps the previous one while the files do not load', async () => {
    const own = await testCertificates();
    const renewing = await startServer({
      port: 0,
      routes: () => undefined,
      logger: createLogger({ logLevel: 'silent' }),
      registry: createRegistry({ defaultMetrics: false }),
      tls: { certFile: own.certFile, keyFile: own.keyFile, certSetting: 'C', keySetting: 'K', reloadMs: 50 },
    });
    try {
      const ask = () => getH1(renewing.url, '/healthz', { ca: own.ca });
      expect((await ask()).fingerprint).toBe(fingerprintOf(own.cert));
      const next = await own.renew();
      // half-written: the new key with the old certificate does not load; the old pair is served
      writeFileSync(own.keyFile, next.key);
      for (let i = 0; i < 5; i++) expect((await ask()).fingerprint).toBe(fingerprintOf(own.cert));
      writeFileSync(own.certFile, next.cert);
      let served = '';
      for (let i = 0; i < 400 && served !== fingerprintOf(next.cert); i++) {
        served = (await ask()).fingerprint;
        if (served !== fingerprintOf(next.cert)) await new Promise((r) => setTimeout(r, 25));
      }
      expect(served).toBe(fingerprintOf(next.cert));
    } finally {
      await renewing.close();
      own.remove();
    }
  });

  it('does not start without its files, naming the setting', async () => {
    const missing = start(50, { keyFile: `${certs.dir}/missing.key` });
    await expect(missing).rejects.toThrow(ConfigError);
    await expect(missing).rejects.toThrow(/^TEST_TLS_KEY_FILE: cannot read .*missing\.key: ENOENT/);
    // a certificate and a key that are not each other's
    const other = await testCertificates();
    try {
      await expect(start(50, { keyFile: other.keyFile })).rejects.toThrow(/^TEST_TLS_CERT_FILE: .* are not a usable certificate and key/);
    } finally {
      other.remove();
    }
  });

  it('closes with an HTTP/2 session, an HTTP/1.1 keep-alive connection and an unfinished handshake open', async () => {
    const closing = await start();
    const session = http2.connect(closing.url, { ca: certs.ca });
    session.on('error', () => undefined);
    const agent = new https.Agent({ keepAlive: true, ca: certs.ca });
    await new Promise<void>((resolve, reject) => https.get(new URL('/healthz', closing.url), { agent }, (res) => res.resume().on('end', resolve)).on('error', reject));
    // A TCP connection that never sends its ClientHello: only close() ends it (the handshake timeout is 30 s).
    const silent = net.connect(closing.port, '127.0.0.1');
    await new Promise((resolve) => silent.once('connect', resolve));
    const silentClosed = new Promise((resolve) => silent.once('close', resolve));
    silent.on('error', () => undefined);
    await closing.close();
    await silentClosed;
    agent.destroy();
    session.destroy();
  }, 15_000);
});
