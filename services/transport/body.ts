/**
 * Request bodies read whole, within a size limit, for the REST gateway and Connect unary calls.
 *
 * A body over the limit, or of a caller refused from its headers, is answered at once, but the
 * connection is not cut: what the client is still sending is read and dropped (up to
 * {@link DRAIN_LIMIT_BYTES}), because a client that writes its whole body before reading the
 * answer (Node's `fetch`, many HTTP/1.1 clients) gets `EPIPE`/`ECONNRESET` instead of the answer
 * when the server closes or resets the socket under it. When the connection must close after the
 * answer (`Connection: close`, HTTP/1.0), it is closed the way RFC 9112 §9.6 asks: the server's
 * side first, then the rest of the body is read until the client closes its own. Nothing is kept
 * while draining, so memory stays bounded by the limit.
 */
import type { Socket } from 'node:net';
import type { JsonValue } from '@bufbuild/protobuf';
import type { NodeServerRequest } from './node-types.js';
import { invalidField } from './gateway/json.js';
import { headerOf } from './headers.js';
import { parseJsonBody, type JsonBodyOf } from './json-scan.js';

/** How much of a too-large body is read and dropped before the connection is cut. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** Thrown when the body is over the limit; the rest of the body is being drained. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/** The whole body, or BodyTooLarge once it passes `max` bytes (see readBodyThen). */
export function readBody(req: NodeServerRequest, max: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => readBodyThen(req, max, (err, body) => (err ? reject(err) : resolve(body!))));
}

/**
 * Reads the whole body and calls `done` with it, or with BodyTooLarge once it passes `max` bytes
 * (by its declared `content-length` or by what arrives). Reads with listeners, never by async
 * iteration: leaving a `for await` early destroys the request, and with it an HTTP/1.1 socket.
 * A callback, so that a caller answering at once takes no microtask turn.
 */
export function readBodyThen(req: NodeServerRequest, max: number, done: (err: Error | undefined, body?: Buffer) => void): void {
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  // Once settled, later events are ignored rather than their listeners removed: nothing follows
  // 'end' but a possible 'error', and removing three listeners per request costs more than it saves.
  let settled = false;
  const tooLarge = () => {
    settled = true;
    req.off('data', onData);
    drain(req, size);
    void answerable(req).then(() => done(new BodyTooLarge(max)));
  };
  const onData = (chunk: Buffer | string) => {
    if (settled) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > max) return tooLarge();
    if (first === undefined) first = buf;
    else (chunks ??= [first]).push(buf);
  };
  const onEnd = () => {
    if (settled) return;
    settled = true;
    done(undefined, chunks ? Buffer.concat(chunks, size) : (first ?? Buffer.alloc(0)));
  };
  const onError = (err: Error) => {
    if (settled) return;
    settled = true;
    done(err);
  };
  const declared = Number(headerOf(req, 'content-length'));
  if (Number.isFinite(declared) && declared > max) {
    settled = true;
    drain(req, size);
    void answerable(req).then(() => done(new BodyTooLarge(max)));
    return;
  }
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
}

/**
 * Reads and drops the body of a request answered without it (a caller refused from its headers);
 * past DRAIN_LIMIT_BYTES the connection is cut. Resolves when the answer may be sent: at once on
 * HTTP/1.1 (the connection closes lingering, see lingerOnClose), once the body has been read on
 * HTTP/2, where an answer that ends the stream first leaves the client's stream half open, still
 * sending, and a client that queues whole bodies then runs out of session memory.
 */
export function dropBody(req: NodeServerRequest): Promise<void> {
  drain(req, 0);
  return answerable(req);
}

/** When a request whose body is being drained may be answered (see dropBody). */
function answerable(req: NodeServerRequest): Promise<void> {
  if (!('stream' in req) || req.complete) return Promise.resolve();
  return new Promise<void>((resolve) => {
    req.once('end', resolve);
    req.once('close', resolve);
    req.once('error', resolve);
  });
}

/** How long a closing HTTP/1.1 connection keeps reading what the client still sends after the answer. */
const LINGER_MS = 5_000;
const lingering = new WeakSet<Socket>();

/**
 * Makes Node's HTTP/1.1 server close `socket` after an answer by half-closing it (the answer is
 * flushed and followed by FIN) and reading on until the client closes, instead of destroying it
 * with the client's body still arriving, which resets the connection under a client that writes
 * before it reads. Node calls `destroySoon` only for a connection that must close after the answer.
 */
function lingerOnClose(socket: Socket): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/** Reads and drops the rest of a body; past DRAIN_LIMIT_BYTES the connection is cut. */
function drain(req: NodeServerRequest, already: number): void {
  if (req.httpVersionMajor === 1 && req.socket && !req.complete) lingerOnClose(req.socket);
  let seen = already;
  req.on('data', (chunk: Buffer | string) => {
    seen += chunk.length;
    if (seen > DRAIN_LIMIT_BYTES) req.socket?.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}

/**
 * The body parsed as JSON (undefined when empty; see parseJsonBody for `within`). Throws
 * BodyTooLarge, or `invalid_argument` for a compressed or malformed body.
 */
export async function readJsonBody(req: NodeServerRequest, max: number, within?: JsonBodyOf): Promise<JsonValue | undefined> {
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    drain(req, 0);
    throw invalidField('', `content-encoding ${encoding} is not supported; send plain JSON`);
  }
  return parseJsonBody(await readBody(req, max), within);
}
