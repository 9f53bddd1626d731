/**
 * Sidecar configuration (contract §2): the `SIDECAR_*` variables and their flag twins, read once
 * at start and validated (a bad or missing value names its variable).
 */
import {
  ConfigError, LOG_LEVELS, REDACTED, decimal, decisionLogTarget, describeSettings, hostNames, httpUrl, integer, loadSettings, nonEmpty, oneOf, origins, secret,
  type DecisionLogTarget, type Parser, type Setting,
} from '../services/common/settings.js';
import type { LogLevel } from '../services/transport/observability.js';

export const WATCH_COMPRESSIONS = ['none', 'gzip'] as const;
export type WatchCompression = (typeof WATCH_COMPRESSIONS)[number];
export const WATCH_THREADS = ['auto', 'on', 'off'] as const;
export type WatchThreadMode = (typeof WATCH_THREADS)[number];

export interface SidecarConfig {
  /** The control plane to follow: `http://host:port` (gRPC over h2c) or `https://…` (verified). */
  readonly controlPlaneUrl: string;
  /**
   * A PEM bundle of CAs trusted for an `https://` control plane besides the default roots (a
   * private CA: cert-manager's, in Kubernetes); unset: the default roots only.
   */
  readonly controlPlaneCaFile?: string;
  /** A `service` or `platform` key of the tenant. Sensitive. */
  readonly apiKey: string;
  readonly tenantId: string;
  /** Where decisions are answered: loopback by default (the listener is the boundary). */
  readonly host: string;
  /**
   * Names (or addresses) a request may give in `Host`, besides loopback ones and `host` itself
   * when it is a specific address: any other is refused, so that a web page reaching the
   * listener under a name of its own (DNS rebinding) reads no decision. Absent: none.
   */
  readonly allowedHosts?: readonly string[];
  readonly port: number;
  /**
   * A second listener for the kubelet's probes and Prometheus (sidecar/probes.ts): `/healthz`,
   * `/readyz`, `/metrics`, never a decision, so it may listen on the pod's address. 0 or absent: off.
   */
  readonly probePort?: number;
  /** Where that listener listens (default `0.0.0.0`: probes and scrapes come to the pod's IP). */
  readonly probeHost?: string;
  /** Past this long without a message from the control plane, decisions fail closed. */
  readonly maxStalenessMs: number;
  /** How long a request with `consistency.minRevision` may wait for the index to catch up. */
  readonly minRevisionWaitMs: number;
  /** Whether the Watch stream may come gzip-compressed (`none`: plain, cheaper for both ends on a fast link). */
  readonly watchCompression: WatchCompression;
  /**
   * Whether the Watch stream is received on a worker thread, so that a snapshot keeps arriving
   * while the main thread indexes it (sidecar/watch-thread.ts): `on`, `off` (the default, and
   * when absent), or `auto`: when the process may use two CPUs or more, cgroup quota included.
   * Off by default because the worker costs 50–70 MiB during a load, which took a 2.1M-entity
   * tenant from the real control plane past 1 GiB once in three runs, where it gained no time.
   */
  readonly watchThread?: WatchThreadMode;
  /** Origins browsers may call from (CORS); unset: no CORS headers. */
  readonly corsOrigins?: readonly string[];
  readonly logLevel: LogLevel;
  /** Where decisions are logged, one JSON line each (services/decision/log.ts); off by default (and when absent). */
  readonly decisionLog?: DecisionLogTarget;
  /** Share of decisions the decision log writes, 0 to 1 (default 1). */
  readonly decisionLogSample?: number;
  /** Bytes the decision log may hold unwritten; a line past it is dropped (and counted), never waited for. */
  readonly decisionLogBufferBytes?: number;
}

const tenantId: Parser<string> = (raw, variable) => {
  const v = nonEmpty(raw, variable).trim();
  if (!/^tenant_[A-Za-z0-9_-]{1,64}$/.test(v)) throw new ConfigError(variable, `must be a tenant id (tenant_…), got ${JSON.stringify(raw.slice(0, 80))}`);
  return v;
};

const SETTINGS = [
  { key: 'controlPlaneUrl', variable: 'SIDECAR_CONTROL_PLANE_URL', parse: httpUrl, required: true },
  { key: 'controlPlaneCaFile', variable: 'SIDECAR_CONTROL_PLANE_CA_FILE', parse: nonEmpty },
  { key: 'apiKey', variable: 'SIDECAR_API_KEY', parse: secret, required: true },
  { key: 'tenantId', variable: 'SIDECAR_TENANT_ID', parse: tenantId, required: true },
  { key: 'host', variable: 'SIDECAR_HOST', parse: nonEmpty, default: '127.0.0.1' },
  { key: 'port', variable: 'SIDECAR_PORT', parse: integer(0, 65535), default: 8181 },
  { key: 'allowedHosts', variable: 'SIDECAR_ALLOWED_HOSTS', parse: hostNames },
  { key: 'probeHost', variable: 'SIDECAR_PROBE_HOST', parse: nonEmpty, default: '0.0.0.0' },
  { key: 'probePort', variable: 'SIDECAR_PROBE_PORT', parse: integer(0, 65535), default: 0 },
  { key: 'maxStalenessMs', variable: 'SIDECAR_MAX_STALENESS_MS', parse: integer(1, 86_400_000), default: 30_000 },
  { key: 'minRevisionWaitMs', variable: 'SIDECAR_MIN_REVISION_WAIT_MS', parse: integer(0, 3_600_000), default: 1000 },
  { key: 'watchCompression', variable: 'SIDECAR_WATCH_COMPRESSION', parse: oneOf(WATCH_COMPRESSIONS), default: 'none' },
  { key: 'watchThread', variable: 'SIDECAR_WATCH_THREAD', parse: oneOf(WATCH_THREADS), default: 'off' },
  { key: 'corsOrigins', variable: 'SIDECAR_CORS_ORIGINS', parse: origins },
  { key: 'logLevel', variable: 'SIDECAR_LOG_LEVEL', parse: oneOf(LOG_LEVELS), default: 'info' },
  { key: 'decisionLog', variable: 'SIDECAR_DECISION_LOG', parse: decisionLogTarget, default: { kind: 'off' } },
  { key: 'decisionLogSample', variable: 'SIDECAR_DECISION_LOG_SAMPLE', parse: decimal(0, 1), default: 1 },
  { key: 'decisionLogBufferBytes', variable: 'SIDECAR_DECISION_LOG_BUFFER_BYTES', parse: integer(4096, 1_073_741_824), default: 4 * 1024 * 1024 },
] as const satisfies readonly Setting<SidecarConfig>[];

export const SIDECAR_VARIABLES = describeSettings(SETTINGS);

/** Reads, validates and freezes the sidecar's configuration. */
export function loadSidecarConfig(
  env: Record<string, string | undefined> = process.env,
  argv: readonly string[] = process.argv.slice(2),
): SidecarConfig {
  const config: SidecarConfig = loadSettings(SETTINGS, env, argv);
  // A CA for a plain-text control plane would be trusted for nothing: the URL is likely the mistake.
  if (config.controlPlaneCaFile !== undefined && !config.controlPlaneUrl.startsWith('https:')) {
    throw new ConfigError('SIDECAR_CONTROL_PLANE_CA_FILE', `is only for an https:// control plane, and SIDECAR_CONTROL_PLANE_URL is ${config.controlPlaneUrl}`);
  }
  // Checked here, not left to the second listen: the probe listener's default host (0.0.0.0)
  // covers loopback, so the two would collide whatever SIDECAR_HOST says.
  if (config.probePort !== undefined && config.probePort !== 0 && config.probePort === config.port) {
    throw new ConfigError('SIDECAR_PROBE_PORT', `must differ from SIDECAR_PORT (both ${config.port}): decisions and probes are separate listeners`);
  }
  return config;
}

/** A copy safe to log: the API key is redacted. */
export function redactSidecarConfig(c: SidecarConfig): Record<string, unknown> {
  return { ...c, apiKey: REDACTED };
}
