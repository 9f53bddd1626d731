/**
 * A `fetch` over node:https that trusts extra CAs (`--ca-file`) besides the default roots, for the
 * NDJSON import client, which speaks plain HTTP: Node's built-in fetch takes no CA option. Only
 * what that client uses: method, headers, a string body, an abort signal; the body read whole.
 */
import { request } from 'node:https';
import { tlsOptions } from '../client/transport.js';

export function fetchWithCa(ca: string | Buffer): typeof fetch {
  const tls = tlsOptions(ca);
  return ((input: string | URL, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      if (url.protocol !== 'https:') {
        fetch(url, init).then(resolve, reject);
        return;
      }
      const req = request(url, { method: init.method ?? 'GET', headers: init.headers as Record<string, string>, signal: init.signal ?? undefined, ...tls }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0 })));
        res.once('error', reject);
      });
      req.once('error', reject);
      req.end(typeof init.body === 'string' ? init.body : undefined);
    })) as typeof fetch;
}
