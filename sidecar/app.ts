import type { Logger } from 'pino';
import { DecisionService } from '../gen/authz/v1/decision_service_pb.js';
import { decisionService } from '../services/decision/connect.js';
import { leanDecisions } from '../services/decision/lean.js';
import { decisionCounter } from '../services/decision/metrics.js';
import { MAX_BODY_BYTES } from '../services/transport/request-limits.js';
import { createLogger, createRegistry, rejectCounter, rpcMetrics } from '../services/transport/observability.js';
import { startServer, type RunningServer } from '../services/transport/server.js';
import type { SidecarConfig } from './config.js';
import { Follower } from './follower.js';
import { sidecarMetrics } from './metrics.js';
import { startProbeServer, type RunningProbeServer } from './probes.js';
import { SidecarSource } from './source.js';
import { useWatchThread } from './watch-thread.js';
import { DecisionLog } from '../services/decision/log.js';
import { startTracing } from '../services/transport/tracing.js';
import { readCaBundle } from '../services/transport/certificates.js';

export interface Sidecar {
  server: RunningServer;
  /** The probe listener (`SIDECAR_PROBE_PORT`), when on. */
  probes?: RunningProbeServer;
  follower: Follower;
  close(): Promise<void>;
}

/**
 * The composition root of the sidecar: follows the tenant's Watch stream and answers
 * DecisionService (gRPC, gRPC-Web, Connect, REST) with the shared engine, plus `/healthz`,
 * `/readyz` (200 only with a fresh snapshot) and `/metrics`, and, with `SIDECAR_PROBE_PORT`, the
 * last three alone on a second listener (probes.ts). It starts listening at once and stays up,
 * not ready, while the control plane is unreachable or refuses it.
 */
export async function startSidecar(
  config: SidecarConfig,
  logger: Logger = createLogger({ logLevel: config.logLevel, name: 'sidecar' }),
  /** The `OTEL_*` variables tracing reads (default: the process's environment). */
  otelEnv?: Record<string, string | undefined>,
): Promise<Sidecar> {
  // Before anything starts: a CA file that does not load stops the start, naming its setting.
  const ca = config.controlPlaneCaFile === undefined ? undefined : await readCaBundle(config.controlPlaneCaFile, 'SIDECAR_CONTROL_PLANE_CA_FILE');
  const plain = new URL(config.controlPlaneUrl);
  if (plain.protocol === 'http:' && !isLoopbackHost(plain.hostname)) {
    logger.warn(
      { url: config.controlPlaneUrl },
      'SIDECAR_CONTROL_PLANE_URL is plain http:// to another host: this sidecar\'s API key and its tenant\'s data cross the network unencrypted, and anything on the path can read or change them; use https:// (the Kubernetes manifests do)',
    );
  }
  const registry = createRegistry();
  const tracing = startTracing({ serviceName: 'sidecar', logger, env: otelEnv });
  let decisionLog: DecisionLog | undefined;
  try {
    decisionLog = await DecisionLog.open({
      target: config.decisionLog ?? { kind: 'off' }, sample: config.decisionLogSample ?? 1, bufferBytes: config.decisionLogBufferBytes ?? 4 * 1024 * 1024,
      service: 'sidecar', variable: 'SIDECAR_DECISION_LOG', registry, logger,
    });
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
  let follower: Follower | undefined;
  const metrics = sidecarMetrics(registry, () => follower);
  const mode = config.watchThread ?? 'off';
  const watchThread = mode === 'on' || (mode === 'auto' && useWatchThread());
  logger.info({ watchThread, mode }, watchThread ? 'the Watch stream is received on a worker thread' : 'the Watch stream is received on the main thread');
  follower = new Follower({
    controlPlaneUrl: config.controlPlaneUrl, ca, apiKey: config.apiKey, tenantId: config.tenantId,
    maxStalenessMs: config.maxStalenessMs, compression: config.watchCompression, watchThread, logger, metrics,
  });
  const f = follower;
  const source = new SidecarSource(f, config, (err) => logger.error({ err }, 'evaluation failed; denied'), decisionCounter(registry), decisionLog);
  const server = await startServer({
    host: config.host,
    port: config.port,
    name: 'sidecar',
    routes: (router) => router.service(DecisionService, decisionService(source, () => undefined)),
    services: [DecisionService],
    readiness: () => f.fresh(),
    corsOrigins: config.corsOrigins,
    // Always on: decisions need no credentials here, so the name a caller uses is checked.
    allowedHosts: config.allowedHosts ?? [],
    leanPath: leanDecisions({
      source, caller: () => undefined, maxBodyBytes: MAX_BODY_BYTES, logger, metrics: rpcMetrics(registry), rejected: rejectCounter(registry), tracing,
    }),
    logger,
    registry,
    tracing,
  });
  let probes: RunningProbeServer | undefined;
  if (config.probePort) {
    try {
      probes = await startProbeServer({ host: config.probeHost ?? '0.0.0.0', port: config.probePort, readiness: () => f.fresh(), registry, logger });
    } catch (err) {
      // The port taken, or the host not an address of this pod: nothing is left listening.
      await server.close();
      await Promise.all([tracing?.shutdown(), decisionLog?.close()]);
      throw err;
    }
  }
  f.start();
  return {
    server,
    probes,
    follower: f,
    async close() {
      await Promise.all([server.close(), probes?.close()]);
      await f.stop();
      await Promise.all([tracing?.shutdown(), decisionLog?.close()]);
    },
  };
}

/** Whether a URL's host name is this machine's loopback (`localhost`, 127.0.0.0/8, `[::1]`). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
