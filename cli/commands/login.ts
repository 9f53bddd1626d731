/**
 * `authz login` saves a URL, an API key and a default tenant in the login file (mode 0600) after
 * checking them against the service; `authz logout` removes the file. The key is typed at a
 * hidden prompt, piped with `--api-key-stdin`, or taken from AUTHZ_API_KEY; it is never printed.
 */
import type { Command } from 'commander';
import { createAuthzClient } from '../../client/client.js';
import { normalizeBaseUrl } from '../../client/transport.js';
import { configFilePath, readLogin, removeLogin, writeLogin, type StoredLogin } from '../config-file.js';
import { readCaFile } from '../connection.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../exit.js';
import type { CliCommand } from '../command.js';
import { ask, askHidden, firstLineOf, interactive } from '../prompt.js';
import { DEFAULT_URL } from '../settings.js';

interface LoginOptions {
  apiKeyStdin?: boolean;
}

const loginFile = (ctx: CliContext) => ctx.globals.config ?? configFilePath(ctx.io.env, ctx.io.streams.home);

/** The login saved before, to offer its values as defaults; a file that cannot be read is ignored, as it is about to be replaced. */
function previousLogin(path: string): StoredLogin | undefined {
  try {
    return readLogin(path)?.login;
  } catch {
    return undefined;
  }
}

async function apiKeyFor(ctx: CliContext, o: LoginOptions): Promise<string> {
  const { globals, io } = ctx;
  if (o.apiKeyStdin) {
    if (globals.apiKey !== undefined) throw new UsageError('--api-key-stdin and --api-key both give the key: use one');
    return firstLineOf(io);
  }
  if (globals.apiKey !== undefined) return globals.apiKey;
  if (io.env.AUTHZ_API_KEY) return io.env.AUTHZ_API_KEY;
  if (interactive(io)) return askHidden(io, 'API key');
  throw new UsageError('no API key: pipe it with --api-key-stdin, set AUTHZ_API_KEY, or run authz login at a terminal');
}

async function login(ctx: CliContext, o: LoginOptions): Promise<void> {
  const { globals, io } = ctx;
  const path = loginFile(ctx);
  const previous = previousLogin(path);
  const prompting = interactive(io) && !o.apiKeyStdin;
  const rawUrl = globals.url ?? (io.env.AUTHZ_URL || undefined) ?? (prompting ? await ask(io, 'URL', previous?.url ?? DEFAULT_URL) : (previous?.url ?? DEFAULT_URL));
  let url: string;
  try {
    url = normalizeBaseUrl(rawUrl);
  } catch (err) {
    throw new UsageError(`--url: ${(err as Error).message}`);
  }
  const apiKey = await apiKeyFor(ctx, o);
  if (apiKey === '') throw new UsageError('the API key is empty');
  io.addSecret(apiKey);
  let tenant = globals.tenant ?? (io.env.AUTHZ_TENANT || undefined);
  if (tenant === undefined && prompting) tenant = (await ask(io, 'Tenant id (empty: none)', previous?.url === url ? previous.tenant : undefined)) || undefined;
  const caFile = globals.caFile ?? (io.env.AUTHZ_CA_FILE || undefined);
  const ca = readCaFile(caFile);
  const client = createAuthzClient({ baseUrl: url, apiKey, timeoutMs: globals.timeout, ...(ca !== undefined ? { ca } : {}) });

  // Nothing is saved unless the service accepts the key (and knows the tenant, where the key may read it).
  const key = await client.describeKey();
  tenant ??= key.tenantId;
  if (tenant !== undefined && key.kind !== 'service') await client.tenancy.getTenant({ id: tenant });
  writeLogin(path, { url, apiKey, ...(tenant !== undefined ? { tenant } : {}), ...(caFile !== undefined ? { caFile } : {}) });

  const result = { url, tenant: tenant ?? null, keyKind: key.kind, configFile: path };
  ctx.emit(result, () => `Logged in to ${url} with a ${key.kind} key${tenant ? ` (tenant ${tenant})` : ''}.\nSaved to ${path} (readable by you only).`);
}

async function logout(ctx: CliContext): Promise<void> {
  const path = loginFile(ctx);
  const removed = removeLogin(path);
  ctx.emit({ configFile: path, removed }, () => (removed ? `Removed ${path}.` : `Not logged in: there is no ${path}.`));
}

export const loginCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('login')
      .summary('check a URL, API key and tenant, and save them (mode 0600)')
      .description(
        'Checks the URL, API key and tenant against the service and saves them in the login file (mode 0600): --config, AUTHZ_CONFIG, or ~/.config/authz/config.json.\n' +
          'The key comes from --api-key-stdin (its first line), AUTHZ_API_KEY, or a hidden prompt; a missing URL or tenant is asked at a terminal.\n' +
          'The saved key is sent only to the saved URL.',
      )
      .option('--api-key-stdin', 'read the API key from the first line of stdin')
      .action(cli.action<LoginOptions>(login));
    program
      .command('logout')
      .summary('remove the login file')
      .description('Removes the login file that authz login wrote (--config, AUTHZ_CONFIG, or ~/.config/authz/config.json).')
      .action(cli.action(logout));
  },
};
