/**
 * A process for the tests of the suite's own measurements (checks.test.ts): with the loop
 * monitor of the processes under fuzz, it works on the CPU, blocks, or writes a log line when
 * asked over IPC, and answers when done.
 */
import './loop-monitor.js';

type Ask = { type: 'work' | 'block' | 'log' | 'close'; id: number; ms?: number; level?: number };

process.on('message', (m: Ask) => {
  if (m.type === 'close') process.exit(0);
  if (m.type === 'work') {
    // CPU time, not wall time: the same work whatever else the machine runs.
    const start = process.cpuUsage();
    for (;;) {
      const used = process.cpuUsage(start);
      if (used.user + used.system >= m.ms! * 1000) break;
    }
  } else if (m.type === 'block') {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.ms);
  } else if (m.type === 'log') {
    process.stdout.write(`${JSON.stringify({ level: m.level, time: Date.now(), msg: `a line at level ${m.level}` })}\n`);
  } else return;
  process.send?.({ type: m.type, id: m.id });
});
process.send?.({ type: 'ready', url: 'http://127.0.0.1:1' });
