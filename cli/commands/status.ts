/**
 * `authz whoami` (which server, key and tenant a command would use, and what the key is) and
 * `authz status` (whether the server is up and ready, and the tenant's revision). Neither prints
 * the key: only where it came from.
 */
import type { Command } from 'commander';
import { AuthzError } from '../../client/errors.js';
import type { KeyDescription } from '../../client/key.js';
import type { Connection, Source } from '../connection.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK } from '../exit.js';
import { keyValueTable } from '../output.js';
import type { CliCommand } from '../command.js';

/** Where a value came from, as a person would look for it. */
function origin(source: Source | undefined, variable: string, flag: string, c: Connection): string | null {
  if (source === 'flag') return flag;
  if (source === 'environment') return variable;
  if (source === 'login file') return c.configPath;
  if (source === 'default') return 'default';
  return null;
}

async function whoami(ctx: CliContext): Promise<void> {
  const c = ctx.connection();
  ctx.requireKey();
  const key = await ctx.client().describeKey();
  const data = {
    url: c.url,
    urlFrom: origin(c.urlSource, 'AUTHZ_URL', '--url', c),
    tenant: c.tenant ?? key.tenantId ?? null,
    tenantFrom: c.tenant !== undefined ? origin(c.tenantSource, 'AUTHZ_TENANT', '--tenant', c) : key.tenantId ? 'the key' : null,
    keyKind: key.kind,
    keyFrom: origin(c.apiKeySource, 'AUTHZ_API_KEY', '--api-key', c),
  };
  ctx.emit(data, () =>
    keyValueTable(
      [
        ['url', `${data.url}  (${data.urlFrom})`],
        ['key', `${data.keyKind} key  (${data.keyFrom})`],
        ['tenant', data.tenant === null ? '-' : `${data.tenant}  (${data.tenantFrom})`],
      ],
      ctx.styles,
    ),
  );
}

interface StatusData {
  url: string;
  live: boolean;
  ready: boolean;
  error?: string;
  keyKind?: string | null;
  keyError?: string;
  tenant?: string | null;
  tenantError?: string;
  revision?: number | null;
}

async function status(ctx: CliContext): Promise<number> {
  const c = ctx.connection();
  const client = ctx.client();
  const data: StatusData = { url: c.url, live: false, ready: false };
  let healthy = false;
  try {
    const health = await client.health();
    Object.assign(data, health);
    healthy = health.live && health.ready;
  } catch (err) {
    data.error = `cannot reach ${c.url}: ${(err as Error).message}`;
  }
  if (healthy && c.apiKey !== undefined) {
    let key: KeyDescription | undefined;
    try {
      key = await client.describeKey();
      data.keyKind = key.kind;
    } catch (err) {
      const e = AuthzError.from(err);
      data.keyKind = null;
      data.keyError = `${e.message} (${e.codeName})`;
      healthy = false;
    }
    const tenant = c.tenant ?? key?.tenantId;
    data.tenant = tenant ?? null;
    // A service key reaches decisions only: it cannot read its tenant's revision.
    if (tenant !== undefined && key !== undefined && key.kind !== 'service') {
      try {
        const { tenant: t } = await client.tenancy.getTenant({ id: tenant });
        data.revision = Number(t!.revision);
      } catch (err) {
        const e = AuthzError.from(err);
        data.revision = null;
        data.tenantError = `${e.message} (${e.codeName})`;
        healthy = false;
      }
    }
  }
  const s = ctx.styles;
  const yes = (ok: boolean) => (ok ? s.green('yes') : s.red('no'));
  ctx.emit(data, () =>
    keyValueTable(
      [
        ['url', c.url],
        ['live', data.error ?? yes(data.live)],
        ['ready', data.error ? '-' : yes(data.ready)],
        ...(data.keyKind !== undefined ? [['key', data.keyError ?? `${data.keyKind} key`] as const] : c.apiKey === undefined ? [['key', 'none given'] as const] : []),
        ...(data.tenant !== undefined ? [['tenant', data.tenantError ? `${data.tenant}: ${data.tenantError}` : data.tenant] as const] : []),
        ...(data.revision !== undefined ? [['revision', data.revision] as const] : []),
      ],
      s,
    ),
  );
  return healthy ? EXIT_OK : EXIT_FAILED;
}

export const statusCommands: CliCommand = {
  register(program: Command, cli) {
    program
      .command('status')
      .summary('is the server up and ready; the key kind and the tenant\'s revision')
      .description('Asks the server\'s /healthz and /readyz (no key needed), and with a key, what kind it is and the tenant\'s revision. Exits 0 when the server is up, ready, accepts the key and knows the tenant; else 1.')
      .action(cli.action(status));
    program
      .command('whoami')
      .summary('the URL, key kind and tenant commands use, and where each comes from')
      .description('Shows which URL, API key and tenant a command would use and where each comes from (flag, variable, login file), and what kind of key it is (platform, user, service). The key itself is never shown.')
      .action(cli.action(whoami));
  },
};
