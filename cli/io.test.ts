import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from './program.js';

/** `authz version` in this process, stdout a TTY or not, with `env`. */
async function versionOn(tty: boolean, env: Record<string, string>): Promise<string> {
  let out = '';
  await runCli(['version'], { stdout: { write: (t: string) => (out += t), isTTY: tty }, stderr: { write: () => true }, stdin: Readable.from([]) as never, env, home: '/nonexistent' });
  return out;
}

describe('colour', () => {
  it('is on for a terminal only, and off with NO_COLOR or TERM=dumb', async () => {
    expect(await versionOn(true, {})).toContain('\x1b[2mauthz\x1b[22m');
    expect(await versionOn(false, {})).not.toContain('\x1b[');
    expect(await versionOn(true, { NO_COLOR: '1' })).not.toContain('\x1b[');
    expect(await versionOn(true, { TERM: 'dumb' })).not.toContain('\x1b[');
    // NO_COLOR set but empty does not count (no-color.org).
    expect(await versionOn(true, { NO_COLOR: '' })).toContain('\x1b[');
  });
});
