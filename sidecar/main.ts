import { runEntryPoint } from '../services/common/entrypoint.js';
import { createLogger } from '../services/transport/observability.js';
import { loadSidecarConfig, redactSidecarConfig } from './config.js';
import { startSidecar } from './app.js';

/** `npm run sidecar`: a policy-decision sidecar. Settings come from the environment or `--flags`. */
runEntryPoint({
  name: 'sidecar',
  load: () => loadSidecarConfig(),
  logger: (config) => createLogger({ logLevel: config.logLevel, name: 'sidecar' }),
  printable: redactSidecarConfig,
  start: (config, logger) => {
    if (!isLoopback(config.host)) {
      // Callers need no credentials: the listener is the boundary (contract §2).
      logger.warn({ host: config.host }, 'SIDECAR_HOST is not a loopback address: anything that can reach it gets decisions about this tenant without credentials');
    }
    return startSidecar(config, logger);
  },
});

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
