import { runEntryPoint } from '../common/entrypoint.js';
import { createLogger } from '../transport/observability.js';
import { loadInjectorConfig } from './config.js';
import { startInjector } from './server.js';

/** `node dist/services/injector/main.js`: the sidecar injection webhook. Settings come from the environment or `--flags`. */
runEntryPoint({
  name: 'injector',
  load: () => loadInjectorConfig(),
  logger: (config) => createLogger({ logLevel: config.logLevel, name: 'injector' }),
  printable: (config) => config,
  start: startInjector,
});
