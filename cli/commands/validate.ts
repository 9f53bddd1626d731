/**
 * `authz validate` (a model file checked offline, with the server's own checks) and `authz
 * schema` (the format's JSON Schema, for editors). Neither reads a login file or calls a server.
 * The model module is imported when the command runs, so other commands do not load it.
 */
import type { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK } from '../exit.js';
import { readModelInput } from '../model-input.js';

interface ValidateOptions {
  file: string;
}

async function validate(ctx: CliContext, o: ValidateOptions): Promise<number> {
  const input = await readModelInput(ctx.io, o.file);
  const { checkModelText, formatModelError, SECTIONS } = await import('../../services/model/mod.js');
  const checked = checkModelText(input.text, input.name);
  if (checked.errors.length > 0) {
    ctx.emit({ file: input.name, valid: false, errors: checked.errors }, () => checked.errors.map(formatModelError).join('\n'));
    return EXIT_FAILED;
  }
  const model = checked.model as unknown as Record<string, unknown>;
  const sections = SECTIONS.filter((s) => Array.isArray(model[s]));
  const entries = sections.reduce((n, s) => n + (model[s] as unknown[]).length, 0);
  ctx.emit({ file: input.name, valid: true, sections: Object.fromEntries(sections.map((s) => [s, (model[s] as unknown[]).length])) }, () =>
    `${input.name}: valid, ${entries} ${entries === 1 ? 'entry' : 'entries'} in ${sections.length} ${sections.length === 1 ? 'section' : 'sections'}${sections.length > 0 ? ` (${sections.join(', ')})` : ''}`,
  );
  return EXIT_OK;
}

async function schema(ctx: CliContext, o: { tests?: boolean }): Promise<void> {
  const { SCHEMA_FILES } = await import('../../services/model/schema-file.js');
  const { DECISION_TESTS_SCHEMA_FILE, SCHEMA_FILE } = await import('../../services/model/mod.js');
  const wanted = o.tests ? DECISION_TESTS_SCHEMA_FILE : SCHEMA_FILE;
  const text = SCHEMA_FILES.find((f) => f.file === wanted)!.render();
  // The committed file's bytes; yaml for whoever asks for it.
  ctx.io.out(ctx.format === 'yaml' ? toYaml(JSON.parse(text)) : text);
}

export const validateCommands: CliCommand = {
  register(program: Command, cli) {
    program
      .command('validate')
      .summary('check a tenant model file offline (exit 0 valid, 1 errors)')
      .description(
        'Checks a tenant model file (docs/policy-as-code.md) as the server does, without a server: the JSON Schema, references within the file, duplicates, ' +
          'match definitions, regular expressions, JSON Logic and limits. Prints each error as file:line:column: path: message and exits 1; ' +
          'a valid file prints one line and exits 0. References to sections the file leaves out are checked by plan and apply, against the tenant.',
      )
      .requiredOption('-f, --file <path>', 'the model file (YAML or JSON); - reads stdin')
      .action(cli.action<ValidateOptions>(validate));
    program
      .command('schema')
      .summary('print the JSON Schema of the tenant model file (or of the decision-test file)')
      .description(
        'Prints the JSON Schema (draft 2020-12) of the tenant model file, byte for byte schemas/tenant-model.schema.json; with --tests, of the decision-test file ' +
          '(schemas/decision-tests.schema.json). --output yaml prints it as YAML.',
      )
      .option('--tests', 'the schema of the decision-test file instead')
      .action(cli.action<{ tests?: boolean }>(schema));
  },
};
