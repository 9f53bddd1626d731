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

/**
 * The one message of a unary gRPC / gRPC-Web body (after inflateEnvelopes): exactly one plain
 * envelope, else `invalid_argument`, on connect-node's path and the lean path alike.
 */
export function unaryMessage(body: Buffer): Buffer {
  if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
    throw invalidField('', 'a unary gRPC call holds exactly one message');
  }
  return body.subarray(5);
}

/** The error of a unary call's body whose message is flagged compressed without a `grpc-encoding`. */
export const UNDECLARED_COMPRESSION = 'the message is flagged compressed, but grpc-encoding names no compression';

/**
 * A unary gRPC / gRPC-Web body with its first message inflated and flagged plain when it is
 * compressed (anything after it as it is), or the body itself when it is not. A unary call holds
 * one message: inflating only the first bounds the work and memory of a body of many small
 * compressed envelopes to one message of at most `max` bytes (the decoders refuse the rest).
 */
export async function inflateEnvelopes(body: Buffer, encoding: Encoding | 'identity', max: number): Promise<Buffer> {
  if (body.length < 5 || (body[0] & 0x81) !== 1) return body;
  if (encoding === 'identity') throw invalidField('', UNDECLARED_COMPRESSION);
  const end = Math.min(body.length, 5 + body.readUInt32BE(1));
  const message = await inflate(encoding, body.subarray(5, end), max);
  const head = Buffer.alloc(5);
  head[0] = body[0] & ~1;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message, body.subarray(end)]);
}
