/**
 * Starts the control plane under fuzz in a child process (server-process.ts) against a fresh
 * database of the backend, and gives the suite what it needs around it: the URL, SQL over IPC
 * for the invariant checks, the server's log lines (warnings and errors, with the stacks of
 * internal errors) and whether the process is still alive.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createScratchDatabase, type Backend } from '../harness.js';

export const PLATFORM_SECRET = 'azk_fuzz_platform_secret_0123456789abcdefghijklmnop';

export interface LogLine {
  at: number;
  text: string;
}

export interface FuzzServer {
  readonly url: string;
  readonly backend: Backend;
  sql<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Log lines received at or after `since` (ms since epoch). */
  logsSince(since: number): LogLine[];
  /** Why the process is gone, or undefined while it runs. */
  exited(): string | undefined;
  close(): Promise<void>;
}

const SERVER = fileURLToPath(new URL('./server-process.ts', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const SQL_TIMEOUT_MS = 30_000;

export async function startFuzzServer(backend: Backend, extraEnv: Record<string, string> = {}): Promise<FuzzServer> {
  let dropDatabase = async () => {};
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SERVICE_PORT: '0',
    SERVICE_HOST: '127.0.0.1',
    SERVICE_BOOTSTRAP_API_KEY: PLATFORM_SECRET,
    SERVICE_DATA_DIR: 'memory://',
    SERVICE_LOG_LEVEL: 'warn',
    // A minRevision ahead of the tenant waits this long, then answers `unavailable` (contract §5).
    SERVICE_MIN_REVISION_WAIT_MS: '100',
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS; // vitest's loader hooks do not belong in the server
  if (backend === 'postgres') {
    const scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_fuzz');
    env.DATABASE_URL = scratch.url;
    dropDatabase = scratch.drop;
  }
  const child: ChildProcess = fork(SERVER, [], {
    execArgv: ['--import', 'tsx'],
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  });
  const logs: LogLine[] = [];
  let partial = '';
  const onData = (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    const at = Date.now();
    for (const line of lines) if (line.trim()) logs.push({ at, text: line });
    if (logs.length > 50_000) logs.splice(0, logs.length - 50_000);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let exitReason: string | undefined;
  const pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  child.on('exit', (code, signal) => {
    exitReason = `the control plane process exited (code ${code}, signal ${signal})`;
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(exitReason));
    }
    pending.clear();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the control plane did not start within 60 s')), START_TIMEOUT_MS);
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
  }).catch(async (err) => {
    child.kill('SIGKILL');
    await dropDatabase();
    throw err;
  });
  let nextId = 1;
  child.on('message', (m: { type: string; id?: number; rows?: unknown[]; error?: string }) => {
    if (m.type !== 'sql' || m.id === undefined) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error !== undefined) p.reject(new Error(`invariant query failed: ${m.error}`));
    else p.resolve(m.rows ?? []);
  });
  return {
    url,
    backend,
    sql<T>(sql: string, params: unknown[] = []): Promise<T[]> {
      if (exitReason) return Promise.reject(new Error(exitReason));
      const id = nextId++;
      return new Promise<T[]>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`invariant query got no answer within ${SQL_TIMEOUT_MS} ms`));
        }, SQL_TIMEOUT_MS);
        pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject, timer });
        child.send({ type: 'sql', id, sql, params });
      });
    },
    logsSince(since: number) {
      return logs.filter((l) => l.at >= since);
    },
    exited: () => exitReason,
    async close() {
      if (!exitReason) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.send({ type: 'close' });
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await gone;
        clearTimeout(timer);
      }
      await dropDatabase();
    },
  };
}
