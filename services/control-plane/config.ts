/**
 * Control-plane configuration (contract §2): parsed and validated once at boot from the
 * environment and CLI flags, then passed down explicitly. Every variable has a flag twin
 * (`SERVICE_PORT` ↔ `--service-port 8080` or `--service-port=8080`); a flag wins over the
 * variable. A bad value throws a ConfigError naming the variable.
 */

export type ResourceScopeGate = 'off' | 'links-fallback' | 'strict';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  /** `postgres://…`; unset means embedded PostgreSQL (PGlite) under `dataDir`. Sensitive. */
  readonly databaseUrl?: string;
  readonly dataDir: string;
  readonly port: number;
  readonly host: string;
  /** Secret of the platform key created on an empty database. Sensitive. */
  readonly bootstrapApiKey?: string;
  readonly resourceScopeGate: ResourceScopeGate;
  readonly watchHeartbeatMs: number;
  readonly minRevisionWaitMs: number;
  /** Rows the control plane's tenant indexes may hold together before idle tenants are dropped. */
  readonly indexMaxRows: number;
  readonly logLevel: LogLevel;
}

/** A configuration value is missing or malformed; `variable` names the environment variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Parser<T> = (raw: string, variable: string) => T;

interface Setting<K extends keyof Config> {
  key: K;
  variable: string;
  parse: Parser<NonNullable<Config[K]>>;
  default?: Config[K];
}

const GATES: readonly ResourceScopeGate[] = ['off', 'links-fallback', 'strict'];
const LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const nonEmpty: Parser<string> = (raw, variable) => {
  if (raw.trim() === '') throw new ConfigError(variable, 'must not be empty');
  return raw;
};

const integer =
  (min: number, max: number): Parser<number> =>
  (raw, variable) => {
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(variable, `must be an integer, got ${JSON.stringify(raw)}`);
    const n = Number(raw.trim());
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new ConfigError(variable, `must be between ${min} and ${max}, got ${raw}`);
    }
    return n;
  };

const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw, variable) => {
    const v = raw.trim() as T;
    if (!values.includes(v)) {
      throw new ConfigError(variable, `must be one of ${values.map((x) => `'${x}'`).join(', ')}, got ${JSON.stringify(raw)}`);
    }
    return v;
  };

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

const secret: Parser<string> = (raw, variable) => {
  if (raw === '') throw new ConfigError(variable, 'must not be empty');
  // The secret travels in an HTTP header: visible ASCII only.
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError(variable, 'must be printable ASCII without spaces');
  return raw;
};

const SETTINGS = [
  { key: 'databaseUrl', variable: 'DATABASE_URL', parse: databaseUrl },
  { key: 'dataDir', variable: 'SERVICE_DATA_DIR', parse: nonEmpty, default: './data' },
  { key: 'port', variable: 'SERVICE_PORT', parse: integer(0, 65535), default: 8080 },
  { key: 'host', variable: 'SERVICE_HOST', parse: nonEmpty, default: '127.0.0.1' },
  { key: 'bootstrapApiKey', variable: 'SERVICE_BOOTSTRAP_API_KEY', parse: secret },
  { key: 'resourceScopeGate', variable: 'SERVICE_RESOURCE_SCOPE_GATE', parse: oneOf(GATES), default: 'off' },
  { key: 'watchHeartbeatMs', variable: 'SERVICE_WATCH_HEARTBEAT_MS', parse: integer(1, 3_600_000), default: 1000 },
  { key: 'minRevisionWaitMs', variable: 'SERVICE_MIN_REVISION_WAIT_MS', parse: integer(0, 3_600_000), default: 1000 },
  { key: 'indexMaxRows', variable: 'SERVICE_INDEX_MAX_ROWS', parse: integer(0, 1_000_000_000), default: 5_000_000 },
  { key: 'logLevel', variable: 'SERVICE_LOG_LEVEL', parse: oneOf(LEVELS), default: 'info' },
] as const satisfies readonly Setting<keyof Config>[];

/** The CLI flag twin of an environment variable: `SERVICE_PORT` → `--service-port`. */
export function flagFor(variable: string): string {
  return '--' + variable.toLowerCase().replace(/_/g, '-');
}

/** Every configuration variable with its flag and default, for `--help` texts and docs. */
export const CONFIG_VARIABLES: ReadonlyArray<{ variable: string; flag: string; default?: string | number }> = SETTINGS.map(
  (s) => ({ variable: s.variable, flag: flagFor(s.variable), default: 'default' in s ? s.default : undefined }),
);

function parseFlags(argv: readonly string[]): Map<string, string> {
  const byFlag = new Map<string, string>(SETTINGS.map((s) => [flagFor(s.variable), s.variable]));
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new ConfigError('argv', `unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const variable = byFlag.get(flag);
    if (!variable) throw new ConfigError('argv', `unknown flag ${flag}`);
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new ConfigError(variable, `flag ${flag} needs a value`);
      value = next;
      i++;
    }
    out.set(variable, value);
  }
  return out;
}

/**
 * Reads, validates and freezes the configuration. Flags win over environment variables; an
 * empty environment variable counts as unset. Throws ConfigError naming the variable at fault.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  argv: readonly string[] = process.argv.slice(2),
): Config {
  const flags = parseFlags(argv);
  const config: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const fromFlag = flags.get(s.variable);
    const fromEnv = env[s.variable];
    const raw = fromFlag ?? (fromEnv === '' ? undefined : fromEnv);
    if (raw !== undefined) {
      try {
        config[s.key] = s.parse(raw, s.variable);
      } catch (e) {
        if (e instanceof ConfigError && fromFlag !== undefined) {
          throw new ConfigError(s.variable, `${e.message.slice(s.variable.length + 2)} (from flag ${flagFor(s.variable)})`);
        }
        throw e;
      }
    } else if ('default' in s) {
      config[s.key] = s.default;
    }
  }
  return Object.freeze(config) as unknown as Config;
}

const REDACTED = '[redacted]';

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
