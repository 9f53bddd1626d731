/**
 * Control-plane configuration (contract §2): the settings of common/settings.ts, read once at
 * boot from the environment and CLI flags and passed down explicitly.
 */
import {
  ConfigError, GATE_MODES, LOG_LEVELS, REDACTED, bool, decimal, decisionLogTarget, describeSettings, integer, loadSettings, nonEmpty, oneOf, origins, secret,
  type DecisionLogTarget, type Parser, type Setting,
} from '../common/settings.js';

import type { CertificateFiles } from '../transport/certificates.js';
import type { LogLevel } from '../transport/observability.js';

export { ConfigError, flagFor } from '../common/settings.js';
export type { LogLevel };
export type ResourceScopeGate = (typeof GATE_MODES)[number];

export interface Config {
  /** `postgres://…`; unset means embedded PostgreSQL (PGlite) under `dataDir`. Sensitive. */
  readonly databaseUrl?: string;
  /** Create the database DATABASE_URL names when it does not exist (else start-up stops). */
  readonly createDatabase: boolean;
  readonly dataDir: string;
  readonly port: number;
  readonly host: string;
  /**
   * The serving certificate's PEM files: both set, the port speaks TLS (re-read while running, so
   * a renewed pair is served without a restart); neither, plain text.
   */
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
  /** Secret of the platform key created on an empty database. Sensitive. */
  readonly bootstrapApiKey?: string;
  readonly resourceScopeGate: ResourceScopeGate;
  readonly watchHeartbeatMs: number;
  /** Bytes one Watch stream may hold for a client that does not read before it is ended (`resource_exhausted`). */
  readonly watchMaxBufferedBytes: number;
  /** Bytes of whole Watch snapshots kept for the next sidecars of their tenant (0: none). */
  readonly watchSnapshotCacheBytes: number;
  /** Change-log retention: the newest revisions of each tenant always kept. */
  readonly changeLogRetentionRevisions: number;
  /** Change-log retention: revisions younger than this are always kept, hours. */
  readonly changeLogRetentionHours: number;
  /** How often the change log is compacted, ms; 0: never. */
  readonly changeLogCompactIntervalMs: number;
  readonly minRevisionWaitMs: number;
  /** Rows the control plane's tenant indexes may hold together before idle tenants are dropped. */
  readonly indexMaxRows: number;
  readonly indexMaxBuilds: number;
  /** Origins browsers may call from (CORS); unset: no CORS headers. */
  readonly corsOrigins?: readonly string[];
  /** A console session unused for this long ends, minutes. */
  readonly sessionIdleMinutes: number;
  /** A console session ends this long after sign-in, however much it is used, hours. */
  readonly sessionMaxHours: number;
  /**
   * Mark the session cookie `Secure` (and name it `__Host-…`): undefined follows the listener
   * (TLS on: yes); true behind a proxy that terminates TLS.
   */
  readonly sessionSecureCookie?: boolean;
  /** Serve the web console under /console/. */
  readonly console: boolean;
  readonly logLevel: LogLevel;
  /** Where decisions are logged, one JSON line each (services/decision/log.ts); off by default. */
  readonly decisionLog: DecisionLogTarget;
  /** Share of decisions the decision log writes, 0 to 1. */
  readonly decisionLogSample: number;
  /** Bytes the decision log may hold unwritten; a line past it is dropped (and counted), never waited for. */
  readonly decisionLogBufferBytes: number;
}

const databaseUrl: Parser<string> = (raw, variable) => {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError(variable, 'must be a postgres:// or postgresql:// URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(variable, `must be a postgres:// or postgresql:// URL, got scheme ${url.protocol}`);
  }
  return raw.trim();
};

const SETTINGS = [
  { key: 'databaseUrl', variable: 'DATABASE_URL', parse: databaseUrl },
  { key: 'createDatabase', variable: 'SERVICE_DATABASE_CREATE', parse: bool, default: false },
  { key: 'dataDir', variable: 'SERVICE_DATA_DIR', parse: nonEmpty, default: './data' },
  { key: 'port', variable: 'SERVICE_PORT', parse: integer(0, 65535), default: 8080 },
  { key: 'host', variable: 'SERVICE_HOST', parse: nonEmpty, default: '127.0.0.1' },
  { key: 'tlsCertFile', variable: 'SERVICE_TLS_CERT_FILE', parse: nonEmpty },
  { key: 'tlsKeyFile', variable: 'SERVICE_TLS_KEY_FILE', parse: nonEmpty },
  { key: 'bootstrapApiKey', variable: 'SERVICE_BOOTSTRAP_API_KEY', parse: secret },
  { key: 'resourceScopeGate', variable: 'SERVICE_RESOURCE_SCOPE_GATE', parse: oneOf(GATE_MODES), default: 'off' },
  { key: 'watchHeartbeatMs', variable: 'SERVICE_WATCH_HEARTBEAT_MS', parse: integer(1, 3_600_000), default: 1000 },
  { key: 'watchMaxBufferedBytes', variable: 'SERVICE_WATCH_MAX_BUFFERED_BYTES', parse: integer(65_536, 1_073_741_824), default: 16 * 1024 * 1024 },
  { key: 'watchSnapshotCacheBytes', variable: 'SERVICE_WATCH_SNAPSHOT_CACHE_BYTES', parse: integer(0, 68_719_476_736), default: 128 * 1024 * 1024 },
  { key: 'changeLogRetentionRevisions', variable: 'SERVICE_CHANGE_LOG_RETENTION_REVISIONS', parse: integer(1, 1_000_000_000), default: 10_000 },
  { key: 'changeLogRetentionHours', variable: 'SERVICE_CHANGE_LOG_RETENTION_HOURS', parse: integer(0, 1_000_000), default: 90 * 24 },
  { key: 'changeLogCompactIntervalMs', variable: 'SERVICE_CHANGE_LOG_COMPACT_INTERVAL_MS', parse: integer(0, 86_400_000), default: 300_000 },
  { key: 'minRevisionWaitMs', variable: 'SERVICE_MIN_REVISION_WAIT_MS', parse: integer(0, 3_600_000), default: 1000 },
  { key: 'indexMaxRows', variable: 'SERVICE_INDEX_MAX_ROWS', parse: integer(0, 1_000_000_000), default: 5_000_000 },
  { key: 'indexMaxBuilds', variable: 'SERVICE_INDEX_MAX_BUILDS', parse: integer(1, 1_000), default: 4 },
  { key: 'corsOrigins', variable: 'SERVICE_CORS_ORIGINS', parse: origins },
  { key: 'sessionIdleMinutes', variable: 'SERVICE_SESSION_IDLE_MINUTES', parse: integer(1, 10_080), default: 30 },
  { key: 'sessionMaxHours', variable: 'SERVICE_SESSION_MAX_HOURS', parse: integer(1, 720), default: 12 },
  { key: 'sessionSecureCookie', variable: 'SERVICE_SESSION_SECURE_COOKIE', parse: bool },
  { key: 'console', variable: 'SERVICE_CONSOLE', parse: bool, default: true },
  { key: 'logLevel', variable: 'SERVICE_LOG_LEVEL', parse: oneOf(LOG_LEVELS), default: 'info' },
  { key: 'decisionLog', variable: 'SERVICE_DECISION_LOG', parse: decisionLogTarget, default: { kind: 'off' } },
  { key: 'decisionLogSample', variable: 'SERVICE_DECISION_LOG_SAMPLE', parse: decimal(0, 1), default: 1 },
  { key: 'decisionLogBufferBytes', variable: 'SERVICE_DECISION_LOG_BUFFER_BYTES', parse: integer(4096, 1_073_741_824), default: 4 * 1024 * 1024 },
] as const satisfies readonly Setting<Config>[];

/** Every configuration variable with its flag and default, for `--help` texts and docs. */
export const CONFIG_VARIABLES = describeSettings(SETTINGS);

/** Reads, validates and freezes the control plane's configuration (see common/settings.ts). */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  argv: readonly string[] = process.argv.slice(2),
): Config {
  const config: Config = loadSettings(SETTINGS, env, argv);
  // One without the other would serve plain text where TLS was meant, or nothing at all.
  if ((config.tlsCertFile === undefined) !== (config.tlsKeyFile === undefined)) {
    const [missing, given] = config.tlsCertFile === undefined ? ['SERVICE_TLS_CERT_FILE', 'SERVICE_TLS_KEY_FILE'] : ['SERVICE_TLS_KEY_FILE', 'SERVICE_TLS_CERT_FILE'];
    throw new ConfigError(missing, `is required when ${given} is set: TLS needs both the certificate and its key (or neither, for plain text)`);
  }
  return config;
}

/** The serving certificate's files as the listener takes them (undefined: plain text). */
export function tlsFilesOf(config: Config): CertificateFiles | undefined {
  if (config.tlsCertFile === undefined || config.tlsKeyFile === undefined) return undefined;
  return { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, certSetting: 'SERVICE_TLS_CERT_FILE', keySetting: 'SERVICE_TLS_KEY_FILE' };
}

/** A copy of the configuration that is safe to log: the bootstrap key and the database password are redacted. */
export function redactConfig(c: Config): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c };
  if (c.bootstrapApiKey !== undefined) out.bootstrapApiKey = REDACTED;
  if (c.databaseUrl !== undefined) {
    try {
      const url = new URL(c.databaseUrl);
      if (url.password) url.password = REDACTED;
      for (const k of [...url.searchParams.keys()]) {
        if (/pass|secret|key|token/i.test(k)) url.searchParams.set(k, REDACTED);
      }
      out.databaseUrl = url.toString();
    } catch {
      out.databaseUrl = REDACTED;
    }
  }
  return out;
}
