/**
 * One child process of `watch-fanout-processes.ts`: `streams` Watch streams of one tenant over raw
 * HTTP/2, as sidecars call (gRPC, binary, nothing compressed, row blocks accepted), each on its
 * own connection unless `perConnection` says otherwise. The clients stay light so that the
 * control plane's CPU is what the parent measures: a message's frame is read for its event and
 * revision only (no decoding of its rows or changes).
 *
 * Reports to the parent over IPC, with wall-clock times (performance.timeOrigin + now, the same
 * clock in every process of the machine):
 * - `ready` once every stream holds a whole snapshot, with the lowest revision held;
 * - `held` when every stream of this process holds a revision (changes arrive in order);
 * - `dropped` when a stream ends (it is opened again from the revision it held, as a sidecar
 *   resumes, so later revisions still reach every stream).
 * On `{ type: 'stats' }` it answers heartbeats and messages received; on `{ type: 'stop' }` it
 * closes its connections and exits.
 */
import { connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import { WatchRequestSchema } from '../gen/authz/v1/snapshot_service_pb.js';

export interface ClientConfig {
  url: string;
  key: string;
  tenantId: string;
  streams: number;
  /** Streams multiplexed on one HTTP/2 connection (1: a connection each, as separate sidecars). */
  perConnection: number;
}

export type ClientReport =
  | { type: 'ready'; minHeld: number; at: number }
  | { type: 'held'; revision: number; at: number }
  | { type: 'dropped'; status: string; message: string; at: number }
  | { type: 'stats'; heartbeats: number; messages: number; bytes: number; open: number };

const config = JSON.parse(process.argv[2]) as ClientConfig;
const send = (r: ClientReport) => process.send!(r);
const now = () => performance.timeOrigin + performance.now();

const PATH = '/authz.v1.SnapshotService/Watch';

/** A gRPC frame of the request (flag 0, length, message). */
function requestFrame(fromRevision: number): Buffer {
  const msg = toBinary(WatchRequestSchema, create(WatchRequestSchema, { tenantId: config.tenantId, fromRevision: BigInt(fromRevision), acceptRowBlocks: true }));
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  frame.set(msg, 5);
  return frame;
}

/** A varint at `at`: its value (as a double: revisions stay far below 2^53) and the offset after it. */
function varint(buf: Buffer, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    const b = buf[at++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [value, at];
    scale *= 128;
  }
}

/** Skips a field of wire type `wire` at `at`. */
function skip(buf: Buffer, at: number, wire: number): number {
  if (wire === 0) return varint(buf, at)[1];
  if (wire === 1) return at + 8;
  if (wire === 5) return at + 4;
  const [len, after] = varint(buf, at);
  return after + len;
}

/**
 * The revision field (2 in SnapshotChunk and RevisionChanges) and, for a chunk, `last` (4), of
 * the submessage in `buf[from, to)`; everything else is skipped unread.
 */
function revisionOf(buf: Buffer, from: number, to: number): { revision: number; last: boolean } {
  let revision = 0;
  let last = false;
  let at = from;
  while (at < to) {
    const [tag, after] = varint(buf, at);
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 2 && wire === 0) [revision, at] = varint(buf, after);
    else if (field === 4 && wire === 0) {
      const [v, next] = varint(buf, after);
      last = v !== 0;
      at = next;
    } else at = skip(buf, after, wire);
  }
  return { revision, last };
}

let heartbeats = 0;
let messages = 0;
let bytes = 0;
let open = 0;
let ready = false;
const held = new Array<number>(config.streams).fill(0);
let withSnapshot = 0;
/** Per revision after ready, how many streams hold it. */
const holding = new Map<number, number>();

function advance(s: number, revision: number): void {
  const before = held[s];
  if (revision <= before) return;
  held[s] = revision;
  if (before === 0) {
    withSnapshot++;
    if (!ready && withSnapshot === config.streams) {
      ready = true;
      send({ type: 'ready', minHeld: Math.min(...held), at: now() });
    }
  }
  if (!ready) return;
  // A stream may skip ahead (a fresh snapshot after a resume): it then holds every revision up to it.
  for (let r = before + 1; r <= revision; r++) {
    const n = (holding.get(r) ?? 0) + 1;
    if (n === config.streams) {
      holding.delete(r);
      send({ type: 'held', revision: r, at: now() });
    } else holding.set(r, n);
  }
}

/** Reads the frames of stream `s` as they come, without copying unless a frame spans chunks. */
function frameReader(s: number): (chunk: Buffer) => void {
  let pending: Buffer | undefined;
  return (chunk) => {
    bytes += chunk.length;
    const buf = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
    pending = undefined;
    let at = 0;
    while (buf.length - at >= 5) {
      const len = buf.readUInt32BE(at + 1);
      if (buf.length - at - 5 < len) break;
      const start = at + 5;
      const end = start + len;
      messages++;
      // WatchResponse: one field, the event: 1 snapshot, 2 changes, 3 heartbeat.
      const [tag, after] = varint(buf, start);
      const [, body] = varint(buf, after);
      const field = tag >>> 3;
      if (field === 3) heartbeats++;
      else if (field === 2) advance(s, revisionOf(buf, body, end).revision);
      else if (field === 1) {
        const c = revisionOf(buf, body, end);
        if (c.last) advance(s, c.revision);
      }
      at = end;
    }
    if (at < buf.length) pending = buf.subarray(at);
  };
}

const sessions: ClientHttp2Session[] = [];
let stopping = false;

function session(s: number): ClientHttp2Session {
  const i = Math.floor(s / config.perConnection);
  let c = sessions[i];
  if (c === undefined || c.closed || c.destroyed) {
    c = sessions[i] = connect(config.url);
    c.on('error', () => undefined);
  }
  return c;
}

function openStream(s: number): void {
  let stream: ClientHttp2Stream;
  try {
    stream = session(s).request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers', 'x-api-key': config.key });
  } catch (err) {
    reopen(s, 'session', String(err));
    return;
  }
  open++;
  let status = '';
  let message = '';
  stream.on('data', frameReader(s));
  stream.on('trailers', (t) => {
    status = String(t['grpc-status'] ?? '');
    message = String(t['grpc-message'] ?? '');
  });
  stream.on('response', (h) => {
    if (h['grpc-status'] !== undefined) {
      status = String(h['grpc-status']);
      message = String(h['grpc-message'] ?? '');
    }
  });
  stream.on('error', (err) => (message ||= String(err)));
  stream.on('close', () => {
    open--;
    if (!stopping) reopen(s, status, message);
  });
  stream.end(requestFrame(held[s]));
}

/** A stream ended: counted, then opened again from what it held (after a short pause, as a sidecar backs off). */
function reopen(s: number, status: string, message: string): void {
  send({ type: 'dropped', status, message: decodeURIComponent(message), at: now() });
  setTimeout(() => openStream(s), 100);
}

process.on('message', (m: { type: string }) => {
  if (m.type === 'stats') send({ type: 'stats', heartbeats, messages, bytes, open });
  if (m.type === 'stop') {
    stopping = true;
    for (const c of sessions) c?.destroy();
    setTimeout(() => process.exit(0), 50);
  }
});
process.on('disconnect', () => process.exit(0));

// Opened in small groups, as a rollout starts pods: the first streams read the snapshot, the rest
// follow that read or are served the kept copy.
for (let s = 0; s < config.streams; s++) {
  openStream(s);
  if (s % 25 === 24) await new Promise((r) => setTimeout(r, 5));
}
