/**
 * `authz test FILE…`: decision tests (docs/decision-tests.md). Offline by default: the engine on
 * the model file, no server. `--url` (or `--control-plane`) runs the same cases against a control
 * plane, on a scratch tenant the model is applied to (or `--tenant`, named on the command line only);
 * `--sidecar URL` against a sidecar of `--tenant`, each request waiting for the apply's revision. Exits 0 when every case of every
 * target passed, 1 otherwise.
 */
import { Option, type Command } from 'commander';
import type { CliCommand } from '../command.js';
import type { TestOptions } from '../decision-tests/command.js';

export const testCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('test')
      .summary('run decision tests: offline, against a control plane, against a sidecar')
      .description(
        'Runs the cases of decision-test files (docs/decision-tests.md). Offline by default: the engine on the model file, no server.\n' +
          'With --url (or --control-plane) the model is applied to a scratch tenant of the control plane (or to --tenant) and the cases asked there; ' +
          'with --sidecar URL they are asked of the sidecar of --tenant, each waiting for the apply\'s revision. Exits 0 when every case passed, 1 otherwise.',
      )
      .argument('<files...>', 'decision-test files')
      .option('--offline', 'also run offline when a server is given')
      .option('--control-plane', 'run against the control plane of AUTHZ_URL or the login file (--url implies it)')
      .option('--sidecar <url>', 'run against the sidecar at URL too (needs --tenant: its tenant)')
      .addOption(new Option('--no-apply', 'with --tenant: test the tenant as it is, without applying the model'))
      .option('--junit <file>', 'also write the results as JUnit XML to FILE')
      // Loaded when the command runs: the engine and the model module stay out of other commands' start.
      .action(cli.action<TestOptions>(async (ctx, o, command) => (await import('../decision-tests/command.js')).runDecisionTests(ctx, command.args, o)));
  },
};
