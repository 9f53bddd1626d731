/**
 * The file `authz login` writes: the URL, the API key and the default tenant, as JSON, readable
 * by its owner only (mode 0600, in a directory of mode 0700). `$AUTHZ_CONFIG` names it; else
 * `$XDG_CONFIG_HOME/authz/config.json`; else `~/.config/authz/config.json`.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface StoredLogin {
  url: string;
  apiKey?: string;
  tenant?: string;
  caFile?: string;
}

/** The config file is missing fields, is not JSON, or cannot be read. */
export class ConfigFileError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'ConfigFileError';
  }
}

export function configFilePath(env: Record<string, string | undefined>, home: string): string {
  if (env.AUTHZ_CONFIG) return env.AUTHZ_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(home, '.config');
  return join(base, 'authz', 'config.json');
}

const FIELDS = ['url', 'apiKey', 'tenant', 'caFile'] as const;

/** The stored login, or undefined when there is no file. */
export function readLogin(path: string): { login: StoredLogin; mode: number } | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigFileError(path, `not readable as JSON (${(err as Error).message}); run authz login again or remove it`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigFileError(path, 'must hold a JSON object');
  const raw = parsed as Record<string, unknown>;
  for (const f of FIELDS) {
    if (raw[f] !== undefined && typeof raw[f] !== 'string') throw new ConfigFileError(path, `${f} must be a string`);
  }
  if (typeof raw.url !== 'string') throw new ConfigFileError(path, 'url is missing; run authz login again');
  const login: StoredLogin = { url: raw.url };
  for (const f of ['apiKey', 'tenant', 'caFile'] as const) if (typeof raw[f] === 'string') login[f] = raw[f] as string;
  return { login, mode: statSync(path).mode & 0o777 };
}

/**
 * Writes the login readable by its owner only: a temporary file of mode 0600, renamed over the
 * login file, so no reader ever sees a partial file or a wider mode.
 */
export function writeLogin(path: string, login: StoredLogin): void {
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  const body: Record<string, string> = {};
  for (const f of FIELDS) if (login[f] !== undefined) body[f] = login[f] as string;
  try {
    writeFileSync(temporary, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    // The umask can only narrow the mode; this makes it exactly 0600 whatever the umask.
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new ConfigFileError(path, `cannot be written (${(err as Error).message})`);
  }
}

/** Removes the file; false when there was none. */
export function removeLogin(path: string): boolean {
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}
