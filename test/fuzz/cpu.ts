/**
 * CPU time of a process, read from `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on the CPU,
 * per thread): what a request cost the process, whatever else the machine was running. Linux
 * only; elsewhere every reading is undefined and the checks that need it are skipped.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface CpuReading {
  /** Every thread of the process (ns). */
  totalNs: number;
  /** The main thread, the one that runs the event loop (ns). */
  mainNs: number;
}

/** The process's CPU time so far, or undefined when /proc cannot tell. */
export function cpuOf(pid: number): CpuReading | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let totalNs = 0;
  let mainNs = 0;
  for (const tid of tids) {
    let fields: string[];
    try {
      fields = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ');
    } catch {
      continue; // a thread that ended meanwhile
    }
    totalNs += Number(fields[0]);
    if (tid === String(pid)) mainNs = Number(fields[0]);
  }
  return { totalNs, mainNs };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the process is idle (less than `idleNs` of CPU over `stepMs`), at most `maxMs`,
 * and returns its CPU time then: work a request left behind (a body drained after the answer,
 * a change pushed to followers) is counted to that request, not to the next.
 */
export async function settledCpu(pid: number, idleNs = 400_000, stepMs = 3, maxMs = 400): Promise<CpuReading | undefined> {
  let last = cpuOf(pid);
  if (!last) return undefined;
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    await sleep(stepMs);
    const now = cpuOf(pid);
    if (!now) return last;
    const moved = now.totalNs - last.totalNs;
    last = now;
    if (moved < idleNs) break;
  }
  return last;
}

export interface CpuSpent {
  totalMs: number;
  mainMs: number;
}

/** CPU ms between two readings (threads that ended in between may make it a little short, never negative). */
export function cpuMsBetween(a: CpuReading | undefined, b: CpuReading | undefined): CpuSpent | undefined {
  if (!a || !b) return undefined;
  const ms = (x: number, y: number) => Math.max(0, y - x) / 1e6;
  return { totalMs: ms(a.totalNs, b.totalNs), mainMs: ms(a.mainNs, b.mainNs) };
}
