/**
 * Watch messages as the gRPC frames the lean path writes (lean-watch.ts): a 5-byte envelope head
 * (flag, big-endian length), then the message. A revision's message and a heartbeat are the same
 * for every stream of their tenant at a revision, so each is encoded once and the same bytes are
 * written to every stream (kept as long as the message object is: shared-reads.ts and fanout.ts
 * share those objects, never modified).
 */
import { toBinary } from '@bufbuild/protobuf';
import { WatchResponseSchema, type WatchResponse } from '../../../gen/authz/v1/snapshot_service_pb.js';

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

/**
 * The bytes of a message, as one or two buffers. A snapshot chunk carried as its encoded bytes
 * (one unknown field 1, see stream.ts snapshotParts) is written without a copy: the envelope's
 * head and the field's tag, then those bytes, which hold the field's length and the chunk.
 * protobuf-es would write exactly these bytes for it (stream.test.ts).
 */
export function framesOf(msg: WatchResponse): Buffer[] {
  const unknown = msg.$unknown;
  if (msg.event.case === undefined && unknown?.length === 1 && unknown[0].no === 1 && unknown[0].wireType === 2) {
    const data = unknown[0].data;
    const head = envelopeHead(1 + data.length, 1);
    head[5] = 0x0a; // field 1, length-delimited
    return [head, Buffer.from(data.buffer, data.byteOffset, data.byteLength)];
  }
  if ((msg.event.case === 'changes' || msg.event.case === 'heartbeat') && unknown === undefined) {
    const value = msg.event.value;
    let bytes = encoded.get(value);
    if (bytes === undefined) encoded.set(value, (bytes = enveloped(toBinary(WatchResponseSchema, msg))));
    return [bytes];
  }
  return [enveloped(toBinary(WatchResponseSchema, msg))];
}
