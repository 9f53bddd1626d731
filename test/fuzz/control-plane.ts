/**
 * Starts the control plane under fuzz in a child process (server-process.ts) against a fresh
 * database of the backend, and gives the suite what it needs around it: the URL, SQL over IPC
 * for the invariant checks, its log lines, its event-loop delay and whether it is still alive.
 */
import { createScratchDatabase, type Backend } from '../harness.js';
import { forkChild, type FuzzChild } from './child.js';

export type { LogLine } from './child.js';

export const PLATFORM_SECRET = 'azk_fuzz_platform_secret_0123456789abcdefghijklmnop';

export interface FuzzServer extends FuzzChild {
  readonly backend: Backend;
  sql<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

const SQL_TIMEOUT_MS = 30_000;

export async function startFuzzServer(backend: Backend, extraEnv: Record<string, string> = {}): Promise<FuzzServer> {
  let dropDatabase = async () => {};
  const env: Record<string, string> = {
    SERVICE_PORT: '0',
    SERVICE_HOST: '127.0.0.1',
    SERVICE_BOOTSTRAP_API_KEY: PLATFORM_SECRET,
    SERVICE_DATA_DIR: 'memory://',
    SERVICE_LOG_LEVEL: 'warn',
    // A minRevision ahead of the tenant waits this long, then answers `unavailable` (contract §5).
    SERVICE_MIN_REVISION_WAIT_MS: '100',
    ...extraEnv,
  };
  if (backend === 'postgres') {
    const scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'authz_fuzz');
    env.DATABASE_URL = scratch.url;
    dropDatabase = scratch.drop;
  } else env.DATABASE_URL = '';
  let child: FuzzChild;
  try {
    child = await forkChild('control plane', './server-process.ts', env);
  } catch (err) {
    await dropDatabase();
    throw err;
  }
  return {
    ...child,
    backend,
    async sql<T>(sql: string, params: unknown[] = []): Promise<T[]> {
      const m = await child.ask<{ rows?: T[]; error?: string }>('sql', { sql, params }, SQL_TIMEOUT_MS);
      if (m.error !== undefined) throw new Error(`invariant query failed: ${m.error}`);
      return m.rows ?? [];
    },
    async close() {
      await child.close();
      await dropDatabase();
    },
  };
}
