import type { Logger } from 'pino';
import { openDatabase, type Database } from '../store/db.js';
import { ensureBootstrapKey, StoreKeyVerifier } from './auth/key-store.js';
import type { Config } from './config.js';
import { TenantIndexes } from './decision/indexes.js';
import type { Deps } from './handlers/kit.js';
import { createLogger, createRegistry, indexMetrics } from './observability.js';
import { startServer, type RunningServer } from './server/index.js';
import { registerServices, SERVICES } from './services.js';

export interface ControlPlane {
  server: RunningServer;
  db: Database;
  /** The platform key generated on an empty database (print it once), if one was. */
  generatedBootstrapKey?: string;
  close(): Promise<void>;
}

/**
 * The composition root: opens (and migrates) the database, makes sure a platform key
 * exists, and serves every service on one port. Configuration arrives validated.
 */
export async function startControlPlane(config: Config, logger: Logger = createLogger({ logLevel: config.logLevel })): Promise<ControlPlane> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const generated = await ensureBootstrapKey(db, { bootstrapApiKey: config.bootstrapApiKey, log: logger });
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: config.minRevisionWaitMs, maxRows: config.indexMaxRows });
    const registry = createRegistry();
    indexMetrics(registry, indexes);
    const deps: Deps = {
      db,
      decision: {
        indexes,
        gate: config.resourceScopeGate,
        onEngineError: (err) => logger.error({ err }, 'evaluation failed; denied'),
      },
    };
    const server = await startServer({
      config,
      routes: (router) => registerServices(router, deps),
      services: SERVICES,
      keyVerifier: new StoreKeyVerifier(db),
      readiness: () => db.ping(),
      logger,
      registry,
    });
    return {
      server,
      db,
      generatedBootstrapKey: generated ?? undefined,
      async close() {
        await server.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}
