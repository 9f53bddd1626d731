/**
 * Which server, key and tenant a command uses: each from its flag, else its variable, else the
 * login file, else the default. The login file's key (and tenant and CA) is used only for the URL
 * it was saved with: pointing `--url` or `AUTHZ_URL` at another server never sends it there.
 */
import { readFileSync } from 'node:fs';
import { normalizeBaseUrl } from '../client/transport.js';
import { configFilePath, readLogin, type StoredLogin } from './config-file.js';
import { UsageError } from './exit.js';
import type { CliIo } from './io.js';
import { DEFAULT_URL } from './settings.js';

export type Source = 'flag' | 'environment' | 'login file' | 'default';

export interface GlobalOptions {
  url?: string;
  apiKey?: string;
  tenant?: string;
  caFile?: string;
  config?: string;
  timeout: number;
}

export interface Connection {
  url: string;
  urlSource: Source;
  apiKey?: string;
  apiKeySource?: Source;
  tenant?: string;
  tenantSource?: Source;
  caFile?: string;
  timeoutMs: number;
  configPath: string;
  /** A login file for another URL than this one, whose values were left out. */
  otherLogin?: string;
}

const SOURCE_NAMES: Record<Exclude<Source, 'login file' | 'default'>, (variable: string, flag: string) => string> = {
  flag: (_v, flag) => flag,
  environment: (variable) => variable,
};

/** The first value given: flag, then variable (empty counts as unset), then the stored login's. */
function pick(flag: string | undefined, variable: string | undefined, stored: string | undefined): { value?: string; source?: Source } {
  if (flag !== undefined) return { value: flag, source: 'flag' };
  if (variable) return { value: variable, source: 'environment' };
  if (stored !== undefined) return { value: stored, source: 'login file' };
  return {};
}

/** `url` normalised, or a usage error naming where it came from. */
function checkedUrl(url: string, source: Source, configPath: string): string {
  try {
    return normalizeBaseUrl(url);
  } catch (err) {
    const where = source === 'login file' ? configPath : source === 'default' ? 'the default URL' : SOURCE_NAMES[source]('AUTHZ_URL', '--url');
    throw new UsageError(`${where}: ${(err as Error).message}`);
  }
}

export function resolveConnection(options: GlobalOptions, io: CliIo): Connection {
  const env = io.env;
  const configPath = options.config ?? configFilePath(env, io.streams.home);
  const read = readLogin(configPath);
  let stored: StoredLogin | undefined = read?.login;
  if (read) {
    io.addSecret(read.login.apiKey);
    if (read.mode & 0o077) io.warn(`${configPath} is readable by other users (mode ${read.mode.toString(8).padStart(4, '0')}): run chmod 600 ${configPath}`);
  }
  const urlPick = pick(options.url, env.AUTHZ_URL, stored?.url);
  const urlSource = urlPick.source ?? 'default';
  const url = checkedUrl(urlPick.value ?? DEFAULT_URL, urlSource, configPath);
  let otherLogin: string | undefined;
  if (stored && urlSource !== 'login file') {
    let storedUrl: string | undefined;
    try {
      storedUrl = normalizeBaseUrl(stored.url);
    } catch {
      storedUrl = undefined;
    }
    if (storedUrl !== url) {
      otherLogin = storedUrl ?? stored.url;
      stored = undefined;
    }
  }
  const key = pick(options.apiKey, env.AUTHZ_API_KEY, stored?.apiKey);
  const tenant = pick(options.tenant, env.AUTHZ_TENANT, stored?.tenant);
  const ca = pick(options.caFile, env.AUTHZ_CA_FILE, stored?.caFile);
  io.addSecret(key.value);
  return {
    url,
    urlSource,
    ...(key.value !== undefined ? { apiKey: key.value, apiKeySource: key.source } : {}),
    ...(tenant.value !== undefined ? { tenant: tenant.value, tenantSource: tenant.source } : {}),
    ...(ca.value !== undefined ? { caFile: ca.value } : {}),
    timeoutMs: options.timeout,
    configPath,
    ...(otherLogin !== undefined ? { otherLogin } : {}),
  };
}

/** The PEM text of a CA file, or undefined without one. */
export function readCaFile(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the CA file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
