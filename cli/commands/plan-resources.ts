/**
 * `authz plan-resources`: the query plan of the resources of a type a subject may act on
 * (PlanResources): its kind, its condition tree, and its SQL with the parameters, as the
 * application runs it on its own table. `-o json` prints the answer as REST gives it.
 */
import type { JsonObject, JsonValue, MessageInitShape } from '@bufbuild/protobuf';
import { Option, type Command } from 'commander';
import { toRestJson } from '../../client/rest-json.js';
import { PlanResourcesResponseSchema, type PlanResourcesRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../exit.js';
import { positiveInteger, type CliCommand } from '../command.js';
import { actorAndScope, contextOption, type ActorScopeOptions } from './check.js';

interface PlanResourcesOptions extends ActorScopeOptions {
  action: string;
  type: string;
  context?: JsonObject;
  column?: string[];
  minRevision?: number;
}

const COLUMN_FIELDS = ['id', 'externalResourceId', 'ownerScopeId', 'resourceType', 'attributes', 'displayName', 'createdAt', 'createdBy'];

/** `--column field=name`, repeatable. */
function columnsOf(list: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list ?? []) {
    const eq = item.indexOf('=');
    const field = eq > 0 ? item.slice(0, eq) : '';
    if (!COLUMN_FIELDS.includes(field) || eq === item.length - 1) throw new UsageError(`--column ${item}: expected FIELD=COLUMN with FIELD one of ${COLUMN_FIELDS.join(', ')}`);
    out[field] = item.slice(eq + 1);
  }
  return out;
}

/** The condition tree, one node a line. */
export function conditionText(node: JsonObject, indent = ''): string {
  const [kind, body] = Object.entries(node)[0] ?? ['all', {}];
  const b = (body ?? {}) as JsonObject;
  switch (kind) {
    case 'all':
    case 'any': {
      const parts = (b.conditions ?? []) as JsonObject[];
      if (parts.length === 0) return `${indent}${kind === 'all' ? 'true' : 'false'}`;
      return [`${indent}${kind === 'all' ? 'all of' : 'any of'}`, ...parts.map((p) => conditionText(p, `${indent}  `))].join('\n');
    }
    case 'not':
      return [`${indent}not`, conditionText(b, `${indent}  `)].join('\n');
    case 'compare':
      return `${indent}${String(b.field)} ${String(b.operator)} ${JSON.stringify(b.value as JsonValue)}`;
    case 'residual': {
      const from = [b.policyId ? `policy ${String(b.policyId)}` : '', b.collectionId ? `collection ${String(b.collectionId)}` : ''].filter(Boolean).join(', ');
      return `${indent}residual (ask Evaluate): ${String(b.reason)}${from ? ` [${from}]` : ''}`;
    }
    default:
      return `${indent}${kind}`;
  }
}

async function planResources(ctx: CliContext, o: PlanResourcesOptions): Promise<void> {
  const columns = columnsOf(o.column);
  const { actor, scopeId } = await actorAndScope(ctx, o);
  const client = ctx.client();
  const request: MessageInitShape<typeof PlanResourcesRequestSchema> = {
    actor,
    scopeId,
    action: o.action,
    resourceType: o.type,
    columns,
    ...(o.context !== undefined ? { context: o.context } : {}),
    ...(o.minRevision !== undefined ? { consistency: { minRevision: BigInt(o.minRevision) } } : {}),
  };
  const response = await client.decisions.planResources(request);
  const json = toRestJson(PlanResourcesResponseSchema, response) as JsonObject;
  ctx.emit(json, () => {
    const kind = String(json.kind).replace('PLAN_KIND_', '').toLowerCase();
    const lines = [`plan: ${kind} (revision ${String(json.revision)})`];
    if (json.condition) lines.push('condition:', conditionText(json.condition as JsonObject, '  '));
    if (json.hasResidual) lines.push('residual: confirm each selected row with Evaluate (EvaluateBatch)');
    lines.push(`sql: ${String(json.sql)}`, `params: ${JSON.stringify(json.sqlParams ?? [])}`);
    return lines.join('\n');
  });
}

export const planResourcesCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('plan-resources')
      .summary('the query plan of the resources a subject may act on (a condition and SQL)')
      .description(
        'Asks for the plan of the resources of a type a subject may perform an action on in a scope: always allowed, always denied, or a condition on the resources\' fields, with a PostgreSQL WHERE clause and its parameters for the application\'s own table (see docs/plan-resources.md).',
      )
      .addOption(new Option('--subject <externalId>', "the subject's external id").conflicts('subjectId'))
      .addOption(new Option('--subject-type <type>', "the subject's type").choices(['user', 'service', 'agent']))
      .option('--subject-id <id>', "the subject's id")
      .addOption(new Option('--scope <path>', 'the scope\'s path: /eng/platform, / for the tenant\'s root').conflicts('scopeId'))
      .option('--scope-id <id>', "the scope's id")
      .requiredOption('--action <action>', 'the action, e.g. read')
      .requiredOption('--type <key>', 'the resource type key, e.g. doc')
      .option('--context <json>', 'the request context as a JSON object', contextOption)
      .option('--column <field=name...>', `a column name of the SQL mapping (fields: ${COLUMN_FIELDS.join(', ')}), repeatable`)
      .addOption(new Option('--min-revision <n>', 'answer only from state at this tenant revision or later').argParser(positiveInteger('--min-revision')))
      .action(cli.action<PlanResourcesOptions>(planResources));
  },
};
