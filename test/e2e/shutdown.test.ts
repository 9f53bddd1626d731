/**
 * Every entry point exits after SIGTERM whatever its output does. Its stdout and stderr are a
 * pipe that nobody reads, full before the process starts (a log collector that stopped), whose
 * reader then goes away (the collector dies): the process must still exit, with code 0, once its
 * reader is gone: an exit-time flush that retries a broken pipe would hold it forever
 * (services/transport/destination.ts).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, nodeArgv } from '../processes.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** A liveness bound, not a measurement: how long a process may take to exit before the test fails. */
const EXIT_WITHIN_MS = 20_000;

let dir: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'authz-shutdown-'));
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Stuck {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Closes the pipe's only reader: from then on every write to it fails with EPIPE. */
  dropReader(): void;
}

/** Starts `node argv` with stdout and stderr a FIFO already full, whose only reader is this process (and never reads). */
function startIntoFullPipe(name: string, argv: string[], env: Record<string, string>): Stuck {
  const fifo = join(dir, name);
  execFileSync('mkfifo', [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const filler = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  const block = Buffer.alloc(4096, '#');
  for (;;) {
    try {
      writeSync(filler, block);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw err;
    }
  }
  closeSync(filler);
  const out = openSync(fifo, constants.O_WRONLY);
  const child = spawn(process.execPath, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
  closeSync(out);
  children.push(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  let open = true;
  return {
    child,
    exited,
    dropReader: () => {
      if (open) closeSync(reader);
      open = false;
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((done) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), done(true)));
    s.once('error', () => done(false));
  });
}

async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Where the process's main thread waits in the kernel (`pipe_write`: blocked writing its output). */
function wchan(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/wchan`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * SIGTERM once it listens on `port` (its handlers are installed before it starts); once its
 * listener is closed and its main thread blocks writing its output (or after a while), the
 * reader goes away. Resolves with how it exited.
 */
async function terminateWithReaderGone(p: Stuck, port: number) {
  await until(async () => !alive(p.child) || (await accepts(port)), 60_000, 'listening');
  expect(alive(p.child)).toBe(true);
  p.child.kill('SIGTERM');
  await until(async () => !alive(p.child) || !(await accepts(port)), 10_000, 'listener closed');
  // The exit-time flush is the case under test: give the process the time to reach it.
  const end = Date.now() + 2_000;
  while (alive(p.child) && Date.now() < end && wchan(p.child.pid!) !== 'pipe_write') await new Promise((r) => setTimeout(r, 25));
  p.dropReader();
  const timeout = new Promise<'still running'>((r) => setTimeout(() => r('still running'), EXIT_WITHIN_MS).unref());
  return Promise.race([p.exited, timeout]);
}

describe('SIGTERM with a full output pipe whose reader then goes away', { timeout: 120_000 }, () => {
  it('the sidecar exits 0', async () => {
    const port = await freePort();
    const p = startIntoFullPipe('sidecar', nodeArgv('sidecar'), {
      // No control plane there: the sidecar listens anyway (not ready) and logs its retries.
      SIDECAR_CONTROL_PLANE_URL: 'http://127.0.0.1:9', SIDECAR_API_KEY: 'azk_shutdown_test_key', SIDECAR_TENANT_ID: 'tenant_0123456789abcdef',
      SIDECAR_PORT: String(port), SIDECAR_LOG_LEVEL: 'debug',
    });
    expect(await terminateWithReaderGone(p, port)).toEqual({ code: 0, signal: null });
  });

  it('the control plane (embedded database) exits 0', async () => {
    const port = await freePort();
    const p = startIntoFullPipe('control-plane', nodeArgv('control-plane'), {
      DATABASE_URL: '', SERVICE_DATA_DIR: 'memory://', SERVICE_PORT: String(port), SERVICE_BOOTSTRAP_API_KEY: 'azk_shutdown_test_bootstrap_0123456789', SERVICE_LOG_LEVEL: 'debug',
    });
    expect(await terminateWithReaderGone(p, port)).toEqual({ code: 0, signal: null });
  });

  it('the injector exits 0', async () => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'authz-injector.authz.svc' }], { keyType: 'ec', algorithm: 'sha256' });
    writeFileSync(join(dir, 'tls.crt'), pems.cert);
    writeFileSync(join(dir, 'tls.key'), pems.private);
    const port = await freePort();
    const p = startIntoFullPipe('injector', nodeArgv('injector'), {
      INJECTOR_HOST: '127.0.0.1', INJECTOR_PORT: String(port), INJECTOR_TLS_CERT_FILE: join(dir, 'tls.crt'), INJECTOR_TLS_KEY_FILE: join(dir, 'tls.key'),
      INJECTOR_SIDECAR_IMAGE: 'registry.example.com/authz/authz:0.1.0', INJECTOR_CONTROL_PLANE_URL: 'http://authz-control-plane.authz.svc:8080', INJECTOR_LOG_LEVEL: 'debug',
    });
    expect(await terminateWithReaderGone(p, port)).toEqual({ code: 0, signal: null });
  });

  it('a waiting health check ends at once (it has nothing to close)', async () => {
    // A /healthz that answers 503: the check keeps asking until --wait runs out.
    let asked = 0;
    const server = createServer((_req, res) => (asked++, res.writeHead(503).end()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const p = startIntoFullPipe('healthcheck', ['--import', 'tsx', resolve(ROOT, 'cmd/healthcheck/main.ts'), '--wait', '600', `http://127.0.0.1:${port}/healthz`], {});
      await until(() => !alive(p.child) || asked > 0, 30_000, 'asking');
      expect(alive(p.child)).toBe(true);
      p.child.kill('SIGTERM');
      p.dropReader();
      const timeout = new Promise<'still running'>((r) => setTimeout(() => r('still running'), EXIT_WITHIN_MS).unref());
      expect(await Promise.race([p.exited, timeout])).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      server.close();
    }
  });
});
