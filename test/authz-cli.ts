/**
 * `authz …` as a child process through the package's bin (bin/authz.js), as people and CI
 * systems run it: only the environment given (plus PATH and HOME), the output kept.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..');
const BIN = join(REPO_ROOT, 'bin/authz.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAuthz(args: readonly string[], env: Record<string, string> = {}, options: { input?: string; home?: string; cwd?: string } = {}): Promise<CliRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: options.home ?? REPO_ROOT, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}
