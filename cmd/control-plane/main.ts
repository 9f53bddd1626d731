import { runEntryPoint } from '../../services/common/entrypoint.js';
import { createLogger } from '../../services/transport/observability.js';
import { CONFIG_VARIABLES, loadConfig, redactConfig } from '../../services/control-plane/config.js';
import { startControlPlane } from '../../services/control-plane/app.js';
import { CONTROL_PLANE_NODE_FLAGS, missingNodeFlags } from '../../services/control-plane/node-flags.js';

/** `npm start`: the control plane. Settings come from the environment or `--flags`. */
runEntryPoint({
  name: 'control plane',
  load: () => loadConfig(),
  logger: (config) => createLogger({ logLevel: config.logLevel, name: 'control-plane' }),
  printable: redactConfig,
  start: (config, logger) => startControlPlane(config, logger),
  help: {
    summary: 'The authz control plane: the management API and decisions over gRPC, Connect and REST on one port, and the Watch stream its sidecars follow.',
    usage: 'npm start -- [--flag value | --flag=value]...   (or node --no-memory-reducer dist/cmd/control-plane/main.js …)',
    settings: CONFIG_VARIABLES,
  },
  started(cp, _config, logger) {
    const generated = cp.generatedBootstrapKey;
    if (generated) {
      const kept = generated.keyFile === undefined
        ? 'It is shown only now: store it.\n'
        : `It is shown only now, and kept in ${generated.keyFile} (readable by this user only).\n`;
      process.stderr.write(
        `\nA platform API key was created for this empty database. ${kept}\n  ${generated.secret}\n\n` +
          `Use it as  x-api-key: <key>  (or Authorization: Bearer <key>).\n\n`,
      );
    }
    const missing = missingNodeFlags();
    if (missing.length > 0) {
      logger.warn({ missing, expected: `node ${CONTROL_PLANE_NODE_FLAGS.join(' ')} dist/cmd/control-plane/main.js` }, 'node was started without the control plane\'s V8 flags: snapshot reads cost more CPU (see node-flags.ts)');
    }
    logger.info({ url: cp.server.url, database: cp.db.backend }, 'control plane listening');
  },
});
