import { runEntryPoint } from '../../services/common/entrypoint.js';
import { createLogger } from '../../services/transport/observability.js';
import { INJECTOR_VARIABLES, loadInjectorConfig } from '../../services/injector/config.js';
import { startInjector } from '../../services/injector/server.js';

/** `node dist/cmd/injector/main.js`: the sidecar injection webhook. Settings come from the environment or `--flags`. */
runEntryPoint({
  name: 'injector',
  load: () => loadInjectorConfig(),
  logger: (config) => createLogger({ logLevel: config.logLevel, name: 'injector' }),
  printable: (config) => config,
  start: startInjector,
  help: {
    summary: 'The sidecar-injection webhook: adds a policy-decision sidecar to the pods it admits (Kubernetes AdmissionReview over HTTPS).',
    usage: 'node dist/cmd/injector/main.js [--flag value | --flag=value]...',
    settings: INJECTOR_VARIABLES,
  },
});
