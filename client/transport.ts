/**
 * The client's connection: the Connect protocol over HTTP to a control plane or a sidecar, the
 * API key in `x-api-key` on every call, extra trusted CAs for `https://`, a deadline per call.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { Interceptor, Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';

export interface ConnectionOptions {
  /** The control plane or a sidecar: `http://host:port` or `https://host:port` (a path prefix is kept). */
  baseUrl: string;
  /** An API key, sent as `x-api-key` on every call. A sidecar on loopback needs none. */
  apiKey?: string;
  /** PEM certificates of CAs trusted for an `https://` base URL, besides Node's default roots. */
  ca?: string | Buffer;
  /** Each call's deadline in milliseconds (sent to the service, which stops waiting too); default 10000. */
  timeoutMs?: number;
  /** HTTP version of the Connect transport: `1.1` (default) or `2`. */
  httpVersion?: '1.1' | '2';
}

export const DEFAULT_TIMEOUT_MS = 10_000;

/** The base URL without a trailing slash; throws TypeError for anything but http:// or https://. */
export function normalizeBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(raw)} (expected http://host:port or https://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`not an http:// or https:// URL: ${JSON.stringify(raw)}`);
  if (url.username || url.password) throw new TypeError('the URL must not carry credentials: pass the API key as apiKey');
  if (url.search || url.hash) throw new TypeError(`the URL must not have a query or fragment: ${JSON.stringify(raw)}`);
  return url.toString().replace(/\/+$/, '');
}

/** Node's TLS options for `ca`: the default roots plus the given CAs (Node's `ca` alone would replace the roots). */
export function tlsOptions(ca: string | Buffer | undefined): { ca?: (string | Buffer)[] } {
  return ca === undefined ? {} : { ca: [...rootCertificates, ca] };
}

const apiKeyHeader = (apiKey: string): Interceptor => (next) => (req) => {
  req.header.set('x-api-key', apiKey);
  return next(req);
};

/** A Connect transport for `options`. */
export function createTransport(options: ConnectionOptions & { baseUrl: string }): Transport {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  return createConnectTransport({
    baseUrl,
    httpVersion: options.httpVersion ?? '1.1',
    defaultTimeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    interceptors: options.apiKey === undefined ? [] : [apiKeyHeader(options.apiKey)],
    nodeOptions: tlsOptions(options.ca),
  });
}

/**
 * The HTTP status of `GET <baseUrl><path>` (the probes `/healthz` and `/readyz`, which need no
 * key). Rejects when the server cannot be reached within the timeout.
 */
export function probeStatus(options: ConnectionOptions, path: string): Promise<number> {
  const url = new URL(normalizeBaseUrl(options.baseUrl) + path);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, ...tlsOptions(options.ca) }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
      res.once('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error(`no answer from ${url.origin} within ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`)));
    req.once('error', reject);
    req.end();
  });
}
