/**
 * Watch messages as the gRPC frames the lean path writes (lean-watch.ts): a 5-byte envelope head
 * (flag, big-endian length), then the message. A revision's message and a heartbeat are the same
 * for every stream of their tenant at a revision, so each is encoded once per encoding and the
 * same bytes are written to every stream (kept as long as the message object is: shared-reads.ts
 * and fanout.ts share those objects, never modified).
 *
 * Compression is negotiated per stream (lean-watch.ts responseEncoding): a stream that accepts
 * gzip gets every message of at least 1 KiB gzipped, flag 1, as connect-node writes it (its
 * compressMinBytes, and the same zlib defaults, so the same bytes: frames.test.ts). Compressing
 * runs on libuv's thread pool (`prepareFrames`), once per revision for all the gzip streams, and
 * per stream for a snapshot chunk, before the message is queued.
 */
import { gzip, gzipSync } from 'node:zlib';
import { toBinary } from '@bufbuild/protobuf';
import { WatchResponseSchema, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';

/** How a stream's messages are written: as they are, or gzipped from `COMPRESS_MIN_BYTES` on. */
export type FrameEncoding = 'identity' | 'gzip';

/** connect-node's compressMinBytes default: smaller messages are not worth compressing. */
export const COMPRESS_MIN_BYTES = 1024;

/** A message's envelope head: flag 0 (not compressed), then its length, big-endian; `extra` bytes of room after it. */
export function envelopeHead(length: number, extra: number): Buffer {
  const head = Buffer.allocUnsafe(5 + extra);
  head[0] = 0;
  head.writeUInt32BE(length, 1);
  return head;
}

/** A whole message in its envelope. */
export function enveloped(message: Uint8Array): Buffer {
  const out = envelopeHead(message.length, message.length);
  out.set(message, 5);
  return out;
}

/** The envelope of a shared message (a revision's changes, a heartbeat), by its event's value. */
const encoded = new WeakMap<object, Buffer>();
/** The same, gzipped (or in flight), for the streams that accept gzip. */
const gzipped = new WeakMap<object, Buffer | Promise<Buffer>>();

/** The shared message's event value, when the message is one that every stream of a tenant sends alike. */
function sharedValue(msg: WatchResponse): object | undefined {
  return (msg.event.case === 'changes' || msg.event.case === 'heartbeat') && msg.$unknown === undefined ? msg.event.value : undefined;
}

/** A compressed message in its envelope: flag 1, the length of the compressed bytes. */
function compressedFrame(compressed: Uint8Array): Buffer {
  const out = enveloped(compressed);
  out[0] = 1;
  return out;
}

/** The message's bytes, unframed, from its identity frames (a kept chunk's head and bytes joined). */
function unframed(frames: Buffer[]): Buffer {
  return frames.length === 1 ? frames[0].subarray(5) : Buffer.concat(frames).subarray(5);
}

/** Gzips a message of at least COMPRESS_MIN_BYTES on the thread pool; a smaller one stays as it is. */
function gzipFrame(msg: WatchResponse): Promise<Buffer> {
  const frames = identityFrames(msg);
  const bytes = unframed(frames);
  if (bytes.length < COMPRESS_MIN_BYTES) return Promise.resolve(frames.length === 1 ? frames[0] : Buffer.concat(frames));
  return new Promise((resolve, reject) => gzip(bytes, {}, (err, out) => (err ? reject(err) : resolve(compressedFrame(out)))));
}

/**
 * The frames of `msg` in `encoding`, compressed off the event loop: undefined when there is
 * nothing to prepare (identity). A shared message is compressed once for every stream (later
 * calls get the same promise); another message's frames are the caller's to keep.
 */
export function prepareFrames(msg: WatchResponse, encoding: FrameEncoding): Promise<Buffer[]> | undefined {
  if (encoding === 'identity') return undefined;
  const value = sharedValue(msg);
  if (value === undefined) return gzipFrame(msg).then((f) => [f]);
  let cached = gzipped.get(value);
  if (cached === undefined) {
    const pending = gzipFrame(msg);
    gzipped.set(value, (cached = pending));
    pending.then((f) => gzipped.set(value, f), () => gzipped.delete(value));
  }
  return Promise.resolve(cached).then((f) => [f]);
}

/**
 * The bytes of a message, as one or two buffers. A snapshot chunk carried as its encoded bytes
 * (one unknown field 1, see stream.ts snapshotParts) is written without a copy: the envelope's
 * head and the field's tag, then those bytes, which hold the field's length and the chunk.
 * protobuf-es would write exactly these bytes for it (stream.test.ts).
 */
export function framesOf(msg: WatchResponse, encoding: FrameEncoding = 'identity'): Buffer[] {
  if (encoding === 'identity') return identityFrames(msg);
  const value = sharedValue(msg);
  const cached = value === undefined ? undefined : gzipped.get(value);
  if (cached instanceof Buffer) return [cached];
  // Not prepared (prepareFrames): compressed here, on the event loop.
  const frames = identityFrames(msg);
  const bytes = unframed(frames);
  if (bytes.length < COMPRESS_MIN_BYTES) return frames;
  const frame = compressedFrame(gzipSync(bytes));
  if (value !== undefined) gzipped.set(value, frame);
  return [frame];
}

function identityFrames(msg: WatchResponse): Buffer[] {
  const unknown = msg.$unknown;
  if (msg.event.case === undefined && unknown?.length === 1 && unknown[0].no === 1 && unknown[0].wireType === 2) {
    const data = unknown[0].data;
    const head = envelopeHead(1 + data.length, 1);
    head[5] = 0x0a; // field 1, length-delimited
    return [head, Buffer.from(data.buffer, data.byteOffset, data.byteLength)];
  }
  const value = sharedValue(msg);
  if (value !== undefined) {
    let bytes = encoded.get(value);
    if (bytes === undefined) encoded.set(value, (bytes = enveloped(toBinary(WatchResponseSchema, msg))));
    return [bytes];
  }
  return [enveloped(toBinary(WatchResponseSchema, msg))];
}
