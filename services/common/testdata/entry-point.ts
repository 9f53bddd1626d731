/**
 * An entry point for entrypoint.test.ts whose close() is as `FIXTURE_CLOSE` says: `ok` resolves,
 * `hang` never settles, `block` holds the main thread forever (as a write to a pipe nobody reads
 * would). It takes FIXTURE_START_MS to start; its shutdown limit is FIXTURE_LIMIT_MS.
 */
import { runEntryPoint } from '../entrypoint.js';
import { createLogger } from '../../transport/observability.js';

const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

runEntryPoint({
  name: 'fixture',
  load: () => ({ close: process.env.FIXTURE_CLOSE ?? 'ok' }),
  logger: () => createLogger({ name: 'fixture' }),
  printable: (config) => config,
  shutdownLimitMs: Number(process.env.FIXTURE_LIMIT_MS),
  help: { summary: 'A test fixture.', usage: 'entry-point.ts', settings: [] },
  async start(config, logger) {
    await new Promise((r) => setTimeout(r, Number(process.env.FIXTURE_START_MS ?? 0)));
    // Keeps the event loop alive, as a listener would.
    const alive = setInterval(() => undefined, 60_000);
    logger.info({ url: 'fixture:' }, 'fixture listening');
    return {
      close: async () => {
        if (config.close === 'hang') return new Promise<void>(() => undefined);
        if (config.close === 'block') for (;;) Atomics.wait(SLEEPER, 0, 0);
        clearInterval(alive);
        logger.info('fixture closed');
      },
    };
  },
});
