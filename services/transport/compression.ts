/**
 * Compressed request bodies (Connect's `content-encoding`, gRPC's `grpc-encoding`), inflated here
 * before any message is decoded, so that a compressed message passes the same checks as a plain
 * one (the binary scanner, the JSON checker: each naming the field) on connect-node's path and on
 * the lean decision path alike, and is refused with the same errors. Inflating runs on libuv's
 * thread pool (zlib's callback API), bounded by the body limit after inflation.
 */
import { brotliDecompress, gunzip } from 'node:zlib';
import { BodyTooLarge } from './body.js';
import { invalidField } from './gateway/json.js';

/** The request encodings the server accepts (connect-node's `acceptCompression`: gzip and br). */
export type Encoding = 'gzip' | 'br';

/**
 * What a `content-encoding` / `grpc-encoding` header asks: 'identity' for none, an Encoding, or
 * undefined for one the server does not accept (connect-node answers those).
 */
export function encodingOf(header: string | string[] | undefined): Encoding | 'identity' | undefined {
  if (header === undefined || header === 'identity') return 'identity';
  return header === 'gzip' || header === 'br' ? header : undefined;
}

/**
 * `data` inflated: BodyTooLarge past `max` bytes (resource_exhausted, as a plain body over the
 * limit), `invalid_argument` for data that is not of the encoding. Empty data is empty.
 */
export function inflate(encoding: Encoding, data: Uint8Array, max: number): Promise<Buffer> {
  if (data.length === 0) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) return reject(new BodyTooLarge(max));
      reject(invalidField('', `the ${encoding === 'gzip' ? 'gzip' : 'brotli'} data does not inflate: ${err.message}`));
    };
    if (encoding === 'gzip') gunzip(data, { maxOutputLength: max }, done);
    else brotliDecompress(data, { maxOutputLength: max }, done);
  });
}

/** The gRPC message of a unary call's body that is flagged compressed without a `grpc-encoding`. */
export const UNDECLARED_COMPRESSION = 'the message is flagged compressed, but grpc-encoding names no compression';

/**
 * A unary gRPC / gRPC-Web body with its compressed envelopes inflated and flagged plain (other
 * envelopes as they are), or the body itself when nothing is compressed.
 */
export async function inflateEnvelopes(body: Buffer, encoding: Encoding | 'identity', max: number): Promise<Buffer> {
  let compressed = false;
  for (let at = 0; at + 5 <= body.length; at += 5 + body.readUInt32BE(at + 1)) if (body[at] & 1) compressed = true;
  if (!compressed) return body;
  if (encoding === 'identity') throw invalidField('', UNDECLARED_COMPRESSION);
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at];
    const end = Math.min(body.length, at + 5 + body.readUInt32BE(at + 1));
    if (flags & 1) {
      const message = await inflate(encoding, body.subarray(at + 5, end), max);
      const head = Buffer.alloc(5);
      head[0] = flags & ~1;
      head.writeUInt32BE(message.length, 1);
      parts.push(head, message);
    } else {
      parts.push(body.subarray(at, end));
    }
    at = end;
  }
  // Bytes after the last whole envelope header stay, for the decoder to refuse as it would.
  return Buffer.concat(at < body.length ? [...parts, body.subarray(at)] : parts);
}
