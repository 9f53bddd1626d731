/**
 * The worker of {@link WatchThread} (watch-thread.ts): runs the Watch calls the main thread opens,
 * over one gRPC transport, and posts each message's fields as they arrive, in a buffer the main
 * thread takes over (see `pack`). It reads ahead at most `readAheadBytes` beyond what the main thread
 * has taken; past that it stops pulling the stream, so HTTP/2 flow control holds the control
 * plane back and neither thread's memory grows with a consumer that falls behind.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ConnectError } from '@connectrpc/connect';
import { nodeCause, rawWatchClient, soleBuffer, type FromWorker, type ToWorker, type WatchThreadConfig } from './watch-thread.js';

const config = workerData as WatchThreadConfig;
const port = parentPort!;
const client = rawWatchClient(config);

interface Call {
  ac: AbortController;
  /** Bytes posted and not yet taken by the main thread. */
  unacked: number;
  resume: (() => void) | undefined;
}

const calls = new Map<number, Call>();

port.on('message', (m: ToWorker) => {
  switch (m.type) {
    case 'open':
      void run(m);
      return;
    case 'cancel':
      calls.get(m.id)?.ac.abort();
      return;
    case 'ack': {
      const call = calls.get(m.id);
      if (!call) return;
      call.unacked -= m.bytes;
      if (call.unacked <= config.readAheadBytes) call.resume?.();
    }
  }
});

function post(m: FromWorker, transfer?: ArrayBuffer[]): void {
  port.postMessage(m, transfer);
}

post({ type: 'ready' });

async function run(m: Extract<ToWorker, { type: 'open' }>): Promise<void> {
  const call: Call = { ac: new AbortController(), unacked: 0, resume: undefined };
  calls.set(m.id, call);
  const aborted = new Promise<void>((resolve) => call.ac.signal.addEventListener('abort', () => resolve(), { once: true }));
  try {
    const stream = client.watch({ tenantId: m.tenantId, fromRevision: BigInt(m.fromRevision), acceptRowBlocks: m.acceptRowBlocks }, { signal: call.ac.signal, headers: m.headers });
    for await (const msg of stream) {
      const { buffer, fields } = pack(msg.$unknown ?? []);
      call.unacked += buffer.byteLength;
      post({ type: 'message', id: m.id, buffer, fields }, [buffer]);
      if (call.unacked > config.readAheadBytes) {
        await Promise.race([new Promise<void>((resolve) => (call.resume = resolve)), aborted]);
        call.resume = undefined;
        if (call.ac.signal.aborted) return;
      }
    }
    post({ type: 'end', id: m.id });
  } catch (err) {
    // A call the main thread cancelled has ended there already.
    if (call.ac.signal.aborted) return;
    const ce = ConnectError.from(err);
    // The cause's code travels too: the follower tells a certificate that does not verify by it.
    post({ type: 'error', id: m.id, code: ce.code, rawMessage: ce.rawMessage, metadata: [...ce.metadata], cause: nodeCause(err) });
  } finally {
    calls.delete(m.id);
  }
}

/**
 * A message's unknown fields (all of `WatchResponse`'s, see snapshot-wire.ts) as one buffer the
 * main thread takes over, with `[no, wireType, offset, length]` per field. The buffer they lie
 * in is handed over as it is when it holds this message alone ({@link soleBuffer}); any other
 * buffer is copied: a small one may be Node's shared pool, and detaching that would corrupt
 * every other buffer cut from it.
 */
function pack(unknown: readonly { no: number; wireType: number; data: Uint8Array }[]): { buffer: ArrayBuffer; fields: number[] } {
  const fields: number[] = [];
  const sole = soleBuffer(unknown);
  if (sole !== undefined) {
    for (const f of unknown) fields.push(f.no, f.wireType, f.data.byteOffset, f.data.byteLength);
    return { buffer: sole, fields };
  }
  let total = 0;
  for (const f of unknown) total += f.data.byteLength;
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const f of unknown) {
    bytes.set(f.data, at);
    fields.push(f.no, f.wireType, at, f.data.byteLength);
    at += f.data.byteLength;
  }
  return { buffer: bytes.buffer, fields };
}
