/**
 * `authz import`: bulk data (resources, subjects, edges, links, grants, memberships) from an NDJSON
 * file through ImportService, in batches, progress on a terminal. The import's id is made from
 * the tenant and the file's bytes unless `--import-id` names one, so running the same command
 * again with `--resume` continues where an interrupted run stopped, and a different file never
 * takes over another's committed batches.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Command } from 'commander';
import { importNdjson, importStatus, ImportError, terminalProgress, type ImportCounts, type ImportOptions } from '../../services/import/ndjson-client.js';
import { readCaFile } from '../connection.js';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../exit.js';
import { fetchWithCa } from '../fetch-with-ca.js';

interface ImportCommandOptions {
  resume?: boolean;
  importId?: string;
}

const IMPORT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** `cli-` and 32 hex digits of SHA-256 over the tenant and the file's bytes. */
async function importIdOf(tenantId: string, file: string): Promise<string> {
  const hash = createHash('sha256').update(`${tenantId}\n`);
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return `cli-${hash.digest('hex').slice(0, 32)}`;
}

const shellQuote = (s: string) => (/^[\w./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function countsText(counts: ImportCounts): string {
  const parts = Object.entries(counts).filter(([, n]) => n > 0).map(([kind, n]) => `${kind} ${n}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

async function runImport(ctx: CliContext, file: string, o: ImportCommandOptions): Promise<number> {
  const tenantId = ctx.requireTenant('import');
  if (o.importId !== undefined && !IMPORT_ID.test(o.importId)) throw new UsageError('--import-id must be 1-128 of letters, digits, ".", "_", ":" and "-"');
  const c = ctx.connection();
  const apiKey = ctx.requireKey();
  const ca = readCaFile(c.caFile);
  const importId = o.importId ?? (await importIdOf(tenantId, file));
  const base: Pick<ImportOptions, 'baseUrl' | 'apiKey' | 'tenantId' | 'importId' | 'fetch'> = { baseUrl: c.url, apiKey, tenantId, importId, ...(ca !== undefined ? { fetch: fetchWithCa(ca) } : {}) };
  const resumeCommand = `authz import --tenant ${shellQuote(tenantId)}${o.importId !== undefined ? ` --import-id ${shellQuote(importId)}` : ''} --resume ${shellQuote(file)}`;

  if (!o.resume) {
    const known = await importStatus(base).catch((err: unknown) => {
      throw err instanceof ImportError ? new Error(`${err.message} (${err.code})`) : err;
    });
    if (known !== undefined) {
      ctx.io.err(`error: import ${importId} of this file already exists in tenant ${tenantId}, committed up to line ${known.nextLine - 1}: continue it with\n  ${resumeCommand}\n`);
      return EXIT_FAILED;
    }
  }

  const stderr = ctx.io.streams.stderr as NodeJS.WriteStream;
  const progress = terminalProgress(stderr);
  const abort = new AbortController();
  const onInterrupt = () => abort.abort('interrupted (SIGINT)');
  process.once('SIGINT', onInterrupt);
  try {
    const result = await importNdjson({ ...base, source: file, resume: o.resume === true, onProgress: progress, signal: abort.signal });
    if (stderr.isTTY) stderr.write('\n');
    const data = { tenant: tenantId, importId, entities: result.entities, batches: result.batches, nextLine: result.nextLine, revision: result.revision, counts: result.counts, elapsedMs: Math.round(result.elapsedMs) };
    ctx.emit(data, () =>
      `Imported ${result.entities} ${result.entities === 1 ? 'entity' : 'entities'}${countsText(result.counts)} from ${file} in ${result.batches} ${result.batches === 1 ? 'batch' : 'batches'}` +
        `${result.revision > 0 ? `; tenant ${tenantId} is at revision ${result.revision}` : ''} (import ${importId}).`,
    );
    return EXIT_OK;
  } catch (err) {
    if (stderr.isTTY) stderr.write('\n');
    if (!(err instanceof ImportError)) throw err;
    const facts = [err.code, err.reason && `reason ${err.reason}`, err.line !== undefined && `line ${err.line}`, err.field && `field ${err.field}`].filter(Boolean).join(', ');
    const committed = err.resumeLine > 1 ? `lines 1-${err.resumeLine - 1} are imported; ` : 'nothing was imported; ';
    ctx.io.err(`error: ${err.message} (${facts})\n${committed}after fixing the cause, continue from line ${err.resumeLine} with\n  ${resumeCommand}\n`);
    return EXIT_FAILED;
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}

export const importCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('import')
      .summary('bulk-import an NDJSON file of resources, subjects, edges, links, grants and memberships')
      .description(
        'Streams an NDJSON file (one entity per line as JSON, e.g. {"resource":{"type":"doc","externalId":"readme"}}; see docs/cli.md) to the tenant (--tenant) in batches, each all or nothing, with progress on a terminal and a summary at the end. ' +
          'The import is named after the tenant and the file\'s bytes (or --import-id): if a run stops, the same command with --resume continues after the last committed batch. Exits 1 on a failure, saying where to resume.',
      )
      .argument('<file>', 'the NDJSON file')
      .option('--resume', 'continue this file\'s import where the server says it stands')
      .option('--import-id <id>', 'name the import (1-128 of [A-Za-z0-9._:-]); default: made from the tenant and the file\'s bytes')
      .action(cli.action<ImportCommandOptions>((ctx, options, command) => runImport(ctx, command.args[0], options)));
  },
};
