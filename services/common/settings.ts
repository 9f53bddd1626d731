/**
 * Configuration of both processes (contract §2): settings read once at boot from the
 * environment and CLI flags, validated, frozen and passed down explicitly. Every variable has a
 * flag twin (`SERVICE_PORT` ↔ `--service-port 8080` or `--service-port=8080`); a flag wins over
 * the variable and an empty variable counts as unset. A bad value throws a ConfigError naming
 * the variable.
 */
import { canonicalHost } from './hosts.js';

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

export type Parser<T> = (raw: string, variable: string) => T;

/** One setting: the config key it fills, its variable, how to parse it, its default. */
export interface Setting<C, K extends keyof C = keyof C> {
  key: K;
  variable: string;
  parse: Parser<NonNullable<C[K]>>;
  default?: C[K];
  /** Absent and without a default: refused (the process cannot start without it). */
  required?: boolean;
}

export const nonEmpty: Parser<string> = (raw, variable) => {
  if (raw.trim() === '') throw new ConfigError(variable, 'must not be empty');
  return raw;
};

export const integer =
  (min: number, max: number): Parser<number> =>
  (raw, variable) => {
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(variable, `must be an integer, got ${JSON.stringify(raw)}`);
    const n = Number(raw.trim());
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new ConfigError(variable, `must be between ${min} and ${max}, got ${raw}`);
    }
    return n;
  };

export const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw, variable) => {
    const v = raw.trim() as T;
    if (!values.includes(v)) {
      throw new ConfigError(variable, `must be one of ${values.map((x) => `'${x}'`).join(', ')}, got ${JSON.stringify(raw)}`);
    }
    return v;
  };

/** `true` or `false`. */
export const bool: Parser<boolean> = (raw, variable) => {
  const t = raw.trim();
  if (t === 'true' || t === 'false') return t === 'true';
  throw new ConfigError(variable, `must be 'true' or 'false', got ${JSON.stringify(raw)}`);
};

/** A decimal number from `min` to `max` (`0.25`, `1`, `.5`); no exponents, no `NaN`. */
export const decimal =
  (min: number, max: number): Parser<number> =>
  (raw, variable) => {
    const t = raw.trim();
    if (!/^(\d+(\.\d*)?|\.\d+)$/.test(t)) throw new ConfigError(variable, `must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    const n = Number(t);
    if (n < min || n > max) throw new ConfigError(variable, `must be a number from ${min} to ${max}, got ${raw}`);
    return n;
  };

/**
 * A comma-separated list of host names or addresses (`authz-sidecar,10.0.0.7,[fd00::7]`), as
 * `Host` headers name them but without a port: each kept in canonical form (hosts.ts).
 */
export const hostNames: Parser<readonly string[]> = (raw, variable) => {
  const items = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
  if (items.length === 0) throw new ConfigError(variable, 'must list at least one host name or address, e.g. authz-sidecar,10.0.0.7');
  return Object.freeze(items.map((item) => {
    const host = canonicalHost(item);
    if (host === undefined) {
      throw new ConfigError(variable, `${JSON.stringify(item)} is not a host name or address: give it without scheme, port or path, e.g. authz-sidecar or 10.0.0.7`);
    }
    return host;
  }));
};

/** Where decision-log lines go (services/decision/log.ts). */
export type DecisionLogTarget = { kind: 'off' } | { kind: 'stdout' } | { kind: 'file'; path: string };

/** `off`, `stdout` or `file:<path>` (the file is appended to; its directory must exist). */
export const decisionLogTarget: Parser<DecisionLogTarget> = (raw, variable) => {
  const t = raw.trim();
  if (t === 'off' || t === 'stdout') return { kind: t };
  if (t.startsWith('file:')) {
    const path = t.slice('file:'.length);
    if (path === '' || path.includes('\0')) throw new ConfigError(variable, 'file: needs a path, as in file:/var/log/authz/decisions.jsonl');
    return { kind: 'file', path };
  }
  throw new ConfigError(variable, `must be 'off', 'stdout' or 'file:<path>', got ${JSON.stringify(raw)}`);
};

/** An http:// or https:// URL, without a trailing slash (the control plane's, as a sidecar reaches it). */
export const httpUrl: Parser<string> = (raw, variable) => {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new ConfigError(variable, `must be an http:// or https:// URL, got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(variable, `must be an http:// or https:// URL, got scheme ${u.protocol}`);
  return u.toString().replace(/\/$/, '');
};

/** An API-key secret: it travels in an HTTP header, so visible ASCII only. */
export const secret: Parser<string> = (raw, variable) => {
  if (raw === '') throw new ConfigError(variable, 'must not be empty');
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError(variable, 'must be printable ASCII without spaces');
  return raw;
};

/**
 * A comma-separated list of web origins for CORS (`https://app.example.com,http://localhost:5173`):
 * each a scheme (http or https), a host and an optional port, nothing else, as browsers send it
 * in `Origin`. The host is lower-cased and a default port dropped, as browsers do. Origins are
 * compared whole, so a wildcard (`https://*.example.com`, `*`) is refused: it would match nothing.
 */
export const origins: Parser<readonly string[]> = (raw, variable) => {
  const items = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
  if (items.length === 0) throw new ConfigError(variable, 'must list at least one origin, e.g. https://app.example.com');
  const wildcard = (item: string) =>
    new ConfigError(variable, `${JSON.stringify(item)} has a wildcard, and patterns are not supported: list each origin instead, e.g. https://app.example.com,https://admin.example.com`);
  return Object.freeze(items.map((item) => {
    if (item.includes('*')) throw wildcard(item);
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    const bare = url !== undefined && url.username === '' && url.password === '' && url.pathname === '/' && url.search === '' && url.hash === '' && !item.endsWith('/');
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !bare) {
      throw new ConfigError(variable, `${JSON.stringify(item)} is not an origin: give scheme://host[:port] with no path, query or trailing slash, e.g. https://app.example.com`);
    }
    if (url.origin.includes('*')) throw wildcard(item); // `%2A` in the host
    return url.origin;
  }));
};

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const GATE_MODES = ['off', 'links-fallback', 'strict'] as const;

/** The CLI flag twin of an environment variable: `SERVICE_PORT` → `--service-port`. */
export function flagFor(variable: string): string {
  return '--' + variable.toLowerCase().replace(/_/g, '-');
}

/** Every variable of a set of settings with its flag and default, for `--help` texts and docs. */
export function describeSettings<C>(settings: readonly Setting<C>[]): { variable: string; flag: string; default?: unknown }[] {
  return settings.map((s) => ({ variable: s.variable, flag: flagFor(s.variable), default: s.default }));
}

function parseFlags(variables: readonly string[], argv: readonly string[]): Map<string, string> {
  const byFlag = new Map<string, string>(variables.map((v) => [flagFor(v), v]));
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

/** Reads, validates and freezes a configuration from its settings (see the module comment). */
export function loadSettings<C>(settings: readonly Setting<C>[], env: Record<string, string | undefined>, argv: readonly string[]): C {
  const flags = parseFlags(settings.map((s) => s.variable), argv);
  const config: Record<string, unknown> = {};
  for (const s of settings) {
    const fromFlag = flags.get(s.variable);
    const fromEnv = env[s.variable];
    const raw = fromFlag ?? (fromEnv === '' ? undefined : fromEnv);
    if (raw !== undefined) {
      try {
        config[s.key as string] = s.parse(raw, s.variable);
      } catch (e) {
        if (e instanceof ConfigError && fromFlag !== undefined) {
          throw new ConfigError(s.variable, `${e.message.slice(s.variable.length + 2)} (from flag ${flagFor(s.variable)})`);
        }
        throw e;
      }
    } else if (s.default !== undefined) {
      config[s.key as string] = s.default;
    } else if (s.required) {
      throw new ConfigError(s.variable, `is required (or ${flagFor(s.variable)})`);
    }
  }
  return Object.freeze(config) as C;
}

/** What logs show instead of a secret. */
export const REDACTED = '[redacted]';
