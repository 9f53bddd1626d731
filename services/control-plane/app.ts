import type { Logger } from 'pino';
import { MissingDatabaseError, openDatabase, type Database } from '../store/db.js';
import { bootstrapKeyFile, ensureBootstrapKey, type GeneratedKey } from './auth/key-store.js';
import { CachedKeyVerifier } from './auth/key-cache.js';
import { KeyGuard } from './watch/key-guard.js';
import { controlPlaneLeanPath } from './decision/lean-path.js';
import { ConfigError, flagFor, tlsFilesOf, type Config } from './config.js';
import { PAST_INDEXES_KEPT, PastIndexes } from './decision/past-indexes.js';
import { TenantIndexes } from './decision/indexes.js';
import { ControlPlaneSource } from './decision/source.js';
import type { Deps } from './handlers/deps.js';
import { createLogger, createRegistry, rejectCounter, rpcMetrics } from '../transport/observability.js';
import { startServer, type RunningServer, type StartServerOptions } from '../transport/server.js';
import { readCertificatePair } from '../transport/certificates.js';
import { MAX_BODY_BYTES } from '../transport/request-limits.js';
import { apiKeyCaller, authInterceptor, leanCaller } from './auth/interceptor.js';
import { Sessions } from './auth/sessions.js';
import { SESSION_PATH, sessionRoute } from './auth/session-routes.js';
import { leanWatch } from './watch/lean-watch.js';
import { SnapshotService } from '../../gen/authz/v1/snapshot_service_pb.js';
import { storeErrors } from './errors.js';
import { indexMetrics, keyCacheMetrics, poolMetrics } from './observability.js';
import { registerServices, SERVICES } from './services.js';
import { directMethods } from './handlers/direct.js';
import { decisionCounter } from '../decision/metrics.js';
import type { WatchHub } from './watch/hub.js';
import { startWatch } from './watch/setup.js';
import type { WatchLimits } from './watch/stream.js';
import { DecisionLog } from '../decision/log.js';
import { startTracing, type Tracing } from '../transport/tracing.js';
import openApi from './openapi.json' with { type: 'json' };
import { consoleRoute, loadConsoleAssets, type ConsoleAssets } from './console/assets.js';

/** The lean paths in order (each takes its requests or returns false); undefined when none is on. */
function leanPaths(paths: (StartServerOptions['leanPath'] | undefined)[]): StartServerOptions['leanPath'] {
  const on = paths.filter((p) => p !== undefined);
  if (on.length === 0) return undefined;
  if (on.length === 1) return on[0];
  // No closure per request: this runs before every decision.
  return (req, res, shutdown) => {
    for (let i = 0; i < on.length; i++) if (on[i](req, res, shutdown)) return true;
    return false;
  };
}

/** The committed OpenAPI document (openapi.ts makes it), served at `GET /openapi.json`. */
const OPENAPI_TEXT = JSON.stringify(openApi);

/** Knobs tests turn (not configuration). */
export interface InternalOptions {
  /** Smaller Watch chunks and pages, faster polls. */
  watch?: Partial<WatchLimits>;
  /** `false` leaves the decision RPCs to connect-node (tests compare the two). */
  leanDecisions?: boolean;
  /** `false` leaves every Watch call to connect-node (tests compare the two). */
  leanWatch?: boolean;
  /** `false` leaves the bulk writes' REST routes to connect-node (tests compare the two). */
  directWrites?: boolean;
  /**
   * How often the keys of open Watch streams are verified again, ms (default 1,000); 0 leaves
   * only the checks a key write or a notifications resync starts (tests of that path).
   */
  watchKeyCheckMs?: number;
  /** The `OTEL_*` variables tracing reads (default: the process's environment). */
  otelEnv?: Record<string, string | undefined>;
  /** The console sessions' clock (epoch ms; default Date.now): tests move it past timeouts. */
  sessionClock?: () => number;
  /** See `DatabaseOptions.embeddedImage` (the test suites' migrated embedded database). */
  embeddedImage?: string;
}

export interface ControlPlane {
  server: RunningServer;
  db: Database;
  /** The platform key generated on an empty database (print it once), if one was, and the file holding it. */
  generatedBootstrapKey?: GeneratedKey;
  /** The Watch streams (for metrics and tests). */
  watch: WatchHub;
  close(): Promise<void>;
}

/**
 * The composition root: opens (and migrates) the database, makes sure a platform key
 * exists, and serves every service on one port. Configuration arrives validated.
 */
export async function startControlPlane(
  config: Config,
  logger: Logger = createLogger({ logLevel: config.logLevel }),
  internal: InternalOptions = {},
): Promise<ControlPlane> {
  const registry = createRegistry();
  // Both can refuse a setting (ConfigError): before the database is touched.
  const tracing = startTracing({ serviceName: 'control-plane', logger, env: internal.otelEnv });
  let decisionLog: DecisionLog | undefined;
  let db: Database | undefined;
  const tls = tlsFilesOf(config);
  try {
    // The listener reads them again; this refuses a certificate before migrations run.
    if (tls) await readCertificatePair(tls);
    decisionLog = await DecisionLog.open({
      target: config.decisionLog, sample: config.decisionLogSample, bufferBytes: config.decisionLogBufferBytes,
      service: 'control-plane', variable: 'SERVICE_DECISION_LOG', registry, logger,
    });
    db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, createDatabase: config.createDatabase, embeddedImage: internal.embeddedImage, logger });
  } catch (err) {
    await shutdownObservability(tracing, decisionLog);
    if (err instanceof MissingDatabaseError) {
      throw new ConfigError('DATABASE_URL', `${err.message}: create it, correct the URL, or set SERVICE_DATABASE_CREATE=true (${flagFor('SERVICE_DATABASE_CREATE')} true) to have it created at start-up`);
    }
    throw err;
  }
  try {
    await db.notifications.start();
    const generated = await ensureBootstrapKey(db, { bootstrapApiKey: config.bootstrapApiKey, keyFile: bootstrapKeyFile(config), log: logger });
    const indexes = new TenantIndexes(db, { minRevisionWaitMs: config.minRevisionWaitMs, maxRows: config.indexMaxRows, maxBuilds: config.indexMaxBuilds });
    indexMetrics(registry, indexes);
    poolMetrics(registry, db);
    const verifier = new CachedKeyVerifier(db);
    keyCacheMetrics(registry, verifier);
    const sessions = new Sessions(db, verifier, {
      idleMs: config.sessionIdleMinutes * 60_000, maxMs: config.sessionMaxHours * 3_600_000, secure: config.sessionSecureCookie ?? tls !== undefined, now: internal.sessionClock,
    });
    const watch = startWatch(db, config, registry, logger, internal.watch, () => sessions.sweep());
    const watchKeys = new KeyGuard(verifier, db.notifications, internal.watchKeyCheckMs ?? 1_000, (err) => logger.debug({ err }, 'a Watch stream\'s key could not be checked; checked again later'));
    const deps: Deps = {
      db,
      decision: new ControlPlaneSource(indexes, new PastIndexes(db, { maxIndexes: PAST_INDEXES_KEPT, maxRows: config.indexMaxRows }), config.resourceScopeGate, (err) => logger.error({ err }, 'evaluation failed; denied'), decisionCounter(registry), decisionLog),
      watch: watch.hub,
      watchKeys,
    };
    const server = await startServer({
      host: config.host,
      port: config.port,
      tls,
      routes: (router) => registerServices(router, deps),
      services: SERVICES,
      authenticate: apiKeyCaller(verifier, sessions),
      interceptors: [authInterceptor(verifier, sessions)],
      httpRoutes: { [SESSION_PATH]: sessionRoute(sessions) },
      pages: config.console ? consoleRoute(consoleAssets(logger)) : undefined,
      direct: internal.directWrites === false ? undefined : directMethods(deps),
      leanPath: leanPaths([
        internal.leanDecisions === false ? undefined : controlPlaneLeanPath({ source: deps.decision, verifier, sessions, logger, registry, tracing }),
        internal.leanWatch === false ? undefined : leanWatch({
          hub: watch.hub, keys: watchKeys, caller: leanCaller(verifier, SnapshotService, sessions), maxBodyBytes: MAX_BODY_BYTES,
          classifyError: storeErrors, logger, metrics: rpcMetrics(registry), rejected: rejectCounter(registry), tracing,
        }),
      ]),
      classifyError: storeErrors,
      readiness: () => db.ping(),
      openApi: OPENAPI_TEXT,
      corsOrigins: config.corsOrigins,
      logger,
      registry,
      tracing,
    });
    const opened = db;
    return {
      server,
      db,
      generatedBootstrapKey: generated,
      watch: watch.hub,
      async close() {
        // Watch streams first: they end with `unavailable` at once instead of holding the server's grace period.
        watchKeys.close();
        await watch.close();
        await server.close();
        await opened.close();
        await shutdownObservability(tracing, decisionLog);
      },
    };
  } catch (err) {
    await db.close();
    await shutdownObservability(tracing, decisionLog);
    throw err;
  }
}

/** Exports the last spans and writes the last decision-log lines. */
async function shutdownObservability(tracing: Tracing | undefined, decisionLog: DecisionLog | undefined): Promise<void> {
  await Promise.all([tracing?.shutdown(), decisionLog?.close()]);
}

/** The console's build, read once; a warning (and a 503 page) when it is missing. */
function consoleAssets(logger: Logger): ConsoleAssets | undefined {
  const assets = loadConsoleAssets();
  if (assets === undefined) logger.warn('the console is not built (no dist/console/index.html): run `npm run build:console`; /console/ answers 503 until then');
  return assets;
}
