/**
 * The sidecar injector's HTTPS server: `POST /mutate` (the API server's AdmissionReview calls),
 * `/healthz`, `/readyz` and `/metrics`. The serving certificate comes from files (a cert-manager
 * Secret mounted as a volume) and is re-read every `tlsReloadMs`: a renewed pair replaces the
 * served one without a restart; a pair that does not load (half-written, key and certificate
 * not matching) is logged and the previous one kept. The control plane's CA
 * (`INJECTOR_CONTROL_PLANE_CA_FILE`), given to every injected sidecar, is re-read the same way.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { notAfterSeconds, readCaBundle, readCertificatePair, reloadCertificates, secureContextOptions, type CertificateFiles } from '../transport/certificates.js';
import type { InjectorConfig } from './config.js';
import { BadReviewError, review } from './inject.js';

/** An AdmissionReview of the largest pod etcd stores (1.5 MiB) with room for its envelope. */
export const MAX_REVIEW_BYTES = 4 * 1024 * 1024;

export interface Injector {
  url: string;
  port: number;
  /** Re-reads the certificate files (and the control plane's CA) now; true when a new pair was loaded. */
  reloadCertificate(): Promise<boolean>;
  close(): Promise<void>;
}

function certificateFiles(config: InjectorConfig): CertificateFiles {
  return { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, certSetting: 'INJECTOR_TLS_CERT_FILE', keySetting: 'INJECTOR_TLS_KEY_FILE' };
}

/** Starts the injector and resolves once it listens. */
export async function startInjector(config: InjectorConfig, logger: Logger): Promise<Injector> {
  const files = certificateFiles(config);
  const pair = await readCertificatePair(files);
  const caFile = config.controlPlaneCaFile;
  let controlPlaneCa = caFile === undefined ? undefined : await readCaBundle(caFile, 'INJECTOR_CONTROL_PLANE_CA_FILE');
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const admissions = new Counter({
    name: 'authz_injector_admissions_total',
    help: 'AdmissionReviews answered, by outcome (injected, not_requested, already_injected, bad_annotation, error, ...).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const notAfter = new Gauge({
    name: 'authz_injector_certificate_not_after_seconds',
    help: 'Expiry of the serving certificate in use (Unix seconds).',
    registers: [registry],
  });
  notAfter.set(notAfterSeconds(pair.cert));
  let closing = false;

  const server: Server = createServer(secureContextOptions(pair), (req, res) => {
    handle(req, res).catch((err) => {
      logger.error({ err }, 'request failed');
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  // The API server gives a webhook `timeoutSeconds` (5 in deploy/); nothing here should take long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/readyz' || path === '/metrics') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
      if (path === '/healthz') return send(res, 200, { status: 'ok' });
      if (path === '/readyz') return closing ? send(res, 503, { status: 'shutting down' }) : send(res, 200, { status: 'ready' });
      res.writeHead(200, { 'content-type': registry.contentType });
      return res.end(await registry.metrics());
    }
    if (path !== '/mutate') return send(res, 404, { error: `no route ${path.slice(0, 100)}` });
    if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
    const body = await readBody(req);
    if (body === undefined) return send(res, 413, { error: `an AdmissionReview may be ${MAX_REVIEW_BYTES} bytes at most` });
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return send(res, 400, { error: 'the body is not JSON' });
    }
    let answer;
    try {
      answer = review(parsed, config, controlPlaneCa);
    } catch (err) {
      if (err instanceof BadReviewError) return send(res, 400, { error: err.message });
      throw err;
    }
    admissions.inc({ outcome: answer.outcome });
    const request = (parsed as { request: { uid: string; namespace?: string; name?: string; object?: { metadata?: { generateName?: string } } } }).request;
    // Never the pod itself: its env may hold values that do not belong in logs.
    const fields = {
      uid: request.uid,
      namespace: request.namespace,
      pod: request.name || request.object?.metadata?.generateName,
      outcome: answer.outcome,
      detail: answer.detail,
    };
    if (answer.outcome === 'error') logger.error(fields, 'injection failed; pod admitted without a sidecar');
    else if (answer.outcome === 'bad_annotation' || answer.outcome === 'unsupported_pod' || answer.outcome === 'host_network') logger.warn(fields, 'not injected');
    else if (answer.outcome === 'injected') logger.info(fields, 'sidecar injected');
    else logger.debug(fields, 'admission answered');
    send(res, 200, answer.review);
  }

  function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_REVIEW_BYTES) tooLarge = true;
        else chunks.push(chunk);
      });
      req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
      req.on('error', reject);
    });
  }

  const reloader = reloadCertificates(files, pair, {
    intervalMs: config.tlsReloadMs,
    logger,
    apply: (next) => {
      server.setSecureContext(secureContextOptions(next));
      notAfter.set(notAfterSeconds(next.cert));
    },
  });

  /** A renewed CA goes into the sidecars injected from now on; one that does not load is logged and the previous one kept. */
  const reloadCa = async (): Promise<void> => {
    if (caFile === undefined) return;
    try {
      const next = await readCaBundle(caFile, 'INJECTOR_CONTROL_PLANE_CA_FILE');
      if (next === controlPlaneCa) return;
      controlPlaneCa = next;
      logger.info({ file: caFile }, 'control plane CA reloaded; sidecars injected from now on get it');
    } catch (err) {
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'control plane CA did not load; injecting the previous one');
    }
  };
  const caTimer = setInterval(() => void reloadCa(), config.tlsReloadMs);
  caTimer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'listener error'));
  const addr = server.address() as AddressInfo;
  const host = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `https://${host}:${addr.port}`;
  logger.info({ url, notAfter: new Date(notAfterSeconds(pair.cert) * 1000).toISOString() }, 'injector listening');

  return {
    url,
    port: addr.port,
    async reloadCertificate() {
      const [renewed] = await Promise.all([reloader.reload(), reloadCa()]);
      return renewed;
    },
    async close() {
      closing = true;
      reloader.stop();
      clearInterval(caTimer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // The API server keeps connections open; in-flight reviews get a moment to finish.
      const force = setTimeout(() => server.closeAllConnections(), 1000);
      await closed;
      clearTimeout(force);
      logger.info({ url }, 'injector closed');
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
