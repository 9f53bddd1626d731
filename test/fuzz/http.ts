/**
 * Sending one fuzz request on one surface of a process, and what came back, in one form for
 * every surface: REST, Connect JSON and Connect binary (`application/proto`) and gRPC-Web (the
 * status in the trailer frame or the headers) over one kept-alive HTTP/1.1 connection per
 * process, and gRPC over one kept HTTP/2 session per process (prior knowledge, the status in
 * trailers). An error answer gets its
 * Connect code, message and ErrorInfo fields on every surface; a success its response as proto
 * JSON.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { gunzipSync, gzipSync } from 'node:zlib';
import { fromBinary, toJson, type DescMessage } from '@bufbuild/protobuf';
import type { ConnectError } from '@connectrpc/connect';
import { codeToHttpStatus, codeToString } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { trailerFlag, trailerParse } from '@connectrpc/connect/protocol-grpc-web';
import { ErrorInfoSchema } from '../../gen/authz/v1/error_reason_pb.js';
import type { HttpRequest } from './requests.js';

export const SURFACES = ['rest', 'connect', 'connect-proto', 'grpc', 'grpc-web'] as const;
/** `connect` is Connect with JSON, `connect-proto` Connect with binary protobuf. */
export type Surface = (typeof SURFACES)[number];
export const isBinary = (s: Surface): boolean => s === 'connect-proto' || s === 'grpc' || s === 'grpc-web';
export const isGrpc = (s: Surface): boolean => s === 'grpc' || s === 'grpc-web';

export interface Answer {
  /** The HTTP status; for gRPC and gRPC-Web the one Connect gives the call's code (200 for OK). */
  status: number;
  /** The HTTP status the server really sent (gRPC: 200 whatever the call's status). */
  httpStatus: number;
  /** The gRPC status of a gRPC or gRPC-Web call (`grpc-status`). */
  grpcStatus?: number;
  text: string;
  /** The response as JSON (binary responses decoded and written as proto JSON). */
  json?: unknown;
  /** The Connect code of an error answer (`invalid_argument`, …), on every surface. */
  code?: string;
  message?: string;
  /** The `field` of every authz.v1.ErrorInfo detail of an error answer. */
  fields: string[];
  /** When the request was sent and when the whole answer had arrived (ms since epoch). */
  start: number;
  end: number;
  /** The request got no answer (connection reset, timeout, a gRPC stream ended without a status). */
  networkError?: string;
}

export interface SendOptions {
  /** The method's response message, to decode a binary success. */
  output?: DescMessage;
  timeoutMs?: number;
}

export async function send(base: string, surface: Surface, req: HttpRequest, key: string | undefined, opts: SendOptions = {}): Promise<Answer> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const start = Date.now();
  try {
    if (surface === 'grpc') return await sendGrpc(base, req, key, opts, start, timeoutMs);
    return await sendHttp1(base, surface, req, key, opts, start, timeoutMs);
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { status: 0, httpStatus: 0, text: '', fields: [], start, end: Date.now(), networkError: `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? ''} ${e.cause.message ?? ''})` : ''}` };
  }
}

const gzip = (b: string | Uint8Array) => new Uint8Array(gzipSync(b));

/** A gRPC / gRPC-Web envelope holding `message`, with `flags` (1: compressed). */
export function envelope(message: Uint8Array, flags = 0): Uint8Array {
  const framed = Buffer.alloc(5 + message.length);
  framed[0] = flags;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/**
 * The body and headers of a request on a surface. Bodies of an odd byte length go
 * gzip-compressed (Connect: `content-encoding`; gRPC: `grpc-encoding` and the envelope's flag),
 * so compressed messages meet every invariant too; a request that brings its own envelope
 * (`req.envelope`, a mutation of the frame) is sent as it is.
 */
export function wireOf(surface: Surface, req: HttpRequest, key: string | undefined): { headers: Record<string, string>; body?: Uint8Array | string } {
  const headers: Record<string, string> = {};
  if (key) headers['x-api-key'] = key;
  const odd = req.body !== undefined && Buffer.byteLength(req.body) % 2 === 1;
  switch (surface) {
    case 'rest':
      if (req.body !== undefined) headers['content-type'] = 'application/json';
      return { headers, body: req.body };
    case 'connect':
    case 'connect-proto':
      headers['content-type'] = surface === 'connect' ? 'application/json' : 'application/proto';
      headers['connect-protocol-version'] = '1';
      if (req.body !== undefined && odd) {
        headers['content-encoding'] = 'gzip';
        return { headers, body: gzip(req.body) };
      }
      return { headers, body: req.body };
    case 'grpc':
    case 'grpc-web': {
      headers['content-type'] = surface === 'grpc' ? 'application/grpc+proto' : 'application/grpc-web+proto';
      if (surface === 'grpc') headers.te = 'trailers';
      else headers['x-grpc-web'] = '1';
      if (req.envelope) return { headers, body: req.envelope };
      const message = typeof req.body === 'string' ? Buffer.from(req.body) : (req.body ?? new Uint8Array());
      if (odd) {
        headers['grpc-encoding'] = 'gzip';
        return { headers, body: envelope(gzip(message), 1) };
      }
      return { headers, body: envelope(message) };
    }
  }
}

/**
 * One kept-alive HTTP/1.1 connection per process, as a client with a connection pool of one
 * uses it: a request goes out once the previous one is done, both its answer read and its body
 * sent, so a connection a server leaves unusable shows on the request that left it so.
 */
const agents = new Map<string, http.Agent>();

function agentFor(base: string): http.Agent {
  let a = agents.get(base);
  if (!a) {
    a = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.set(base, a);
  }
  return a;
}

interface Exchange {
  status: number;
  headers: Headers;
  bytes: Buffer;
  end: number;
  error?: string;
}

/**
 * An HTTP/1.1 request on the process's kept-alive connection. Done when the answer has been read
 * and the body sent: a server may answer before it has read the body (a refusal from the
 * headers), and must then read the rest or close the connection, else the client cannot finish
 * sending it.
 */
export function http1(base: string, method: string, path: string, headers: Record<string, string>, body: string | Uint8Array | undefined, timeoutMs = 15_000): Promise<Exchange> {
  return new Promise((resolve) => {
    const u = new URL(base);
    let answer: Omit<Exchange, 'error'> | undefined;
    let sent = false;
    let settled = false;
    const done = (error?: string) => {
      if (settled) return;
      if (!error && !(answer && sent)) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...(answer ?? { status: 0, headers: new Headers(), bytes: Buffer.alloc(0), end: Date.now() }), error });
    };
    const req = http.request({ agent: agentFor(base), host: u.hostname, port: u.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => done(e.message));
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        answer = { status: res.statusCode ?? 0, headers: h, bytes: Buffer.concat(chunks), end: Date.now() };
        done();
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('finish', () => {
      sent = true;
      done();
    });
    req.on('error', (e: Error & { code?: string }) => {
      done(answer
        ? `the server answered ${answer.status} before reading the whole body, then neither read the rest nor closed the connection: the client could not finish sending it, and the connection was reset ${Date.now() - answer.end} ms later (${e.code ?? e.message})`
        : `${e.code ?? ''} ${e.message}`.trim());
    });
    req.end(body);
  });
}

async function sendHttp1(base: string, surface: Surface, req: HttpRequest, key: string | undefined, opts: SendOptions, start: number, timeoutMs: number): Promise<Answer> {
  const { headers, body } = wireOf(surface, req, key);
  const x = await http1(base, surface === 'rest' ? req.method : 'POST', req.path, headers, body, timeoutMs);
  const answer = answerOf(surface, x, opts, start);
  if (x.error) answer.networkError = x.error;
  return answer;
}

function answerOf(surface: Surface, x: Exchange, opts: SendOptions, start: number): Answer {
  const { bytes, end } = x;
  if (x.status === 0) return { status: 0, httpStatus: 0, text: '', fields: [], start, end };
  if (surface === 'grpc-web') return grpcWebAnswer(x.status, x.headers, bytes, opts, start, end);
  const binary = surface === 'connect-proto' && x.status === 200 && (x.headers.get('content-type') ?? '').startsWith('application/proto');
  const answer: Answer = { status: x.status, httpStatus: x.status, text: binary ? `<${bytes.length} bytes of protobuf>` : bytes.toString('utf8'), fields: [], start, end };
  if (binary) {
    answer.json = decodeOutput(opts.output, bytes);
    return answer;
  }
  try {
    answer.json = answer.text ? JSON.parse(answer.text) : undefined;
  } catch {
    answer.json = undefined;
  }
  if (x.status !== 200 && answer.json && typeof answer.json === 'object' && !Array.isArray(answer.json)) {
    const j = answer.json as { code?: unknown; message?: unknown };
    if (typeof j.code === 'string') answer.code = j.code;
    if (typeof j.message === 'string') answer.message = j.message;
    answer.fields = jsonErrorFields(answer.json);
  }
  return answer;
}

/** A success's response message as proto JSON (undefined when it cannot be decoded). */
function decodeOutput(output: DescMessage | undefined, bytes: Uint8Array): unknown {
  if (!output) return undefined;
  try {
    return toJson(output, fromBinary(output, bytes), { alwaysEmitImplicit: true });
  } catch {
    return undefined;
  }
}

/** The ErrorInfo fields of a JSON error (REST: decoded detail; Connect: base64 protobuf). */
function jsonErrorFields(json: unknown): string[] {
  const details = (json as { details?: { type?: string; field?: string; value?: string }[] } | undefined)?.details ?? [];
  const out: string[] = [];
  for (const d of Array.isArray(details) ? details : []) {
    if (d?.type !== ErrorInfoSchema.typeName) continue;
    if (typeof d.field === 'string') out.push(d.field);
    else if (typeof d.value === 'string') {
      try {
        out.push(fromBinary(ErrorInfoSchema, Buffer.from(d.value, 'base64')).field);
      } catch {
        // not an ErrorInfo after all
      }
    }
  }
  return out.filter(Boolean);
}

/** An answer from a gRPC status (trailers, or the headers of a trailers-only answer) and the response envelopes. */
function grpcAnswer(httpStatus: number, status: Headers | undefined, data: Buffer, opts: SendOptions, start: number, end: number): Answer {
  const answer: Answer = { status: httpStatus, httpStatus, text: '', fields: [], start, end };
  if (httpStatus !== 200) {
    answer.text = data.toString('utf8').slice(0, 2000);
    return answer;
  }
  const raw = status?.get('grpc-status');
  if (raw === null || raw === undefined) {
    answer.networkError = 'the call ended without a grpc-status';
    return answer;
  }
  answer.grpcStatus = Number(raw);
  const err: ConnectError | undefined = status ? findTrailerError(status) : undefined;
  if (err) {
    answer.code = codeToString(err.code);
    answer.message = err.rawMessage;
    answer.status = codeToHttpStatus(err.code);
    answer.text = `grpc-status ${raw}: ${err.rawMessage}`;
    answer.fields = err.findDetails(ErrorInfoSchema).map((d) => d.field).filter(Boolean);
    return answer;
  }
  // One response envelope: the message.
  if (data.length >= 5) {
    const n = data.readUInt32BE(1);
    answer.json = decodeOutput(opts.output, data.subarray(5, 5 + n));
    answer.text = `<${n} bytes of protobuf>`;
  }
  return answer;
}

function grpcWebAnswer(status: number, headers: Headers, bytes: Buffer, opts: SendOptions, start: number, end: number): Answer {
  if (status !== 200 || headers.has('grpc-status')) return grpcAnswer(status, headers, bytes, opts, start, end);
  let message = Buffer.alloc(0);
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    const frame = bytes.subarray(at + 5, at + 5 + length);
    if (bytes[at] & trailerFlag) {
      let trailers: Headers;
      try {
        // A server may compress the trailer frame as it does messages (the flag's low bit).
        trailers = trailerParse(bytes[at] & 1 ? gunzipSync(frame) : frame);
      } catch (err) {
        // Kept with the bytes that could not be read, so that the report shows them.
        const answer = grpcAnswer(200, undefined, message, opts, start, end);
        answer.networkError = `unreadable grpc-web trailers (${(err as Error).message}); body of ${bytes.length} bytes, frame at ${at}: ${bytes.subarray(0, 600).toString('hex')}`;
        return answer;
      }
      return grpcAnswer(200, trailers, message, opts, start, end);
    }
    message = Buffer.concat([bytes.subarray(at, at + 5), frame]);
    at += 5 + length;
  }
  return grpcAnswer(200, undefined, message, opts, start, end);
}

/** One HTTP/2 session per process, kept while it works (gRPC clients keep theirs). */
const sessions = new Map<string, http2.ClientHttp2Session>();

function sessionTo(base: string): http2.ClientHttp2Session {
  const open = sessions.get(base);
  if (open && !open.closed && !open.destroyed) return open;
  const s = http2.connect(base);
  s.on('error', () => sessions.delete(base));
  s.on('close', () => sessions.delete(base));
  s.on('goaway', () => sessions.delete(base));
  s.unref();
  sessions.set(base, s);
  return s;
}

/** Closes the kept connections and sessions (at the end of a run). */
export function closeSessions(): void {
  for (const s of sessions.values()) s.close();
  sessions.clear();
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

function sendGrpc(base: string, req: HttpRequest, key: string | undefined, opts: SendOptions, start: number, timeoutMs: number): Promise<Answer> {
  const { headers, body } = wireOf('grpc', req, key);
  return new Promise((resolve) => {
    const session = sessionTo(base);
    const stream = session.request({ ':method': 'POST', ':path': req.path, ...headers });
    let httpStatus = 0;
    let status: Headers | undefined;
    const chunks: Buffer[] = [];
    const toHeaders = (h: http2.IncomingHttpHeaders) => {
      const out = new Headers();
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : String(v));
      return out;
    };
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), timeoutMs);
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const end = Date.now();
      if (httpStatus === 0) {
        resolve({ status: 0, httpStatus: 0, text: '', fields: [], start, end, networkError: `the stream closed without an answer (RST_STREAM ${stream.rstCode})` });
        // A client reconnects after a broken call: the next case starts on a new session.
        sessions.delete(base);
        session.close();
        return;
      }
      resolve(grpcAnswer(httpStatus, status, Buffer.concat(chunks), opts, start, end));
      // The call is over once its status is in, as for gRPC clients: what is left of the
      // request is not sent (a server may answer before it has read the whole body).
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    };
    stream.on('response', (h, flags) => {
      httpStatus = Number(h[':status']);
      if (flags & http2.constants.NGHTTP2_FLAG_END_STREAM || h['grpc-status'] !== undefined) status = toHeaders(h);
    });
    stream.on('trailers', (t) => (status = toHeaders(t)));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined); // finish() tells what happened
    // The server's side ends with the status: the answer is whole.
    stream.on('end', finish);
    stream.on('close', finish);
    stream.resume();
    stream.end(body);
  });
}

/** A short, printable form of a body (long strings and arrays elided). */
export function trim(text: string | Uint8Array | undefined, max = 600): string {
  if (text === undefined) return '(none)';
  // Bytes in hex (head and tail): the report file has them whole (FUZZ_REPORT_DIR).
  const head = Math.floor(max / 4);
  const tail = Math.floor(max / 8);
  const s = typeof text === 'string' ? text
    : `<${text.length} bytes, hex> ${Buffer.from(text.subarray(0, head)).toString('hex')}${text.length > head ? `…${Buffer.from(text.subarray(Math.max(head, text.length - tail))).toString('hex')}` : ''}`;
  if (typeof text !== 'string') return s;
  const shown = JSON.stringify(s).slice(1, -1); // escapes NUL and lone surrogates visibly
  return shown.length <= max ? shown : `${shown.slice(0, max / 2)} … [${s.length} characters] … ${shown.slice(-max / 4)}`;
}
