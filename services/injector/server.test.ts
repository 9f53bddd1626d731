/**
 * The injector over real HTTPS, as the API server calls it: the certificate (made here with
 * `selfsigned`) is verified against its CA bundle under the Service's DNS name, and replaced on
 * disk while the server runs.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../transport/observability.js';
import { loadInjectorConfig } from './config.js';
import { testCertificates } from '../../test/certificates.js';
import { ANNOTATIONS, SIDECAR_CONTAINER } from './inject.js';
import { MAX_REVIEW_BYTES, startInjector, type Injector } from './server.js';

const SERVICE_NAME = 'authz-injector.authz.svc';

async function certificate(): Promise<{ cert: string; key: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: SERVICE_NAME }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: SERVICE_NAME }] },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
/** One request on a fresh TLS connection, verified against `ca` under the Service's name. */
function call(url: string, ca: string, opts: { method?: string; path?: string; body?: string | Buffer } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(opts.path ?? '/', url),
      { method: opts.method ?? 'GET', ca, servername: SERVICE_NAME, agent: false, headers: opts.body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

const review = readFileSync(join(import.meta.dirname, 'testdata', 'pod-create-replicaset.json'), 'utf8');
let dir: string;
let first: { cert: string; key: string };
let second: { cert: string; key: string };
let injector: Injector;
const config = () =>
  loadInjectorConfig(
    {
      INJECTOR_HOST: '127.0.0.1',
      INJECTOR_PORT: '0',
      INJECTOR_TLS_CERT_FILE: join(dir, 'tls.crt'),
      INJECTOR_TLS_KEY_FILE: join(dir, 'tls.key'),
      INJECTOR_TLS_RELOAD_MS: '100',
      INJECTOR_SIDECAR_IMAGE: 'registry.example.com/authz/authz:0.1.0',
      INJECTOR_CONTROL_PLANE_URL: 'http://authz-control-plane.authz.svc:8080',
    },
    [],
  );
const write = (pair: { cert: string; key: string }) => {
  writeFileSync(join(dir, 'tls.crt'), pair.cert);
  writeFileSync(join(dir, 'tls.key'), pair.key);
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'authz-injector-'));
  [first, second] = await Promise.all([certificate(), certificate()]);
  write(first);
  injector = await startInjector(config(), createLogger({ logLevel: 'silent' }));
});
afterAll(async () => {
  await injector?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('injector over HTTPS', () => {
  it('answers an AdmissionReview with a patch that applies to the pod', async () => {
    const res = await call(injector.url, first.cert, { method: 'POST', path: '/mutate?timeout=5s', body: review });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    const answer = JSON.parse(res.body);
    expect(answer.response).toMatchObject({ uid: JSON.parse(review).request.uid, allowed: true, patchType: 'JSONPatch' });
    const pod = jsonpatch.applyPatch(JSON.parse(review).request.object, JSON.parse(Buffer.from(answer.response.patch, 'base64').toString()), true).newDocument;
    expect(pod.spec.initContainers[0].name).toBe(SIDECAR_CONTAINER);
  });

  it('serves /healthz, /readyz and /metrics (admissions by outcome)', async () => {
    expect((await call(injector.url, first.cert, { path: '/healthz' })).status).toBe(200);
    expect(JSON.parse((await call(injector.url, first.cert, { path: '/readyz' })).body)).toEqual({ status: 'ready' });
    const metrics = await call(injector.url, first.cert, { path: '/metrics' });
    expect(metrics.body).toMatch(/^authz_injector_admissions_total\{outcome="injected"\} [1-9]/m);
    expect(metrics.body).toMatch(/^authz_injector_certificate_not_after_seconds \d{10}/m);
  });

  it('refuses what is not an AdmissionReview with 400, and other routes and methods', async () => {
    const post = (body: string | Buffer, path = '/mutate') => call(injector.url, first.cert, { method: 'POST', path, body });
    expect((await post('{not json')).status).toBe(400);
    const noUid = await post(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: {} }));
    expect(noUid.status).toBe(400);
    expect(JSON.parse(noUid.body).error).toMatch(/request\.uid/);
    expect((await post(Buffer.alloc(MAX_REVIEW_BYTES + 1, 0x20))).status).toBe(413);
    expect((await post('{}', '/elsewhere')).status).toBe(404);
    const get = await call(injector.url, first.cert, { path: '/mutate' });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect((await call(injector.url, first.cert, { method: 'POST', path: '/healthz', body: '{}' })).status).toBe(405);
  });

  it('serves a renewed certificate without a restart, and keeps the old one while the files do not load', async () => {
    // a half-written pair (new key, old certificate) is not loaded
    writeFileSync(join(dir, 'tls.key'), second.key);
    expect(await injector.reloadCertificate()).toBe(false);
    expect((await call(injector.url, first.cert, { path: '/healthz' })).status).toBe(200);

    writeFileSync(join(dir, 'tls.crt'), second.cert);
    const end = Date.now() + 10_000;
    for (;;) {
      try {
        if ((await call(injector.url, second.cert, { path: '/healthz' })).status === 200) break;
      } catch {
        // still the first certificate
      }
      if (Date.now() > end) throw new Error('the renewed certificate was not served within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    await expect(call(injector.url, first.cert, { path: '/healthz' })).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });

  it('does not start without its certificate, naming the setting', async () => {
    const c = { ...config(), tlsCertFile: join(dir, 'missing.crt') };
    await expect(startInjector(c, createLogger({ logLevel: 'silent' }))).rejects.toThrow(/INJECTOR_TLS_CERT_FILE: cannot read .*missing\.crt: ENOENT/);
  });

  it('gives every injected sidecar the control plane\'s CA from INJECTOR_CONTROL_PLANE_CA_FILE, re-read when it changes', async () => {
    const [ca1, ca2] = await Promise.all([testCertificates(), testCertificates()]);
    const caFile = join(dir, 'control-plane-ca.crt');
    writeFileSync(caFile, ca1.ca);
    const tls = { ...config(), controlPlaneUrl: 'https://authz-control-plane.authz.svc:8080', controlPlaneCaFile: caFile };
    const other = await startInjector(tls, createLogger({ logLevel: 'silent' }));
    const injectedCa = async () => {
      const answer = JSON.parse((await call(other.url, second.cert, { method: 'POST', path: '/mutate', body: review })).body);
      const pod = jsonpatch.applyPatch(JSON.parse(review).request.object, JSON.parse(Buffer.from(answer.response.patch, 'base64').toString()), true).newDocument;
      return (pod.metadata.annotations[ANNOTATIONS.controlPlaneCa] as string).trim();
    };
    try {
      expect(await injectedCa()).toBe(ca1.ca.trim());
      // not a certificate (half-written): the previous CA is still given
      writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nnot yet\n');
      await other.reloadCertificate();
      expect(await injectedCa()).toBe(ca1.ca.trim());
      writeFileSync(caFile, ca2.ca);
      await other.reloadCertificate();
      expect(await injectedCa()).toBe(ca2.ca.trim());
      await expect(startInjector({ ...tls, controlPlaneCaFile: join(dir, 'missing-ca.crt') }, createLogger({ logLevel: 'silent' })))
        .rejects.toThrow(/^INJECTOR_CONTROL_PLANE_CA_FILE: cannot read .*missing-ca\.crt: ENOENT/);
    } finally {
      await other.close();
      ca1.remove();
      ca2.remove();
    }
  });

  it('stops listening when closed', async () => {
    const other = await startInjector(config(), createLogger({ logLevel: 'silent' }));
    expect((await call(other.url, second.cert, { path: '/readyz' })).status).toBe(200);
    await other.close();
    await expect(call(other.url, second.cert, { path: '/readyz' })).rejects.toThrow(/ECONNREFUSED/);
  });
});
