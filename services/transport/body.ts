/**
 * Request bodies read whole, within a size limit, for the REST gateway and Connect unary calls.
 *
 * A body over the limit is answered at once, but the connection is not cut: what the client is
 * still sending is read and dropped (up to {@link DRAIN_LIMIT_BYTES}), because a client that
 * writes its whole body before reading the answer (Node's `fetch`, many HTTP/1.1 clients) gets
 * `EPIPE`/`ECONNRESET` instead of the answer when the server closes or resets the socket under
 * it. Nothing is kept while draining, so memory stays bounded by the limit.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import type { NodeServerRequest } from './gateway/gateway.js';
import { invalidField } from './gateway/json.js';
import { headerOf } from './headers.js';

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
    done(new BodyTooLarge(max));
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
    done(new BodyTooLarge(max));
    return;
  }
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
}

/** Reads and drops the rest of a body; past DRAIN_LIMIT_BYTES the connection is cut. */
export function drain(req: NodeServerRequest, already: number): void {
  let seen = already;
  req.on('data', (chunk: Buffer | string) => {
    seen += chunk.length;
    if (seen > DRAIN_LIMIT_BYTES) req.socket?.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}

/**
 * The body parsed as JSON (undefined when empty). Throws BodyTooLarge, or `invalid_argument`
 * for a compressed or malformed body.
 */
export async function readJsonBody(req: NodeServerRequest, max: number): Promise<JsonValue | undefined> {
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    drain(req, 0);
    throw invalidField('', `content-encoding ${encoding} is not supported; send plain JSON`);
  }
  return jsonOfBody(await readBody(req, max));
}

/** A JSON body's value (undefined when empty); `invalid_argument` when it is not JSON. */
export function jsonOfBody(bytes: Buffer): JsonValue | undefined {
  const text = bytes.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    throw invalidField('', `request body is not valid JSON: ${(err as Error).message}`);
  }
}
