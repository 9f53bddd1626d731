/**
 * The asynchronous writer under the logs and the decision log: pino's destination (sonic-boom),
 * with an exit-time flush that cannot hold the process.
 *
 * pino flushes an asynchronous destination synchronously when the process exits (sonic-boom's
 * `flushSync`), and that flush retries a failed write every 100 ms for as long as it fails,
 * whatever the error: with the reader of a pipe gone (EPIPE) or the descriptor closed (EBADF),
 * forever. Here the exit flush writes what is buffered once, gives up on any error but a full
 * pipe (EAGAIN, EBUSY), and gives up on those after EXIT_RETRY_MS: lines nobody can read are
 * dropped rather than holding the process to its grace period.
 */
import { fsyncSync, writeSync } from 'node:fs';
import { pino } from 'pino';

type SonicBoom = ReturnType<typeof pino.destination>;

/** How long the exit flush keeps retrying a full pipe, in steps of EXIT_RETRY_STEP_MS. */
export const EXIT_RETRY_MS = 1_000;
const EXIT_RETRY_STEP_MS = 10;

/** The fields of sonic-boom (utf8 mode) the exit flush reads: what is buffered, and whether a write is under way. */
interface Buffered {
  fd: number;
  destroyed: boolean;
  /** Strings waiting to be written, in order. */
  _bufs: string[];
  /** The string being written (under way when `_writing`), or waiting after a partial write. */
  _writingBuf: string;
  _writing: boolean;
  _len: number;
}

function isBuffered(x: unknown): x is Buffered {
  const s = x as Partial<Buffered>;
  return Array.isArray(s._bufs) && typeof s._writingBuf === 'string' && typeof s._writing === 'boolean' && typeof s._len === 'number';
}

/**
 * pino.destination writing `fd` asynchronously (options as sonic-boom's), whose exit-time flush
 * gives up instead of retrying forever (see the module comment).
 */
export function asyncDestination(opts: { fd: number; minLength?: number; maxLength?: number }): SonicBoom {
  const dest = pino.destination({ dest: opts.fd, sync: false, minLength: opts.minLength, maxLength: opts.maxLength });
  // The exit flush reads sonic-boom's buffer: refuse to start on a version whose buffer has
  // another shape rather than lose the bound silently.
  if (!isBuffered(dest)) throw new Error('sonic-boom has changed its buffer: review services/transport/destination.ts');
  dest.flushSync = () => flushAtExit(dest);
  return dest;
}

function flushAtExit(s: Buffered): void {
  if (s.destroyed || s.fd < 0) return;
  // A write under way keeps its string (the thread pool is writing it); the rest follows it.
  const pending = (s._writing ? '' : s._writingBuf) + s._bufs.join('');
  s._bufs = [];
  if (!s._writing) s._writingBuf = '';
  s._len = s._writingBuf.length;
  const bytes = Buffer.from(pending, 'utf8');
  let written = 0;
  let retries = Math.ceil(EXIT_RETRY_MS / EXIT_RETRY_STEP_MS);
  while (written < bytes.length) {
    try {
      written += writeSync(s.fd, bytes, written);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'EAGAIN' || code === 'EBUSY') && retries-- > 0) {
        Atomics.wait(SLEEPER, 0, 0, EXIT_RETRY_STEP_MS);
        continue;
      }
      return; // nobody reads (EPIPE), the descriptor is gone (EBADF, EIO…), or still full
    }
  }
  try {
    fsyncSync(s.fd);
  } catch {
    // pipes and terminals cannot be synced
  }
}

const SLEEPER = new Int32Array(new SharedArrayBuffer(4));
