/**
 * Shutdown is bounded whatever close() does: real processes (testdata/entry-point.ts) sent
 * SIGTERM, with a close() that resolves, one that never settles, one that blocks its thread.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const FIXTURE = resolve(import.meta.dirname, 'testdata', 'entry-point.ts');
const LIMIT_MS = 300;
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * Starts the fixture, sends SIGTERM once it prints `when` (by default once it is up), and
 * resolves with how it exited and what it printed.
 */
function terminate(close: 'ok' | 'hang' | 'block', opts: { when?: string; startMs?: number } = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  const when = opts.when ?? 'fixture listening';
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, FIXTURE_CLOSE: close, FIXTURE_LIMIT_MS: String(LIMIT_MS), FIXTURE_START_MS: String(opts.startMs ?? 0) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const onData = (d: Buffer) => {
    const before = output.includes(when);
    output += d.toString();
    if (!before && output.includes(when)) child.kill('SIGTERM');
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((done) => child.once('close', (code, signal) => done({ code, signal, output })));
}

describe('runEntryPoint on SIGTERM', () => {
  it('exits 0 once close() resolves', async () => {
    const r = await terminate('ok');
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(r.output).toContain('shutting down');
    expect(r.output).toContain('fixture closed');
    expect(r.output).not.toContain('did not finish');
  });

  it('received while starting, closes once started and exits 0', async () => {
    // 'starting' is logged in the same turn as the handlers are installed, before the start.
    const r = await terminate('ok', { when: '"msg":"starting"', startMs: 200 });
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(r.output).toContain('fixture closed');
  });

  it('exits 1 at the limit when close() never settles, saying so', async () => {
    const r = await terminate('hang');
    expect(r).toMatchObject({ code: 1, signal: null });
    expect(r.output).toContain(`"limitMs":${LIMIT_MS},"msg":"shutdown did not finish in time; exiting"`);
  });

  it('is killed by its watchdog when close() blocks the main thread', async () => {
    const r = await terminate('block');
    expect(r).toMatchObject({ code: null, signal: 'SIGKILL' });
  });
});

describe('--help and --version', () => {
  const ROOT = resolve(import.meta.dirname, '..', '..');
  const run = (entry: string, flag: string) => new Promise<{ code: number | null; out: string }>((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, entry), flag], { env: { ...process.env, DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('close', (code) => done({ code, out }));
  });
  const version = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')).version as string;

  it.each([
    ['cmd/control-plane/main.ts', 'control plane', ['--service-port', 'SERVICE_PORT', 'default 8080', 'DATABASE_URL']],
    ['cmd/sidecar/main.ts', 'sidecar', ['--sidecar-control-plane-url', 'SIDECAR_TENANT_ID', 'SIDECAR_ALLOWED_HOSTS']],
    ['cmd/injector/main.ts', 'injector', ['--injector-port', 'INJECTOR_TLS_CERT_FILE']],
  ])('%s prints its settings and its version, and starts nothing', async (entry, name, settings) => {
    for (const flag of ['--help', '-h']) {
      const help = await run(entry, flag);
      expect(help.code).toBe(0);
      for (const s of [...settings, 'docs/configuration.md', '--version']) expect(help.out).toContain(s);
      expect(help.out).not.toContain('listening');
    }
    expect(await run(entry, '--version')).toEqual({ code: 0, out: `${name} ${version}\n` });
  });
});
