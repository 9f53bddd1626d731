/**
 * `authz export`: the tenant as a model file in normal form (the same state, the same bytes), to
 * stdout or to a file. `--out`, not `-o`: `-o` is the program's output format.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../exit.js';

interface ExportOptions {
  out?: string;
  format?: 'yaml' | 'json';
  sections?: string[];
}

/** `--sections a,b`: names of the format's sections, checked when the command runs (the model module loads then). */
function sectionList(raw: string): string[] {
  const names = raw.split(',').map((s) => s.trim());
  if (names.some((n) => n === '')) throw new InvalidArgumentError('expected section names separated by commas, e.g. roles,permissions');
  return names;
}

async function exportModel(ctx: CliContext, o: ExportOptions): Promise<void> {
  if (o.sections) {
    const { SECTIONS } = await import('../../services/model/format.js');
    const known = new Set<string>(SECTIONS);
    const unknown = o.sections.filter((s) => !known.has(s));
    if (unknown.length > 0) throw new UsageError(`--sections: unknown ${unknown.join(', ')}; the sections are ${SECTIONS.join(', ')}`);
  }
  const tenantId = ctx.requireTenant('export');
  const format = o.format ?? (o.out?.endsWith('.json') ? 'json' : 'yaml');
  const answer = await ctx.client().tenantModels.exportTenantModel({ tenantId, format, sections: o.sections ?? [] });
  if (o.out === undefined) {
    ctx.io.out(answer.document);
    return;
  }
  // Written beside and renamed over, so an interrupted export never leaves half a file.
  const partial = `${o.out}.partial-${process.pid}`;
  writeFileSync(partial, answer.document);
  renameSync(partial, o.out);
  const data = { tenant: tenantId, file: o.out, format: answer.format, revision: Number(answer.revision) };
  ctx.emit(data, () => `Wrote ${o.out} (tenant ${tenantId} at revision ${answer.revision}, ${answer.format}).`);
}

export const exportCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('export')
      .summary('write the tenant as a tenant model file')
      .description(
        'Writes the tenant (--tenant) as a tenant model file in normal form: the same state always gives the same bytes, and applying the export plans nothing. ' +
          'To stdout (whatever --output says), or to --out FILE with a line saying so. The format is --format, else json for a --out ending in .json, else yaml.',
      )
      .option('--out <file>', 'write the model to this file instead of stdout (-o is the output format, not a file)')
      .addOption(new Option('--format <format>', 'the model\'s format').choices(['yaml', 'json']))
      .option('--sections <names>', 'only these sections, comma-separated (e.g. roles,permissions)', sectionList)
      .action(cli.action<ExportOptions>(exportModel));
  },
};
