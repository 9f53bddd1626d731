/**
 * The exit-time flush of the logs' writer, on a FIFO this test holds both ends of: lines below
 * `minLength` stay buffered until the flush, as lines behind a slow write do in a process.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { asyncDestination } from './destination.js';

let dir: string;
let fifo: string;
const open: number[] = [];
const track = (fd: number) => (open.push(fd), fd);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'authz-destination-'));
  fifo = join(dir, 'out');
  execFileSync('mkfifo', [fifo]);
});
afterEach(() => {
  for (const fd of open.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // closed by the test
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65_536);
  for (;;) {
    try {
      const n = readSync(fd, buf);
      if (n === 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw err;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A destination on the FIFO holding two lines it has not written yet. */
function withBufferedLines(writerFlags: number) {
  const reader = track(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
  const writer = track(openSync(fifo, writerFlags));
  const dest = asyncDestination({ fd: writer, minLength: 4096 });
  dest.write('{"msg":"one"}\n');
  dest.write('{"msg":"two"}\n');
  return { reader, writer, dest };
}

describe('asyncDestination at exit (flushSync)', () => {
  it('writes out the lines it holds', () => {
    const { reader, dest } = withBufferedLines(constants.O_WRONLY);
    expect(readAll(reader)).toBe('');
    dest.flushSync();
    expect(readAll(reader)).toBe('{"msg":"one"}\n{"msg":"two"}\n');
  });

  it('returns when the reader has gone (EPIPE), dropping them', () => {
    const { reader, dest } = withBufferedLines(constants.O_WRONLY);
    closeSync(reader);
    dest.flushSync(); // sonic-boom's own retries a broken pipe every 100 ms, forever
    // Nothing is left to write: a second flush has nothing to do.
    dest.flushSync();
  });

  it('returns when the descriptor is closed (EBADF)', () => {
    const { writer, dest } = withBufferedLines(constants.O_WRONLY);
    closeSync(writer);
    dest.flushSync();
  });

  it('returns when the pipe stays full (EAGAIN), after a bounded wait', () => {
    const { reader, writer, dest } = withBufferedLines(constants.O_WRONLY | constants.O_NONBLOCK);
    const block = Buffer.alloc(4096, '#');
    let filled = 0;
    for (;;) {
      try {
        filled += writeSync(writer, block);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw err;
      }
    }
    dest.flushSync();
    // Only the filler is in the pipe: the lines that did not fit were dropped.
    const out = readAll(reader);
    expect(out.length).toBeLessThanOrEqual(filled + 28);
    expect(out.slice(0, filled)).toBe('#'.repeat(filled));
  });
});
