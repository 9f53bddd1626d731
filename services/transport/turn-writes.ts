/**
 * HTTP/1.1 answers of one event-loop turn written together, once every request read in that
 * turn has been answered (setImmediate runs after the poll phase that read them).
 *
 * Why: on loopback a response's `writev` also delivers it to the client and, when the client is
 * asleep in `epoll_wait`, wakes it; on a virtual machine that wake-up (an interprocessor
 * interrupt) was the largest single cost of a decision (`perf`: 14% of the sidecar's CPU, in
 * `sock_def_readable`). Written one by one as each is computed, nearly every answer found the
 * client asleep again; written back to back, only the first does, while the client is busy
 * reading the others. The number of system calls is the same (one `writev` per answer); what is
 * saved is the wake-ups, and a client reading many answers per wake-up. A turn's first answer
 * waits for the others of its turn: at most {@link MAX_TURN_WRITES}, after which the batch is
 * written at once. A single request waits for nothing but the rest of its own turn.
 *
 * HTTP/2 needs none of this: its session already writes a turn's frames together. RPC metrics
 * and spans end when the answer is made, before this wait.
 */
import type { ServerResponse } from 'node:http';

/** Answers held in one turn before they are written at once (bounds the first one's wait). */
export const MAX_TURN_WRITES = 64;

interface HeldAnswer {
  res: ServerResponse;
  status: number;
  headers: Record<string, string>;
  body: string | Uint8Array;
}

let held: HeldAnswer[] = [];
let scheduled = false;

/**
 * Writes `res`'s head and body at the end of this event-loop turn (or now, when the turn already
 * holds MAX_TURN_WRITES answers). Nothing may be written to `res` in between.
 */
export function endAfterTurn(res: ServerResponse, status: number, headers: Record<string, string>, body: string | Uint8Array): void {
  held.push({ res, status, headers, body });
  if (held.length >= MAX_TURN_WRITES) writeHeld();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(onTurnEnd);
  }
}

function onTurnEnd(): void {
  scheduled = false;
  writeHeld();
}

/** Writes every held answer; one that cannot be written (its client gone) ends its own socket only. */
function writeHeld(): void {
  const batch = held;
  held = [];
  for (const a of batch) {
    try {
      a.res.writeHead(a.status, a.headers);
      a.res.end(a.body);
    } catch (err) {
      a.res.destroy(err as Error);
    }
  }
}
