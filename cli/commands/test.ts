/**
 * `authz test FILE…`: decision tests (docs/decision-tests.md). Offline by default: the engine on
 * the model file, no server. `--url` (or `--control-plane`) runs the same cases against a control
 * plane, on a scratch tenant the model is applied to (or `--tenant`, named on the command line only);
 * `--sidecar URL` against a sidecar of `--tenant`, each request waiting for the apply's revision. Exits 0 when every case of every
 * target passed, 1 otherwise.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { createAuthzClient } from '../../client/client.js';
import { checkDecisionTestsText, type CheckedDecisionTests } from '../../services/model/mod.js';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../exit.js';
import { stylesFor } from '../io.js';
import { offlineTarget } from '../decision-tests/offline.js';
import { emptyScratchTenant, prepareTenant, serverTarget } from '../decision-tests/remote.js';
import { junitXml, renderRun, runsData, summaryLine } from '../decision-tests/report.js';
import { casesOf, errorLines, runCases, type DecisionTarget, type TargetRun } from '../decision-tests/run.js';

interface TestOptions {
  offline?: boolean;
  controlPlane?: boolean;
  sidecar?: string;
  apply: boolean;
  junit?: string;
}

async function test(ctx: CliContext, files: string[], o: TestOptions): Promise<number> {
  const remote = ctx.globals.url !== undefined || o.controlPlane === true || o.sidecar !== undefined;
  const offline = o.offline === true || !remote;
  // Only a tenant named on the command line is written to: AUTHZ_TENANT or a login's tenant never is.
  const tenantId = ctx.globals.tenant;
  if (o.sidecar !== undefined && tenantId === undefined) {
    throw new UsageError('--sidecar needs --tenant: the sidecar\'s tenant (SIDECAR_TENANT_ID), which the model is applied to on the control plane');
  }
  if (!o.apply && tenantId === undefined) throw new UsageError('--no-apply needs --tenant: the tenant to test as it is');
  // Every file is read and checked before anything is asked of a server.
  const checked: CheckedDecisionTests[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const c = checkDecisionTestsText(text, file, (path) => readFileSync(path, 'utf8'));
    if (c.errors.length > 0) {
      ctx.io.err(`${errorLines(c.errors).join('\n')}\n`);
      return EXIT_FAILED;
    }
    checked.push(c);
  }
  const runs: TargetRun[] = [];
  for (const c of checked) {
    const tests = c.tests!;
    const cases = casesOf(tests, c.parsed.file, (path) => c.parsed.locate(path));
    const now = tests.now !== undefined ? new Date(tests.now) : undefined;
    if (offline) runs.push(await runCases(offlineTarget(c.model!, now, tests.gate ?? 'off'), c.parsed.file, cases));
    if (!remote) continue;
    const client = ctx.client();
    const tenant = await prepareTenant(client, {
      ...(tenantId !== undefined ? { tenantId } : {}),
      apply: o.apply, modelText: c.modelText!, modelFile: c.modelFile!, model: c.model!,
    });
    try {
      const targets: DecisionTarget[] = [];
      if (ctx.globals.url !== undefined || o.controlPlane === true) targets.push(serverTarget('control-plane', client, client, tenant, now));
      if (o.sidecar !== undefined) {
        const sidecar = createAuthzClient({ baseUrl: o.sidecar, timeoutMs: ctx.connection().timeoutMs });
        targets.push(serverTarget('sidecar', sidecar, client, tenant, now));
      }
      for (const t of targets) runs.push(await runCases(t, c.parsed.file, cases));
    } finally {
      await emptyScratchTenant(client, tenant);
    }
  }
  if (o.junit !== undefined) writeFileSync(o.junit, junitXml(runs, stylesFor(false)));
  ctx.emit(runsData(runs), () => `${runs.map((r) => renderRun(r, ctx.styles)).join('\n\n')}${runs.length > 1 ? `\n\nall: ${summaryLine(runs, ctx.styles)}` : ''}`);
  return runs.every((r) => r.failed + r.errors === 0) ? EXIT_OK : EXIT_FAILED;
}

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
      .action(cli.action<TestOptions>((ctx, o, command) => test(ctx, command.args, o)));
  },
};
