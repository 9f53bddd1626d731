/**
 * A process under fuzz (the control plane or a sidecar), forked with `node --import tsx` and an
 * IPC channel: its URL (reported once it listens), its pid (for its CPU time), its log lines
 * (stdout and stderr, numbered), its event-loop delay (loop-monitor.ts) and how it ended.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoopDelay } from './loop-monitor.js';

export interface LogLine {
  /** Position in the process's output (1, 2, …), to read on from where one stopped. */
  seq: number;
  /** When the suite received it (ms since epoch). */
  at: number;
  text: string;
}

export interface FuzzChild {
  /** `control plane` or `sidecar`, in failures and summaries. */
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** Log lines received at or after `since` (ms since epoch). */
  logsSince(since: number): LogLine[];
  /** Log lines after line `seq` (those still kept: the last 50,000). */
  logsAfter(seq: number): LogLine[];
  /** The longest event-loop delays since the last call (ms): whatever held the loop, and the process's own work. */
  loopDelay(): Promise<LoopDelay>;
  /** A question over IPC: `{ type, id, ...body }` answered with `{ type, id, ... }`. */
  ask<T>(type: string, body?: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Why the process is gone, or undefined while it runs. */
  exited(): string | undefined;
  /** Asks it to close, kills it after 10 s. */
  close(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEPT_LINES = 50_000;

export async function forkChild(name: string, entry: string, env: Record<string, string>, startTimeoutMs = 60_000): Promise<FuzzChild> {
  const childEnv: Record<string, string> = { ...(process.env as Record<string, string>), ...env };
  delete childEnv.NODE_OPTIONS; // vitest's loader hooks do not belong in the server
  const child: ChildProcess = fork(fileURLToPath(new URL(entry, import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    cwd: ROOT,
  });
  const logs: LogLine[] = [];
  let seq = 0;
  let partial = '';
  const onData = (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    const at = Date.now();
    for (const line of lines) if (line.trim()) logs.push({ seq: ++seq, at, text: line });
    if (logs.length > KEPT_LINES) logs.splice(0, logs.length - KEPT_LINES);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let exitReason: string | undefined;
  const pending = new Map<number, { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  child.on('exit', (code, signal) => {
    exitReason = `the ${name} process exited (code ${code}, signal ${signal})`;
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(exitReason));
    }
    pending.clear();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${name} did not start within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    child.on('message', function onReady(m: { type: string; url?: string }) {
      if (m.type === 'ready') {
        clearTimeout(timer);
        child.off('message', onReady);
        resolve(m.url!);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`${exitReason}: ${logs.map((l) => l.text).join('\n').slice(-4000)}`));
    });
  }).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  let nextId = 1;
  child.on('message', (m: { type: string; id?: number }) => {
    if (m.id === undefined) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    p.resolve(m as Record<string, unknown>);
  });
  const ask = <T>(type: string, body: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<T> => {
    if (exitReason) return Promise.reject(new Error(exitReason));
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`the ${name} gave no answer to ${type} within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve: resolve as (m: Record<string, unknown>) => void, reject, timer });
      child.send({ ...body, type, id });
    });
  };
  return {
    name,
    url,
    pid: child.pid!,
    logsSince: (since) => logs.filter((l) => l.at >= since),
    logsAfter(after) {
      // Lines are numbered in order: find the first one after `after` from the end.
      let i = logs.length;
      while (i > 0 && logs[i - 1].seq > after) i--;
      return logs.slice(i);
    },
    async loopDelay() {
      const m = await ask<LoopDelay>('loop');
      return { maxMs: m.maxMs, ownMs: m.ownMs };
    },
    ask,
    exited: () => exitReason,
    async close() {
      if (exitReason) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'close' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
