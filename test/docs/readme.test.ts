/**
 * The README's quick start, as a newcomer runs it: `npm start` on a fresh data directory, then
 * the shell blocks under the README's "Quick start" headings pasted literally into one `bash`,
 * twice. What they print must be exactly the sample answers the README shows under them (its
 * `# {…}`, `# ✓ …` and `# N passed…` lines), revisions included. The README documents SERVICE_PORT, SERVICE_DATA_DIR and
 * SIDECAR_PORT as the way to move the processes, so those point at free ports and a temporary
 * directory here; nothing else of this process's environment reaches them.
 *
 * The blocks need `jq`: CI installs it and sets AUTHZ_TEST_JQ_REQUIRED=1, so a machine without
 * it fails there; elsewhere the test is skipped, saying why.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../processes.js';

const ROOT = resolve(import.meta.dirname, '../..');
const REQUIRED = process.env.AUTHZ_TEST_JQ_REQUIRED === '1';
const jq = spawnSync('jq', ['--version'], { encoding: 'utf8' });
const missing = jq.status === 0 ? undefined : 'jq is not on PATH; install it (apt-get install jq)';
if (missing && !REQUIRED) console.warn(`skipping the README quick start test: ${missing}`);

interface ShellBlock {
  heading: string;
  script: string;
  /** The sample answers shown in the block, in order. */
  answers: string[];
}

/** The ```sh blocks of every section whose heading starts with "Quick start". */
function quickStartBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let heading = '';
  let inBlock = false;
  let lines: string[] = [];
  for (const line of markdown.split('\n')) {
    if (!inBlock && line.startsWith('## ')) heading = line.slice(3);
    if (!inBlock && line === '```sh' && heading.startsWith('Quick start')) {
      inBlock = true;
      lines = [];
    } else if (inBlock && line === '```') {
      inBlock = false;
      const answers = lines.filter((l) => /^# ([{[]|✓ |✗ |\d+ passed)/.test(l)).map((l) => l.slice(2));
      blocks.push({ heading, script: lines.join('\n'), answers });
    } else if (inBlock) {
      lines.push(line);
    }
  }
  return blocks;
}

/** This process's environment without anything that would configure the processes or the blocks. */
function freshShellEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(SERVICE_|SIDECAR_|OTEL_|AUTHZ_API_KEY$|DATABASE_URL$)/.test(k)) continue;
    env[k] = v;
  }
  return env;
}

/** `npm start` in its own process group (npm, its shell and node), with everything it printed. */
function npmStart(env: Record<string, string>): { child: ChildProcess; output: string[]; stop(): Promise<void> } {
  const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr!.on('data', (b: Buffer) => output.push(b.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exited;
    },
  };
}

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('the README quick start', () => {
  it('has a first decision and a sidecar block, each showing its answer', () => {
    const blocks = quickStartBlocks(README);
    expect(blocks.map((b) => [b.heading, b.answers.length])).toEqual([
      ['Quick start: a first decision', 3],
      ['Quick start: a sidecar beside it', 1],
    ]);
  });

  if (missing && REQUIRED) {
    it('needs jq (AUTHZ_TEST_JQ_REQUIRED=1)', () => {
      expect.fail(missing);
    });
  }

  describe.runIf(!missing)('pasted into bash after npm start', () => {
    let dataDir: string;
    let env: Record<string, string>;
    let controlPlane: ReturnType<typeof npmStart> | undefined;
    const blocks = quickStartBlocks(README);
    const paste = blocks.map((b) => b.script).join('\n');
    const answers = blocks.flatMap((b) => b.answers);

    /**
     * Runs `script` in one bash, from the repository as the README says, in a process group of
     * its own, which is ended afterwards: a sidecar a failing paste left running goes with it.
     * Resolves with the lines it printed; rejects when bash fails or takes over 150 s.
     */
    const inBash = (script: string) =>
      new Promise<string[]>((resolve, reject) => {
        const bash = spawn('bash', ['-c', script], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        bash.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
        bash.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
        const endGroup = () => {
          try {
            process.kill(-bash.pid!, 'SIGTERM');
          } catch {
            // the group is gone already
          }
        };
        const timer = setTimeout(endGroup, 150_000);
        bash.once('close', (code, signal) => {
          clearTimeout(timer);
          endGroup();
          if (code === 0) resolve(stdout.split('\n').filter((l) => l !== ''));
          else reject(new Error(`bash ended with ${code ?? signal}:\n${stdout}\n${stderr}`));
        });
      });

    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'authz-readme-'));
      env = {
        ...freshShellEnvironment(),
        SERVICE_PORT: String(await freePort()),
        SIDECAR_PORT: String(await freePort()),
        SERVICE_DATA_DIR: dataDir,
      };
      controlPlane = npmStart(env);
    });
    afterAll(async () => {
      await controlPlane?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('prints the answers the README shows, pasted twice into the same shell', async () => {
      expect(await inBash(`${paste}\n${paste}`)).toEqual([...answers, ...answers]);
      const banner = controlPlane!.output.join('');
      const keyFile = join(dataDir, 'bootstrap-api-key');
      expect(banner).toContain(`kept in ${keyFile} (readable by this user only)`);
      expect(banner).toContain(readFileSync(keyFile, 'utf8').trim());
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    }, 180_000);

    it('serves the console the README opens, and signs in with the printed key', async () => {
      const url = `http://127.0.0.1:${env.SERVICE_PORT}`;
      const page = await fetch(`${url}/console/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="root">');
      const key = readFileSync(join(dataDir, 'bootstrap-api-key'), 'utf8').trim();
      const session = await fetch(`${url}/console/session`, { method: 'POST', headers: { 'x-api-key': key, origin: url } });
      expect(session.status).toBe(200);
      expect(session.headers.get('set-cookie')).toMatch(/^authz_session=[^;]+;.*HttpOnly/);
    });

    it('recovers from the bootstrap-key trap: a restart with SERVICE_BOOTSTRAP_API_KEY on the same data warns, and the key file still works', async () => {
      await controlPlane!.stop();
      const chosen = 'azk_local_dev_key_please_change_0123456789';
      controlPlane = npmStart({ ...env, SERVICE_BOOTSTRAP_API_KEY: chosen });
      const [first] = blocks;
      expect(await inBash(first.script)).toEqual(first.answers);
      const warning = controlPlane.output.join('').split('\n').find((l) => l.includes('"level":40') && l.includes('SERVICE_BOOTSTRAP_API_KEY'));
      expect(warning).toContain('already has an active platform API key with another secret');
      expect(warning).toContain(`use the existing key (a generated one is in ${join(dataDir, 'bootstrap-api-key')})`);
      expect(warning).not.toContain(chosen);
    }, 120_000);
  });
});
