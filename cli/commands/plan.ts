/**
 * `authz plan` and `authz apply`: a tenant model file against a tenant, through
 * TenantModelService. Apply plans first, shows the plan, asks at a terminal (`--yes` skips the
 * question; without a terminal it is required, so nothing is ever applied unseen), then applies
 * with the plan's revision as `expectedRevision`: a tenant that moved in between is refused by
 * the server and nothing is written.
 */
import type { Command } from 'commander';
import { AuthzError } from '../../client/errors.js';
import { toRestJson } from '../../client/rest-json.js';
import { ApplyTenantModelResponseSchema, PlanTenantModelResponseSchema, type PlanTenantModelResponse } from '../../gen/authz/v1/tenant_model_service_pb.js';
import type { CliCommand } from '../command.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../exit.js';
import { readModelInput, type ModelInput } from '../model-input.js';
import { renderPlan, writesSomething } from '../plan-view.js';
import { ask, interactive } from '../prompt.js';

interface PlanOptions {
  file: string;
  prune?: boolean;
}

interface ApplyOptions extends PlanOptions {
  yes?: boolean;
}

async function planOf(ctx: CliContext, tenantId: string, input: ModelInput, prune: boolean): Promise<PlanTenantModelResponse> {
  return ctx.client().tenantModels.planTenantModel({ tenantId, document: input.text, prune, fileName: input.name });
}

function planHeader(tenantId: string, plan: PlanTenantModelResponse): string {
  return `Plan for tenant ${tenantId} at revision ${plan.revision}:`;
}

async function plan(ctx: CliContext, o: PlanOptions): Promise<void> {
  const tenantId = ctx.requireTenant('plan');
  const input = await readModelInput(ctx.io, o.file);
  const answer = await planOf(ctx, tenantId, input, o.prune === true);
  ctx.emit(toRestJson(PlanTenantModelResponseSchema, answer), () => `${planHeader(tenantId, answer)}\n${renderPlan(answer.changes, ctx.styles)}`);
}

/**
 * Applies `input` with `expectedRevision`; a tenant that moved since (aborted, REVISION_MISMATCH)
 * becomes an error saying what happened and to plan again.
 */
export async function applyAtRevision(ctx: CliContext, tenantId: string, input: ModelInput, prune: boolean, expectedRevision: bigint) {
  try {
    return await ctx.client().tenantModels.applyTenantModel({ tenantId, document: input.text, prune, fileName: input.name, expectedRevision });
  } catch (raw) {
    const err = AuthzError.from(raw);
    if (err.codeName !== 'aborted' || err.reason !== 'REVISION_MISMATCH') throw err;
    throw new AuthzError(
      `tenant ${tenantId} changed after the plan at revision ${expectedRevision}, so nothing was applied: run authz plan (or authz apply) again and review the new plan`,
      err.code,
      { reason: err.reason, field: err.field, cause: err },
    );
  }
}

async function apply(ctx: CliContext, o: ApplyOptions): Promise<number> {
  const tenantId = ctx.requireTenant('apply');
  // Decided before any call: without --yes, only a person at a terminal can confirm.
  if (!o.yes) {
    if (o.file === '-') throw new UsageError('the model comes from stdin, so the plan cannot be confirmed there: pass --yes to apply it without asking');
    if (!interactive(ctx.io)) throw new UsageError('stdin is not a terminal, so the plan cannot be confirmed: pass --yes to apply it without asking');
  }
  const input = await readModelInput(ctx.io, o.file);
  const prune = o.prune === true;
  const planned = await planOf(ctx, tenantId, input, prune);
  const planText = `${planHeader(tenantId, planned)}\n${renderPlan(planned.changes, ctx.styles)}`;
  const people = ctx.format === 'table';
  if (!writesSomething(planned.changes)) {
    ctx.emit({ applied: false, ...toRestJson(PlanTenantModelResponseSchema, planned) }, () => `${planText}\nNothing to apply: tenant ${tenantId} stays at revision ${planned.revision}.`);
    return EXIT_OK;
  }
  // The plan is shown before the question: on stdout for people, on stderr when stdout carries data.
  if (people) ctx.io.out(`${planText}\n`);
  else if (!o.yes) ctx.io.err(`${planText}\n`);
  if (!o.yes) {
    const answer = await ask(ctx.io, `Apply these changes to tenant ${tenantId}? Only "yes" applies`);
    if (answer !== 'yes') {
      ctx.io.err('Apply cancelled: nothing was written.\n');
      return EXIT_FAILED;
    }
  }
  const applied = await applyAtRevision(ctx, tenantId, input, prune, planned.revision);
  ctx.emit({ applied: true, ...toRestJson(ApplyTenantModelResponseSchema, applied) }, () => `Applied: tenant ${tenantId} is at revision ${applied.revision}.`);
  return EXIT_OK;
}

const FILE_HELP = 'the model file (YAML or JSON); - reads stdin';
const PRUNE_HELP = "delete what the file's sections leave out (without it, such entities are kept)";

export const planCommands: CliCommand = {
  register(program: Command, cli) {
    program
      .command('plan')
      .summary('show what applying a tenant model file would change (writes nothing)')
      .description(
        'Compares a tenant model file with the tenant (--tenant) on the server and prints the changes by kind: + create, ~ update with the fields that differ, ' +
          '-/+ replace, - delete; entities the file leaves out are counted as kept. --output json|yaml prints the plan as the REST API answers it (revision, changes). ' +
          'Exits 0 whether or not there are changes; 1 when the file or the plan is refused.',
      )
      .requiredOption('-f, --file <path>', FILE_HELP)
      .option('--prune', PRUNE_HELP)
      .action(cli.action<PlanOptions>(plan));
    program
      .command('apply')
      .summary('make the tenant match a tenant model file, after showing the plan')
      .description(
        'Plans the file against the tenant (--tenant), prints the plan, asks for confirmation at a terminal (--yes skips it; without a terminal --yes is required), ' +
          'then applies it in one transaction, refused if the tenant changed since the plan. Prints the new revision; a plan without changes applies nothing.',
      )
      .requiredOption('-f, --file <path>', FILE_HELP)
      .option('--prune', PRUNE_HELP)
      .option('-y, --yes', 'apply without asking')
      .action(cli.action<ApplyOptions>(apply));
  },
};
