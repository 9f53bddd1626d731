/**
 * What `authz test` does (commands/test.ts registers it): read and check every file first, then
 * run its cases on each target asked for, print the runs, write JUnit, and exit 1 on any failure.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createAuthzClient } from '../../client/client.js';
import { checkDecisionTestsText, formatModelError, type CheckedDecisionTests } from '../../services/model/mod.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../exit.js';
import { stylesFor } from '../io.js';
import { offlineTarget } from './offline.js';
import { emptyScratchTenant, prepareTenant, serverTarget } from './remote.js';
import { junitXml, renderRun, runsData, summaryLine } from './report.js';
import { casesOf, runCases, type DecisionTarget, type TargetRun } from './run.js';

export interface TestOptions {
  offline?: boolean;
  controlPlane?: boolean;
  sidecar?: string;
  apply: boolean;
  junit?: string;
}

/** `authz test`'s work: see commands/test.ts. */
export async function runDecisionTests(ctx: CliContext, files: string[], o: TestOptions): Promise<number> {
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
      ctx.io.err(`${c.errors.map(formatModelError).join('\n')}\n`);
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

