/**
 * A gRPC load generator that cycles many request bodies, for `bench:sidecar`'s realistic mix:
 * h2load sends one body (`-d`), and a mix of 10,000 bodies must be cycled to be a mix.
 *
 * Chosen over several h2load processes each with its own body (a handful of bodies is not
 * 10,000, and each process holds its own connections): a raw `node:http2` client, run in a
 * child process of its own (`node --import tsx bench/grpc-cycle.ts URL FRAMES SECONDS [SESSIONS]
 * [STREAMS]`), that writes pre-encoded gRPC frames (5-byte prefix + message, read from FRAMES,
 * concatenated) in turn, `STREAMS` in flight on each of `SESSIONS` connections. It does no
 * protobuf work per call: a request is one HEADERS and one DATA frame of bytes made beforehand,
 * an answer is counted once its trailers say `grpc-status: 0`. The same client loads the
 * sidecar and the constant grpc-js server, so the ratio is side by side; it costs more CPU per
 * call than h2load (it is JavaScript), and on a 2-core machine it takes what the server does
 * not, for both servers alike. Prints one JSON line: requests, req/s, p50/p99 ms, failures.
 *
 * `grpcOnce(url, frame)` sends one call and returns its answer's message bytes (for checks).
 */
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { readFileSync } from 'node:fs';

const { HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_TE } = constants;

/** Splits concatenated gRPC frames. */
export function splitFrames(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < buf.length;) {
    const len = buf.readUInt32BE(at + 1);
    out.push(buf.subarray(at, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

/** A gRPC frame of one message. */
export function frameOf(message: Uint8Array): Buffer {
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

function headersFor(path: string, extra: Record<string, string>) {
  return { [HTTP2_HEADER_METHOD]: 'POST', [HTTP2_HEADER_PATH]: path, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc', [HTTP2_HEADER_TE]: 'trailers', ...extra };
}

/** One call: the answer's message (without its prefix); throws on a non-zero grpc-status. */
export function grpcOnce(url: string, frame: Buffer, extra: Record<string, string> = {}): Promise<Buffer> {
  const u = new URL(url);
  const session = connect(u.origin);
  return new Promise<Buffer>((resolve, reject) => {
    session.on('error', reject);
    const req = session.request(headersFor(u.pathname, extra));
    const chunks: Buffer[] = [];
    let status: string | undefined;
    req.on('response', (h) => (status = h['grpc-status'] as string | undefined));
    req.on('trailers', (h) => (status = (h['grpc-status'] as string | undefined) ?? status));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      session.close();
      const body = Buffer.concat(chunks);
      if (status !== '0') reject(new Error(`grpc-status ${status}`));
      else resolve(body.subarray(5, 5 + body.readUInt32BE(1)));
    });
    req.on('error', reject);
    req.end(frame);
  });
}

async function main() {
  const [url, framesFile, seconds, sessionsArg, streamsArg, apiKey] = process.argv.slice(2);
  const frames = splitFrames(readFileSync(framesFile));
  const sessions = Number(sessionsArg ?? 10);
  const streams = Number(streamsArg ?? 20);
  const u = new URL(url);
  const headers = headersFor(u.pathname, apiKey ? { 'x-api-key': apiKey } : {});
  const end = Date.now() + Number(seconds) * 1000;
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const loop = (session: ClientHttp2Session) =>
    new Promise<void>((done) => {
      const one = () => {
        if (Date.now() >= end) return done();
        const t0 = performance.now();
        const req = session.request(headers);
        let ok = false;
        req.on('trailers', (h) => (ok = h['grpc-status'] === '0'));
        req.on('data', () => {});
        req.on('end', () => {
          if (ok) latencies.push(performance.now() - t0);
          else failures++;
          one();
        });
        req.on('error', () => {
          failures++;
          one();
        });
        req.end(frames[next]);
        next = next + 1 === frames.length ? 0 : next + 1;
      };
      one();
    });
  const opened = Array.from({ length: sessions }, () => connect(u.origin));
  const t0 = performance.now();
  await Promise.all(opened.flatMap((s) => Array.from({ length: streams }, () => loop(s))));
  const elapsed = (performance.now() - t0) / 1000;
  for (const s of opened) s.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  process.stdout.write(`${JSON.stringify({ requests: latencies.length, rps: latencies.length / elapsed, p50ms: at(0.5), p99ms: at(0.99), failures })}\n`);
}

if (process.argv[1]?.endsWith('grpc-cycle.ts')) void main();
