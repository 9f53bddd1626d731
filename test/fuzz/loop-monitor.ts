/**
 * Imported by the processes under fuzz (server-process.ts, sidecar-process.ts): how long the
 * process held its own event loop, which the suite asks for over the IPC channel after each
 * case. A timer ticks every RESOLUTION_MS; a tick that comes late says the loop was held, and
 * the time the main thread spent between the two ticks waiting for a CPU
 * (`/proc/self/task/<pid>/schedstat`, the run-queue wait) is the part a busy machine caused:
 * the rest the process held it itself (running, or blocked on its own work, such as a garbage
 * collection its helper threads finish). A probe from another client would count both.
 */
import { readFileSync } from 'node:fs';

/** Sampling period (ms): a stall is seen to within it. */
const RESOLUTION_MS = 5;

export interface LoopDelay {
  /** The longest event-loop delay since the last question (ms), whatever held the loop (a tick's lateness). */
  maxMs: number;
  /**
   * The longest time the loop was held by the process itself (ms): the lateness of a tick, less
   * what the main thread waited for a CPU meanwhile. Undefined where /proc cannot tell.
   */
  ownMs?: number;
}

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;
/** Nanoseconds the main thread has waited on a run queue (ready, not running). */
function mainThreadWaitNs(): number | undefined {
  try {
    return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ')[1]);
  } catch {
    return undefined;
  }
}

let lastTick = process.hrtime.bigint();
let lastWait = mainThreadWaitNs();
let lateMax = 0;
let ownMax = 0;
// Not perf_hooks.monitorEventLoopDelay: its first sample after a reset only sets a baseline, so
// a stall right after a question would go unseen.
setInterval(() => {
  const now = process.hrtime.bigint();
  const wait = mainThreadWaitNs();
  const late = Number(now - lastTick) / 1e6 - RESOLUTION_MS;
  lateMax = Math.max(lateMax, late);
  if (wait !== undefined && lastWait !== undefined) ownMax = Math.max(ownMax, late - (wait - lastWait) / 1e6);
  lastTick = now;
  lastWait = wait;
}, RESOLUTION_MS).unref();

/** Answers `{ type: 'loop', id }` with the delays seen since the last question, and starts afresh. */
process.on('message', (m: { type?: string; id?: number }) => {
  if (m?.type !== 'loop') return;
  const answer: LoopDelay = { maxMs: lateMax, ownMs: lastWait === undefined ? undefined : ownMax };
  lateMax = 0;
  ownMax = 0;
  process.send?.({ type: 'loop', id: m.id, ...answer });
});
