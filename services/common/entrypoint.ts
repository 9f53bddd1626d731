/**
 * The shape every process's `main.ts` shares: settings read and validated (a bad one exits 2
 * naming its variable, as does a setting only start-up can check, such as a file it must open),
 * the process started, SIGINT/SIGTERM closing it once, and a failed start exiting 1. Closing
 * is bounded: a process exits within SHUTDOWN_LIMIT_MS of the signal (code 1 past it), and is
 * killed WATCHDOG_MS later if even exiting is stuck.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ConfigError, type describeSettings } from './settings.js';

/**
 * How long close() may take after SIGINT/SIGTERM before the process exits anyway, with code 1:
 * a close() that hangs must not hold a pod to its grace period (the injector's, the shortest of
 * the manifests, leaves 10 s after its 5 s preStop). Draining requests takes 0.5 s; exporting
 * the last spans may take most of the rest.
 */
export const SHUTDOWN_LIMIT_MS = 8_000;

/**
 * After the limit, how long before a thread of its own kills the process (SIGKILL): the limit's
 * timer needs the main thread, which a write to a pipe nobody reads can block for good.
 */
export const WATCHDOG_MS = 2_000;

export interface EntryPoint<C, P extends { close(): Promise<void> }> {
  /** As printed when it fails to start: `sidecar failed to start: …`. */
  name: string;
  load(): C;
  logger(config: C): Logger;
  /** The settings as they may be logged (secrets redacted). */
  printable(config: C): unknown;
  start(config: C, logger: Logger): Promise<P>;
  /** After a successful start (a banner, a warning). */
  started?(running: P, config: C, logger: Logger): void;
  /** SHUTDOWN_LIMIT_MS unless given (tests). */
  shutdownLimitMs?: number;
  /** What `--help` prints: one line saying what the process is, and its settings. */
  help: { summary: string; usage: string; settings: ReturnType<typeof describeSettings> };
}

/** The product's version, from the package.json above this module (sources or `dist/`). */
export function productVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    if (dirname(dir) === dir) return 'unknown';
  }
}

/** `--help`: what the process is, how settings are given, and each one with its flag and default. */
export function helpText(help: EntryPoint<unknown, { close(): Promise<void> }>['help']): string {
  const rows = help.settings.map((s) => [s.flag, s.variable, s.default === undefined ? '' : `default ${Array.isArray(s.default) ? s.default.join(',') : String(s.default)}`]);
  const width = (i: number) => Math.max(...rows.map((r) => r[i].length));
  const lines = rows.map((r) => `  ${r[0].padEnd(width(0))}  ${r[1].padEnd(width(1))}  ${r[2]}`.trimEnd());
  return `${help.summary}

Usage: ${help.usage}

Every setting is an environment variable with a flag twin; a flag wins over its variable.
Settings (see docs/configuration.md for what each one means):
${lines.join('\n')}

  --help, -h     print this and exit
  --version      print the version and exit
`;
}

export function runEntryPoint<C, P extends { close(): Promise<void> }>(e: EntryPoint<C, P>, argv: readonly string[] = process.argv.slice(2)): void {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(e.help));
    return;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`${e.name} ${productVersion()}\n`);
    return;
  }
  const configError = (err: unknown) => {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`configuration error: ${err.message}\n`);
    process.exit(2);
  };
  const main = async () => {
    let config: C;
    try {
      config = e.load();
    } catch (err) {
      return configError(err);
    }
    const logger = e.logger(config);
    // Listening from before the start: a signal during it is answered once the process is up,
    // within the same bound, rather than by Node's default of dying at once.
    let starting: Promise<P> | undefined;
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      boundShutdown(e.shutdownLimitMs ?? SHUTDOWN_LIMIT_MS, logger);
      logger.info({ signal }, 'shutting down');
      const running = await starting?.catch(() => undefined);
      if (running === undefined) return; // a failed start exits on its own (below)
      await running.close();
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
    logger.info({ config: e.printable(config) }, 'starting');
    starting = (async () => e.start(config, logger))();
    let running: P;
    try {
      running = await starting;
    } catch (err) {
      return configError(err);
    }
    // Even when a signal came during the start: the control plane's banner shows a key once.
    e.started?.(running, config, logger);
  };
  main().catch((err: unknown) => {
    process.stderr.write(`${e.name} failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}

/** Exits with code 1 once `limitMs` have passed, and has the process killed WATCHDOG_MS later if it is still there. */
function boundShutdown(limitMs: number, logger: Logger): void {
  setTimeout(() => {
    logger.error({ limitMs }, 'shutdown did not finish in time; exiting');
    process.exit(1);
  }, limitMs).unref();
  const watchdog = new Worker(WATCHDOG, { eval: true, workerData: { pid: process.pid, ms: limitMs + WATCHDOG_MS } });
  watchdog.on('error', (err) => logger.warn({ err }, 'the shutdown watchdog did not start; the time limit still applies'));
  watchdog.unref();
}

const WATCHDOG = `
const { workerData } = require('node:worker_threads');
setTimeout(() => process.kill(workerData.pid, 'SIGKILL'), workerData.ms);
`;
