/**
 * Where the command line reads and writes, as one value a test can replace: standard streams,
 * the environment, the home directory. Every write goes through a redactor that replaces each
 * API key the process knows of with `[redacted]`, so no output path (results, errors, usage
 * messages, a library's error text) can print one.
 */
import { homedir } from 'node:os';

export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface InputStream extends AsyncIterable<Buffer | string> {
  isTTY?: boolean;
  setRawMode?(raw: boolean): unknown;
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  removeListener(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

export interface CliStreams {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: InputStream;
  env: Record<string, string | undefined>;
  home: string;
}

export const REDACTED = '[redacted]';

/** Standard streams and this process's environment. */
export function processStreams(): CliStreams {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin as unknown as InputStream, env: process.env, home: homedir() };
}

/** The streams, writing through the redactor. */
export class CliIo {
  private readonly secrets = new Set<string>();

  constructor(readonly streams: CliStreams) {}

  get env(): Record<string, string | undefined> {
    return this.streams.env;
  }

  /** Makes every later write show `secret` as `[redacted]`. */
  addSecret(secret: string | undefined): void {
    // A very short value would redact ordinary text; real keys are 32 characters or more.
    if (secret !== undefined && secret.length >= 8) this.secrets.add(secret);
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join(REDACTED);
    return out;
  }

  out(text: string): void {
    this.streams.stdout.write(this.redact(text));
  }

  err(text: string): void {
    this.streams.stderr.write(this.redact(text));
  }

  /** A warning on stderr. */
  warn(message: string): void {
    this.err(`warning: ${message}\n`);
  }

  /** Whether stdout is a terminal that takes colour: a TTY, `NO_COLOR` unset or empty, `TERM` not `dumb`. */
  get colour(): boolean {
    const env = this.streams.env;
    return this.streams.stdout.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
  }
}

/** ANSI styles, or plain text when colour is off. */
export interface Styles {
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;
const plain = (s: string) => s;

export function stylesFor(colour: boolean): Styles {
  return colour
    ? { green: sgr(32, 39), red: sgr(31, 39), yellow: sgr(33, 39), dim: sgr(2, 22), bold: sgr(1, 22) }
    : { green: plain, red: plain, yellow: plain, dim: plain, bold: plain };
}
