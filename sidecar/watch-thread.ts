/**
 * Where the sidecar receives its Watch stream: on the main thread through the connect client, or
 * on a worker thread ({@link WatchThread}) that hands each message over as it arrives. Both give
 * the same messages (their `WatchResponse` fields undecoded, for snapshot-wire.ts), the same
 * errors and the same cancellations: errors arrive as the same `ConnectError` (code, message,
 * metadata), and an aborted signal ends the iteration with `ConnectError.from(signal.reason)`.
 *
 * Why a thread: received on the main thread, a snapshot crosses only while that thread is free.
 * Indexing a 4 MiB chunk keeps it busy for ~100 ms, during which HTTP/2's 64 KiB connection
 * window lets almost nothing more arrive; then the next chunk comes in 64 KiB round trips. The
 * main thread sat idle 20–28% of a 2.1M-entity load waiting for bytes (a cpu profile of
 * bench/snapshot-scale.ts). The worker keeps reading (up to `readAheadBytes` ahead), so the next
 * chunk is whole when the main thread wants it. That needs a second CPU: on one, the worker's
 * receiving and collecting compete with the index build, and the load measured slower (see
 * {@link useWatchThread}). It also costs 50–70 MiB while loading, so it is off by default
 * (`SIDECAR_WATCH_THREAD`, sidecar/config.ts).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { rootCertificates } from 'node:tls';
import type { Worker } from 'node:worker_threads';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import type * as http2 from 'node:http2';
import { compressionGzip, createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { startWorker } from '../services/common/worker.js';
import { RAW_SNAPSHOT_SERVICE } from './snapshot-wire.js';

export interface WatchThreadConfig {
  baseUrl: string;
  /** PEM certificates trusted for an `https://` base URL besides the default roots. */
  ca?: string;
  gzip: boolean;
  /** HTTP/2 stream window of each Watch call. */
  streamWindowBytes: number;
  /** Bytes the worker receives beyond what the main thread has taken before it stops reading. */
  readAheadBytes: number;
}

/** A message's fields as protobuf-es gives unknown fields (see snapshot-wire.ts). */
export interface UnknownFields {
  $unknown: { no: number; wireType: number; data: Uint8Array }[];
}

/** Node's pool serves allocations under 4 KiB; a buffer this large is never the pool. */
const SOLE_BUFFER_MIN_BYTES = 64 * 1024;

/**
 * The buffer a message's fields lie in, when it holds that message and nothing else: every field
 * in one buffer of at least 64 KiB, the fields filling it but for their tags (at most 5 bytes
 * each; protobuf-es's `data` is what follows a field's tag). connect-node decodes each message
 * into a buffer of its own (or a decompressed one of its own), so a large message has one.
 */
export function soleBuffer(unknown: readonly { data: Uint8Array }[]): ArrayBuffer | undefined {
  if (unknown.length === 0) return undefined;
  const buffer = unknown[0].data.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.byteLength < SOLE_BUFFER_MIN_BYTES) return undefined;
  let total = 0;
  for (const f of unknown) {
    if (f.data.buffer !== buffer) return undefined;
    total += f.data.byteLength;
  }
  return total + 5 * unknown.length >= buffer.byteLength ? buffer : undefined;
}

/**
 * Frees a message's buffer at once, once the follower is done with it (nothing it keeps points
 * into it: rows are copied out as strings). Why: a snapshot chunk's 4 MiB buffer lives through
 * several scavenges while its rows are indexed, so V8 promotes it, and a promoted buffer is freed
 * only by a full collection; V8 counts such buffers as external memory and starts a full
 * collection (marking the whole growing index) every 64 MiB of them: 6 of the 8 of a 1M + 1M
 * load were "external memory pressure" (`--trace-incremental-marking`). Detached (moved into a
 * clone that dies young), its bytes leave V8's count at once.
 */
export function releaseMessage(msg: Partial<UnknownFields>): void {
  const buffer = soleBuffer(msg.$unknown ?? []);
  if (buffer !== undefined) structuredClone(buffer, { transfer: [buffer] });
}

/** `SnapshotService.Watch`, its messages' fields undecoded. */
export interface WatchSource {
  /** Resolves once calls can be made (a worker has loaded): its start-up is not a silent stream. */
  ready(): Promise<void>;
  watch(request: { tenantId: string; fromRevision: bigint; acceptRowBlocks: boolean }, opts: { signal: AbortSignal; headers: Record<string, string> }): AsyncIterable<Partial<UnknownFields>>;
  close(): Promise<void>;
}

/**
 * Sessions whose connection-level flow-control window is as wide as the stream's. HTTP/2 starts
 * a connection at 64 KiB whatever its streams' windows (Node has no option for it), so a 4 MiB
 * snapshot chunk crossed in 64 round trips, each waiting for this process to send a
 * WINDOW_UPDATE between index builds: 26% of a load's main thread was idle. Widened (once per
 * session, on its first stream), the control plane sends a chunk ahead while the previous one is
 * indexed: the 1M + 1M snapshot took 14.6–19.3 s (median 15.5) instead of 19.1–21.6 s, and less CPU
 * (16.0–17.8 s against 18.9–21.2 s; bench/snapshot-scale.ts, alternating). What may be in flight
 * stays bounded by the stream's window.
 */
export class WideWindowSessions extends Http2SessionManager {
  private readonly widened = new WeakSet<http2.ClientHttp2Session>();
  /** `ca`: PEM certificates trusted besides the default roots (an `https://` URL is always verified). */
  constructor(baseUrl: string, private readonly windowBytes: number, ca?: string) {
    super(baseUrl, undefined, {
      settings: { initialWindowSize: windowBytes },
      // Node's `ca` replaces its default roots: they are given again, so a public certificate still verifies.
      ...(ca === undefined ? {} : { ca: [...rootCertificates, ca] }),
    });
  }

  override async request(
    method: string, path: string, headers: http2.OutgoingHttpHeaders, options: Omit<http2.ClientSessionRequestOptions, 'signal'>,
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    const session = stream.session as http2.ClientHttp2Session | undefined;
    if (session !== undefined && !this.widened.has(session)) {
      this.widened.add(session);
      session.setLocalWindowSize(this.windowBytes);
    }
    return stream;
  }
}

/** The connect client the Watch stream is read with, on whichever thread reads it. */
export function rawWatchClient(config: WatchThreadConfig) {
  return createClient(RAW_SNAPSHOT_SERVICE, createGrpcTransport({
    baseUrl: config.baseUrl,
    acceptCompression: config.gzip ? [compressionGzip] : [],
    sessionManager: new WideWindowSessions(config.baseUrl, config.streamWindowBytes, config.ca),
  }));
}

/**
 * OpenSSL's certificate verification failures (X509_V_ERR_*, as Node names them in `err.code`)
 * and Node's host name check.
 */
const VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'CERT_SIGNATURE_FAILURE', 'CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED', 'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_CHAIN_TOO_LONG', 'CERT_REVOKED',
  'INVALID_CA', 'PATH_LENGTH_EXCEEDED', 'INVALID_PURPOSE', 'CERT_UNTRUSTED', 'CERT_REJECTED', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The first error of `err`'s cause chain that carries a Node error code (`ECONNREFUSED`, `CERT_HAS_EXPIRED`, …). */
export function nodeCause(err: unknown): { code: string; message: string } | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string') return { code, message: e.message };
  }
  return undefined;
}

/**
 * Why the control plane's TLS cannot be trusted, when that is why a call failed: its certificate
 * does not verify (unknown CA, expired, another name: `certificate`), or the handshake failed (a
 * plain-text server, no common protocol). Undefined for every other failure.
 */
export function tlsFailure(err: unknown): { code: string; message: string; certificate: boolean } | undefined {
  const cause = nodeCause(err);
  if (cause === undefined) return undefined;
  const { code } = cause;
  if (VERIFY_CODES.has(code)) return { ...cause, certificate: true };
  return code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO' ? { ...cause, certificate: false } : undefined;
}

/** The Watch stream read on a worker thread when `thread`, else on this one. */
export function watchSource(config: WatchThreadConfig, thread: boolean): WatchSource {
  if (thread) return new WatchThread(config);
  const client = rawWatchClient(config);
  return { ready: async () => undefined, watch: (request, opts) => client.watch(request, opts), close: async () => undefined };
}

export type ToWorker =
  | { type: 'open'; id: number; tenantId: string; fromRevision: string; acceptRowBlocks: boolean; headers: Record<string, string> }
  | { type: 'cancel'; id: number }
  | { type: 'ack'; id: number; bytes: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'message'; id: number; buffer: ArrayBuffer; fields: number[] }
  | { type: 'end'; id: number }
  | { type: 'error'; id: number; code: Code; rawMessage: string; metadata: [string, string][]; cause?: { code: string; message: string } };

/** `done` ends the iteration; `over` says the worker's side of the call has ended too. */
type Item = Extract<FromWorker, { type: 'message' }> | { type: 'done'; error?: ConnectError; over: boolean };

/** One open call: what the worker sent that the iterator has not taken yet. */
class Call {
  readonly items: Item[] = [];
  private wake: (() => void) | undefined;

  push(item: Item): void {
    this.items.push(item);
    this.wake?.();
  }

  async next(): Promise<Item> {
    while (this.items.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = undefined;
    return this.items.shift()!;
  }
}

export class WatchThread implements WatchSource {
  private worker: Worker | undefined;
  /** Resolves when the current worker has loaded, or is gone. */
  private loaded: Promise<void> = Promise.resolve();
  private nextId = 1;
  private readonly calls = new Map<number, Call>();

  constructor(private readonly config: WatchThreadConfig) {}

  /** Starts the worker when none runs; resolves once it has loaded (or failed to). */
  ready(): Promise<void> {
    this.started();
    return this.loaded;
  }

  /** `SnapshotService.Watch` through the worker, as `client.watch` of a raw client would run it. */
  async *watch(request: { tenantId: string; fromRevision: bigint; acceptRowBlocks: boolean }, opts: { signal: AbortSignal; headers: Record<string, string> }): AsyncGenerator<UnknownFields> {
    const { signal } = opts;
    if (signal.aborted) throw ConnectError.from(signal.reason);
    const worker = this.started();
    const id = this.nextId++;
    const call = new Call();
    this.calls.set(id, call);
    let over = false;
    const onAbort = () => call.push({ type: 'done', error: ConnectError.from(signal.reason), over: false });
    signal.addEventListener('abort', onAbort, { once: true });
    worker.postMessage({ type: 'open', id, tenantId: request.tenantId, fromRevision: String(request.fromRevision), acceptRowBlocks: request.acceptRowBlocks, headers: opts.headers } satisfies ToWorker);
    try {
      for (;;) {
        const item = await call.next();
        if (signal.aborted) throw ConnectError.from(signal.reason);
        if (item.type === 'done') {
          over = item.over;
          if (item.error) throw item.error;
          return;
        }
        worker.postMessage({ type: 'ack', id, bytes: item.buffer.byteLength } satisfies ToWorker);
        yield { $unknown: unpack(item.buffer, item.fields) };
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.calls.delete(id);
      if (!over) worker.postMessage({ type: 'cancel', id } satisfies ToWorker);
    }
  }

  /** Stops the worker; open calls end with `canceled`. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new ConnectError('the Watch thread was closed', Code.Canceled));
    await worker?.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(this.config);
    // The follower's timers keep the process alive while it follows; the worker must not.
    worker.unref();
    let loaded!: () => void;
    this.loaded = new Promise<void>((resolve) => (loaded = resolve));
    worker.on('message', (m: FromWorker) => {
      if (m.type === 'ready') return loaded();
      const call = this.calls.get(m.id);
      if (!call) return;
      if (m.type === 'message') call.push(m);
      else if (m.type === 'end') call.push({ type: 'done', over: true });
      else call.push({ type: 'done', error: errorFromWorker(m), over: true });
    });
    const lost = (why: string) => {
      loaded();
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new ConnectError(`the Watch thread stopped: ${why}`, Code.Internal));
    };
    worker.on('error', (err) => lost(err.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private failAll(error: ConnectError): void {
    for (const call of this.calls.values()) call.push({ type: 'done', error, over: true });
  }
}

/** The worker's error as the connect client on this thread would have thrown it, with its Node cause (see tlsFailure). */
function errorFromWorker(m: Extract<FromWorker, { type: 'error' }>): ConnectError {
  const cause = m.cause === undefined ? undefined : Object.assign(new Error(m.cause.message), { code: m.cause.code });
  return new ConnectError(m.rawMessage, m.code, new Headers(m.metadata), undefined, cause);
}

function unpack(buffer: ArrayBuffer, fields: number[]): UnknownFields['$unknown'] {
  const out: UnknownFields['$unknown'] = [];
  for (let i = 0; i < fields.length; i += 4) out.push({ no: fields[i], wireType: fields[i + 1], data: new Uint8Array(buffer, fields[i + 2], fields[i + 3]) });
  return out;
}

/** The worker thread that reads the Watch stream. */
function spawnWorker(config: WatchThreadConfig): Worker {
  // The worker allocates little on its heap (its bytes are buffers outside it): with a 1 MiB
  // young generation its heap is 16 MiB instead of 29 (v8.getHeapStatistics in the worker during
  // a 2.1M-entity snapshot load). Its buffers waiting for a collection still come to 30–60 MiB.
  return startWorker(import.meta.url, 'watch-thread-worker', { workerData: config, resourceLimits: { maxYoungGenerationSizeMb: 1 } });
}

/**
 * Whether `SIDECAR_WATCH_THREAD=auto` reads the Watch stream on a worker thread: when this
 * process may use two CPUs or more, counting both the CPUs it may run on and its cgroup's CPU
 * quota (a Kubernetes CPU limit). With one CPU the thread only adds work: a 2.1M-entity load
 * pinned to one core took 23.0 and 30.9 s with it against 18.5 and 23.0 s without
 * (bench/snapshot-scale.ts under `taskset -c 0`), where on two cores it took 16.4–22.3 s against
 * 18.6–30.9 s.
 */
export function useWatchThread(cpus = availableParallelism(), quota = cgroupCpuQuota()): boolean {
  return Math.min(cpus, quota ?? Infinity) >= 2;
}

/**
 * The CPUs this process's cgroup may use (its CPU quota over its period), or undefined when
 * unlimited or unknown: cgroup v2's `cpu.max` ("max 100000", "150000 100000"), else cgroup v1's
 * `cpu.cfs_quota_us` and `cpu.cfs_period_us` (a quota of -1: unlimited).
 */
export function cgroupCpuQuota(read: (path: string) => string | undefined = readText): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max');
  if (v2 !== undefined) {
    const [quota, period] = v2.trim().split(/\s+/);
    return quotaOf(quota, period);
  }
  return quotaOf(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim(), read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
}

function quotaOf(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined;
  return q / p;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
