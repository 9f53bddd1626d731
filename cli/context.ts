/**
 * What a command's action works with: the streams, the output format and styles, and the
 * connection and client, resolved on first use (so `authz version` reads no login file).
 */
import { createAuthzClient, type AuthzClient } from '../client/client.js';
import { resolveConnection, readCaFile, type Connection, type GlobalOptions } from './connection.js';
import { UsageError } from './exit.js';
import { stylesFor, type CliIo, type Styles } from './io.js';
import { emit, type OutputFormat } from './output.js';

export interface CliGlobals extends GlobalOptions {
  output: OutputFormat;
}

/** No API key anywhere a command looks: the message says where to give one. */
export class MissingKeyError extends Error {
  constructor(connection: Connection) {
    const elsewhere = connection.otherLogin ? ` (the login file ${connection.configPath} is for ${connection.otherLogin}, so its key is not sent to ${connection.url})` : '';
    super(`no API key for ${connection.url}${elsewhere}: set AUTHZ_API_KEY or run authz login --url ${connection.url}`);
    this.name = 'MissingKeyError';
  }
}

export class CliContext {
  private resolved: Connection | undefined;
  private made: AuthzClient | undefined;

  constructor(
    readonly io: CliIo,
    readonly globals: CliGlobals,
  ) {}

  get format(): OutputFormat {
    return this.globals.output;
  }

  get styles(): Styles {
    return stylesFor(this.io.colour);
  }

  connection(): Connection {
    this.resolved ??= resolveConnection(this.globals, this.io);
    return this.resolved;
  }

  /** A client of the connection's server, with its key when there is one. */
  client(): AuthzClient {
    if (!this.made) {
      const c = this.connection();
      const ca = readCaFile(c.caFile);
      this.made = createAuthzClient({
        baseUrl: c.url,
        timeoutMs: c.timeoutMs,
        ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
        ...(ca !== undefined ? { ca } : {}),
      });
    }
    return this.made;
  }

  /** The connection's API key; MissingKeyError without one. */
  requireKey(): string {
    const c = this.connection();
    if (c.apiKey === undefined) throw new MissingKeyError(c);
    return c.apiKey;
  }

  /** The tenant (`--tenant`, `AUTHZ_TENANT`, the login file); a usage error naming `why` without one. */
  requireTenant(why: string): string {
    const tenant = this.connection().tenant;
    if (tenant === undefined || tenant === '') throw new UsageError(`${why} needs a tenant: pass --tenant, set AUTHZ_TENANT or run authz login --tenant`);
    return tenant;
  }

  emit(data: unknown, human: () => string): void {
    emit(this.io, this.format, data, human);
  }
}
