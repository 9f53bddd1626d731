/**
 * Deadlines and cancellation on the wire, the same cases for every process that answers
 * DecisionService (control plane and sidecar): a decision waiting for a `minRevision` that never
 * comes must end at the caller's deadline (`grpc-timeout`, `connect-timeout-ms`) with
 * `deadline_exceeded`, and at once when the caller goes away, logged once at debug level and
 * counted as `canceled`, never as a transport failure. Raw requests, without client-side
 * timers, so that only the server can end a call early.
 */
import * as http2 from 'node:http2';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, toBinary } from '@bufbuild/protobuf';
import { pino, type Logger } from 'pino';
import { EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { envelope, rawCallOn, type Outcome } from './surfaces.js';

/** A pino logger at debug level whose lines a test can read. */
export function captureLogger(): { logger: Logger; lines: () => { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines: () => lines };
}

/** What the cases need of a running process. */
export interface DeadlineTarget {
  url: string;
  /** A valid Evaluate request (JSON form) of the process's tenant. */
  request: Record<string, unknown>;
  /** Headers every call needs (the API key). */
  headers: Record<string, string>;
  /** The process's log lines so far. */
  lines: () => { level: number; msg: string }[];
  /** How long a minRevision may wait in this process (long: the cases must end well before). */
  waitMs: number;
  close: () => Promise<void>;
}

const EVALUATE = '/authz.v1.DecisionService/Evaluate';

async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function until(f: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A unary gRPC call over HTTP/2 that the client resets after `cancelAfterMs`. */
function grpcCancelled(url: string, message: Uint8Array, headers: Record<string, string>, cancelAfterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    session.on('error', () => undefined);
    const req = session.request({ ':method': 'POST', ':path': EVALUATE, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    req.on('error', () => undefined);
    req.on('data', () => undefined);
    req.end(envelope(message));
    setTimeout(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
      resolve();
    }, cancelAfterMs);
  });
}

/** An HTTP/1.1 POST that the client aborts after `cancelAfterMs`. */
async function h1Cancelled(
  url: string, type: string, body: Uint8Array | string | undefined, headers: Record<string, string>, cancelAfterMs: number, method = 'POST',
): Promise<void> {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), cancelAfterMs);
  await fetch(url, { method, headers: { ...(type ? { 'content-type': type } : {}), ...headers }, body, signal: ac.signal }).then((r) => r.arrayBuffer()).catch(() => undefined);
}

/** Registers the cases for the process `start` starts (once for the describe block). */
export function deadlineCases(start: () => Promise<DeadlineTarget>): void {
  let t: DeadlineTarget;
  beforeAll(async () => {
    t = await start();
  });
  afterAll(() => t?.close());

  const waiting = () => ({ ...t.request, consistency: { minRevision: '1000000' } });
  const binary = () => toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, waiting() as never));
  const stale = (code: string): Outcome => ({ error: expect.objectContaining({ code, reason: 'STALE' }) as never });

  describe('a deadline ends a wait for minRevision with deadline_exceeded', () => {
    const cases: [string, () => Promise<Outcome>][] = [
      ['gRPC (lean path): grpc-timeout', () => rawCallOn('grpc', t.url, { rest: { method: 'POST', path: '/evaluate' }, rpc: EVALUATE, json: '', binary: binary(), headers: { ...t.headers, 'grpc-timeout': '150m' } })],
      ['gRPC-Web over HTTP/1.1 (lean path): grpc-timeout', () => rawCallOn('grpc-web', t.url, { rest: { method: 'POST', path: '/evaluate' }, rpc: EVALUATE, json: '', binary: binary(), headers: { ...t.headers, 'grpc-timeout': '150m' } })],
      ['Connect JSON (lean path): connect-timeout-ms', () => rawCallOn('connect-json', t.url, { rest: { method: 'POST', path: '/evaluate' }, rpc: EVALUATE, json: JSON.stringify(waiting()), headers: { ...t.headers, 'connect-timeout-ms': '150' } })],
    ];
    for (const [name, call] of cases) {
      it(name, async () => {
        const started = Date.now();
        expect(await call()).toEqual(stale('DeadlineExceeded'));
        // Well before the process's own wait would have ended it.
        expect(Date.now() - started).toBeLessThan(t.waitMs / 2);
      });
    }
  });

  describe('a call the client cancels while it waits ends at once, logged once at debug level, counted as canceled', () => {
    const cases: [string, () => Promise<void>][] = [
      ['gRPC (lean path)', () => grpcCancelled(t.url, binary(), t.headers, 150)],
      ['REST (lean path)', () => h1Cancelled(`${t.url}/evaluate`, 'application/json', JSON.stringify(waiting()), t.headers, 150)],
      ['gRPC-Web over HTTP/1.1 (lean path)', () => h1Cancelled(t.url + EVALUATE, 'application/grpc-web+proto', envelope(binary()), { ...t.headers, 'x-grpc-web': '1' }, 150)],
      // Connect GET is left to connect-node.
      ['Connect GET (connect-node)', () => h1Cancelled(`${t.url}${EVALUATE}?connect=v1&encoding=proto&base64=1&message=${Buffer.from(binary()).toString('base64url')}`, '', undefined, t.headers, 150, 'GET')],
    ];
    for (const [name, cancel] of cases) {
      it(name, async () => {
        const series = 'authz_rpc_requests_total{service="authz.v1.DecisionService",method="Evaluate",code="canceled"}';
        const [calls, rejected, transport] = await Promise.all([
          metric(t.url, series), metric(t.url, 'authz_http_rejected_total{reason="canceled"}'), metric(t.url, 'authz_http_rejected_total{reason="transport_error"}'),
        ]);
        const logged = t.lines().length;
        const started = Date.now();
        await cancel();
        // The wait ended when the client left, not when the process's wait ran out.
        await until(async () => (await metric(t.url, series)) === calls + 1, t.waitMs / 2, `${series} to count the call`);
        expect(Date.now() - started).toBeLessThan(t.waitMs / 2);
        expect(await metric(t.url, 'authz_http_rejected_total{reason="canceled"}')).toBe(rejected + 1);
        expect(await metric(t.url, 'authz_http_rejected_total{reason="transport_error"}')).toBe(transport);
        await new Promise((r) => setTimeout(r, 50));
        const lines = t.lines().slice(logged);
        expect(lines.filter((l) => l.msg === 'rpc canceled by the client').map((l) => l.level)).toEqual([20]);
        expect(lines.filter((l) => l.level >= 40)).toEqual([]);
      });
    }
  });
}
