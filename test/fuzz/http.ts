/** Sending one fuzz request over REST or Connect JSON, and what came back. */
import { gzipSync } from 'node:zlib';
import type { HttpRequest } from './requests.js';

export type Surface = 'rest' | 'connect';

export interface Answer {
  status: number;
  text: string;
  json?: unknown;
  /** The Connect code of an error answer (`invalid_argument`, …), on both surfaces. */
  code?: string;
  message?: string;
  /** When the request was sent and when the whole answer had arrived (ms since epoch). */
  start: number;
  end: number;
  /** The request got no HTTP answer (connection reset, timeout). */
  networkError?: string;
}

export async function send(base: string, surface: Surface, req: HttpRequest, key: string | undefined, timeoutMs = 15_000): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (key) headers['x-api-key'] = key;
  if (surface === 'connect') {
    headers['content-type'] = 'application/json';
    headers['connect-protocol-version'] = '1';
  } else if (req.body !== undefined) headers['content-type'] = 'application/json';
  let body = req.body;
  // Connect bodies of an odd byte length go gzip-compressed: a compressed body must keep every
  // invariant that a plain one does (it is inflated and checked before anything is decoded).
  if (surface === 'connect' && body !== undefined && Buffer.byteLength(body) % 2 === 1) {
    headers['content-encoding'] = 'gzip';
    body = gzipSync(body);
  }
  const start = Date.now();
  try {
    const res = await fetch(base + req.path, {
      method: req.method,
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    const end = Date.now();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const answer: Answer = { status: res.status, text, json, start, end };
    if (res.status !== 200 && json && typeof json === 'object' && !Array.isArray(json)) {
      const j = json as { code?: unknown; message?: unknown };
      if (typeof j.code === 'string') answer.code = j.code;
      if (typeof j.message === 'string') answer.message = j.message;
    }
    return answer;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { status: 0, text: '', start, end: Date.now(), networkError: `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? ''} ${e.cause.message ?? ''})` : ''}` };
  }
}

/** A short, printable form of a body (long strings and arrays elided). */
export function trim(text: string | Uint8Array | undefined, max = 600): string {
  if (text === undefined) return '(none)';
  const s = typeof text === 'string' ? text : `<${text.length} bytes> ${Buffer.from(text).toString('latin1')}`;
  const shown = JSON.stringify(s).slice(1, -1); // escapes NUL and lone surrogates visibly
  return shown.length <= max ? shown : `${shown.slice(0, max / 2)} … [${s.length} characters] … ${shown.slice(-max / 4)}`;
}
