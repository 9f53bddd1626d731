/**
 * The shape every process's `main.ts` shares: settings read and validated (a bad one exits 2
 * naming its variable, as does a setting only start-up can check, such as a file it must open),
 * the process started, SIGINT/SIGTERM closing it once, and a failed start exiting 1.
 */
import type { Logger } from 'pino';
import { ConfigError } from './settings.js';

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
}

export function runEntryPoint<C, P extends { close(): Promise<void> }>(e: EntryPoint<C, P>): void {
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
    logger.info({ config: e.printable(config) }, 'starting');
    let running: P;
    try {
      running = await e.start(config, logger);
    } catch (err) {
      return configError(err);
    }
    e.started?.(running, config, logger);
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down');
      await running.close();
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
  };
  main().catch((err: unknown) => {
    process.stderr.write(`${e.name} failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}
