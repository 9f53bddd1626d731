import { runEntryPoint } from '../../services/common/entrypoint.js';
import { canonicalHost, isLoopbackHost } from '../../services/common/hosts.js';
import { createLogger } from '../../services/transport/observability.js';
import { loadSidecarConfig, redactSidecarConfig, SIDECAR_VARIABLES } from '../../sidecar/config.js';
import { startSidecar } from '../../sidecar/app.js';

/** `npm run sidecar`: a policy-decision sidecar. Settings come from the environment or `--flags`. */
runEntryPoint({
  name: 'sidecar',
  load: () => loadSidecarConfig(),
  logger: (config) => createLogger({ logLevel: config.logLevel, name: 'sidecar' }),
  printable: redactSidecarConfig,
  help: {
    summary: 'The authz policy-decision sidecar: follows one tenant\'s Watch stream and answers decisions on loopback over gRPC, Connect and REST.',
    usage: 'npm run sidecar -- [--flag value | --flag=value]...   (or node dist/cmd/sidecar/main.js …)',
    settings: SIDECAR_VARIABLES,
  },
  start: (config, logger) => {
    const host = canonicalHost(config.host);
    if (host === undefined || !isLoopbackHost(host)) {
      // Callers need no credentials: the listener is the boundary (contract §2).
      logger.warn(
        { host: config.host, allowedHosts: config.allowedHosts ?? [] },
        'SIDECAR_HOST is not a loopback address: anything that can reach it gets decisions about this tenant without credentials'
          + ' (a request must still name in Host a loopback host, an entry of SIDECAR_ALLOWED_HOSTS, or SIDECAR_HOST when it is a specific address)',
      );
    }
    return startSidecar(config, logger);
  },
});
