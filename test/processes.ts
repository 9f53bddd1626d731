/**
 * Real control-plane, sidecar and injector processes for end-to-end tests and benchmarks: each runs as
 * its own `node` child (TypeScript through tsx, or the built `dist/` when asked), on loopback,
 * and is found by the URL it logs once listening.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { CONTROL_PLANE_NODE_FLAGS } from '../services/control-plane/node-flags.js';

const ROOT = resolve(import.meta.dirname, '..');

export interface RunningProcess {
  url: string;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr, JSON log lines). */
  output: string[];
  /** Sends `signal` and resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export type ProcessKind = 'control-plane' | 'sidecar' | 'injector';

const ENTRY: Record<ProcessKind, string> = { 'control-plane': 'cmd/control-plane/main', sidecar: 'cmd/sidecar/main', injector: 'cmd/injector/main' };

/** A TCP port free right now on 127.0.0.1 (for a process that must come back on the same port). */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

export interface ProcessOptions {
  /** Run `dist/` (after `npm run build`) instead of the sources. */
  built?: boolean;
  nodeArgs?: string[];
  /** Another build's main.js (a benchmark's "before"). */
  entry?: string;
}

/** The arguments of `node` that run a process of `kind` (the control plane with the V8 flags its deployments give it). */
export function nodeArgv(kind: ProcessKind, opts: ProcessOptions = {}): string[] {
  const nodeArgs = [...(kind === 'control-plane' ? CONTROL_PLANE_NODE_FLAGS : []), ...(opts.nodeArgs ?? [])];
  return opts.entry ? [...nodeArgs, opts.entry]
    : opts.built
      ? [...nodeArgs, resolve(ROOT, 'dist', `${ENTRY[kind]}.js`)]
      : [...nodeArgs, '--import', 'tsx', resolve(ROOT, `${ENTRY[kind]}.ts`)];
}

/**
 * Starts a process of `kind` with `env` added to this one's, and resolves once it logs the URL
 * it listens on.
 */
export function startProcess(kind: ProcessKind, env: Record<string, string>, opts: ProcessOptions = {}): Promise<RunningProcess> {
  const child = spawn(process.execPath, nodeArgv(kind, opts), { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return new Promise((ready, fail) => {
    let found = false;
    const onData = (buf: Buffer) => {
      for (const line of buf.toString().split('\n')) {
        if (!line) continue;
        output.push(line);
        if (found || !line.includes(' listening')) continue;
        try {
          const url = (JSON.parse(line) as { url?: string }).url;
          if (url) {
            found = true;
            ready({ url, child, output, stop });
          }
        } catch {
          // not a JSON log line
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      if (!found) fail(new Error(`${kind} exited (${code ?? signal}) before listening:\n${output.join('\n')}`));
    });
  });
}

/** Polls `url` until it answers 200 (or `timeoutMs` passes). */
export async function waitFor200(url: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A process's resident memory in bytes, as its `/metrics` says (`process_resident_memory_bytes`). */
export async function rssOf(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1]);
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc. Per request it is a cost
 * that does not depend on what else the machine runs, unlike req/s (Linux only; else undefined).
 */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
const CLOCK_TICKS = 100; // USER_HZ: 100 on every Linux architecture this runs on

/**
 * CPU time (ms, to the nanosecond) every thread of a process has used so far, from
 * `/proc/<pid>/task/<tid>/schedstat`: fine enough to price one request (Linux; else undefined).
 */
export function threadCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch { /* the thread ended meanwhile */ }
    }
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** CPU ms used so far by every `postgres` process of this machine (Linux; 0 elsewhere). */
export function postgresCpuMs(): number {
  let ms = 0;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') ms += cpuMs(Number(pid)) ?? 0;
      } catch { /* gone meanwhile */ }
    }
  } catch { /* no /proc */ }
  return ms;
}
