/**
 * A process for the tests of the suite's own measurements (checks.test.ts): with the loop
 * monitor of the processes under fuzz, it works on the CPU, blocks, or writes a log line when
 * asked over IPC, and answers when done.
 */
import { readFileSync } from 'node:fs';
import './loop-monitor.js';

type Ask = { type: 'work' | 'block' | 'log' | 'close'; id: number; ms?: number; level?: number };

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;
/** Nanoseconds the main thread has run on a CPU; the whole process's where /proc cannot tell. */
function mainThreadCpuNs(): number {
  try {
    return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ')[0]);
  } catch {
    const used = process.cpuUsage();
    return (used.user + used.system) * 1000;
  }
}

process.on('message', (m: Ask) => {
  if (m.type === 'close') process.exit(0);
  if (m.type === 'work') {
    // The main thread's own CPU time, not wall time nor the whole process's: the same work on
    // the loop whatever else the machine runs, and GC or compiler threads do not shorten it.
    const start = mainThreadCpuNs();
    while (mainThreadCpuNs() - start < m.ms! * 1e6);
  } else if (m.type === 'block') {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.ms);
  } else if (m.type === 'log') {
    process.stdout.write(`${JSON.stringify({ level: m.level, time: Date.now(), msg: `a line at level ${m.level}` })}\n`);
  } else return;
  process.send?.({ type: m.type, id: m.id });
});
process.send?.({ type: 'ready', url: 'http://127.0.0.1:1' });
