import { ConfigError, loadConfig, redactConfig } from './config.js';
import { createLogger } from './observability.js';
import { startControlPlane } from './app.js';

/** `npm start`: the control plane. Settings come from the environment or `--flags`. */
async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger({ logLevel: config.logLevel, name: 'control-plane' });
  logger.info({ config: redactConfig(config) }, 'starting');
  const cp = await startControlPlane(config, logger);
  if (cp.generatedBootstrapKey) {
    process.stderr.write(
      `\nA platform API key was created for this empty database. It is shown only now:\n\n  ${cp.generatedBootstrapKey}\n\n` +
        `Use it as  x-api-key: <key>  (or Authorization: Bearer <key>).\n\n`,
    );
  }
  logger.info({ url: cp.server.url, database: cp.db.backend }, 'control plane listening');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await cp.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`control plane failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
