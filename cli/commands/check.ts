/**
 * `authz check`: one decision. The subject goes by its external id, which the decision resolves
 * itself (any key, a sidecar too); a scope path is resolved to its id first (a platform key),
 * or the scope's id is given. Exits 0 when allowed and 1 when denied, so scripts can branch on it.
 */
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { AuthzError } from '../../client/errors.js';
import { toRestJson } from '../../client/rest-json.js';
import { EvaluateResponseSchema, type EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import type { CliContext } from '../context.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../exit.js';
import { explainDecision, type DecisionJson } from '../explain.js';
import { positiveInteger, type CliCommand } from '../command.js';

interface CheckOptions {
  subject?: string;
  subjectType?: string;
  subjectId?: string;
  scope?: string;
  scopeId?: string;
  action: string;
  resource?: { resourceType: string; externalResourceId: string };
  resourceId?: string;
  context?: JsonObject;
  explain?: boolean;
  minRevision?: number;
  fullyConsistent?: boolean;
  atRevision?: number;
  at?: Date;
}

/** `--at TIME`: an RFC 3339 time with its offset. */
function timeOption(raw: string): Date {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms)) throw new InvalidArgumentError('expected an RFC 3339 time with its offset, e.g. 2025-03-04T10:00:00Z');
  return new Date(ms);
}

/** `--resource TYPE/EXTERNAL_ID`: split at the first `/` (external ids may hold more). */
export function resourceOption(raw: string): { resourceType: string; externalResourceId: string } {
  const slash = raw.indexOf('/');
  if (slash <= 0 || slash === raw.length - 1) throw new InvalidArgumentError('expected TYPE/EXTERNAL_ID, e.g. doc/readme (the resource type key, then the external id)');
  return { resourceType: raw.slice(0, slash), externalResourceId: raw.slice(slash + 1) };
}

/** `--context JSON`: an object. */
export function contextOption(raw: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new InvalidArgumentError(`not JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object, e.g. \'{"ip":"10.0.0.1"}\'');
  return parsed as JsonObject;
}

/** Runs a name lookup; its failure names the option it came from, and says what a key without platform reach can do instead. */
export async function resolved<T>(option: string, value: string, idOption: string, lookup: () => Promise<T>): Promise<T> {
  try {
    return await lookup();
  } catch (raw) {
    const err = AuthzError.from(raw);
    const hint = err.codeName === 'permission_denied' ? `; resolving names needs a platform key: with this key, pass ${idOption}` : '';
    throw new AuthzError(`${option} ${value}: ${err.message}${hint}`, err.code, { reason: err.reason, field: err.field, cause: err });
  }
}

/** The options that name who asks and where (`check`, `plan-resources`). */
export interface ActorScopeOptions {
  subject?: string;
  subjectType?: string;
  subjectId?: string;
  scope?: string;
  scopeId?: string;
}

/** The request's actor and scope id from the options, a scope path resolved in the tenant. */
export async function actorAndScope(ctx: CliContext, o: ActorScopeOptions): Promise<{ actor: { subjectId?: string; externalId?: string; subjectType?: string }; scopeId: string }> {
  if (o.subject === undefined && o.subjectId === undefined) throw new UsageError('give the subject: --subject EXTERNAL_ID or --subject-id ID');
  if (o.scope === undefined && o.scopeId === undefined) throw new UsageError('give the scope: --scope PATH (with --tenant) or --scope-id ID');
  const tenant = o.scope !== undefined ? ctx.requireTenant('--scope PATH') : undefined;
  const client = ctx.client();
  const scopeId = o.scopeId ?? (await resolved('--scope', o.scope!, '--scope-id', () => client.resolveScopePath(tenant!, o.scope!))).id;
  const actor = {
    ...(o.subjectId !== undefined ? { subjectId: o.subjectId } : { externalId: o.subject! }),
    ...(o.subjectType !== undefined ? { subjectType: o.subjectType } : {}),
  };
  return { actor, scopeId };
}

async function check(ctx: CliContext, o: CheckOptions): Promise<number> {
  const { actor, scopeId } = await actorAndScope(ctx, o);
  const client = ctx.client();
  const request: MessageInitShape<typeof EvaluateRequestSchema> = {
    actor,
    scopeId,
    action: o.action,
    explain: o.explain === true,
    ...(o.resourceId !== undefined ? { resource: { resourceId: o.resourceId } } : {}),
    ...(o.resource !== undefined ? { resource: o.resource } : {}),
    ...(o.context !== undefined ? { context: o.context } : {}),
    ...(o.minRevision !== undefined ? { consistency: { minRevision: BigInt(o.minRevision) } } : {}),
    ...(o.fullyConsistent ? { consistency: { fullyConsistent: true } } : {}),
    ...(o.atRevision !== undefined ? { consistency: { atRevision: BigInt(o.atRevision) } } : {}),
    ...(o.at !== undefined ? { consistency: { atTime: timestampFromMs(o.at.getTime()) } } : {}),
  };
  const response = await client.decisions.evaluate(request);
  const json = toRestJson(EvaluateResponseSchema, response);
  ctx.emit(json, () => explainDecision(json as unknown as DecisionJson, ctx.styles));
  return response.allowed ? EXIT_OK : EXIT_FAILED;
}

export const checkCommand: CliCommand = {
  register(program: Command, cli) {
    program
      .command('check')
      .summary('ask for one decision (exit 0 allowed, 1 denied)')
      .description(
        'Asks whether a subject may perform an action in a scope, optionally on a resource. Exits 0 when allowed, 1 when denied or on an error.\n' +
          'The subject goes by its external id, which the decision resolves. A scope path is looked up in the tenant first (a platform key); with a service key, or against a sidecar, pass --scope-id.',
      )
      .addOption(new Option('--subject <externalId>', "the subject's external id (the decision looks it up)").conflicts('subjectId'))
      .addOption(new Option('--subject-type <type>', 'the subject\'s type: with --subject, only a subject of this type is looked up; with --subject-id, the decision checks it').choices(['user', 'service', 'agent']))
      .option('--subject-id <id>', "the subject's id")
      .addOption(new Option('--scope <path>', 'the scope\'s path as a model file writes it: /eng/platform, / for the tenant\'s root').conflicts('scopeId'))
      .option('--scope-id <id>', "the scope's id")
      .requiredOption('--action <action>', 'the action, e.g. edit')
      .addOption(new Option('--resource <type/externalId>', 'the resource by type key and external id, e.g. doc/readme').argParser(resourceOption).conflicts('resourceId'))
      .option('--resource-id <id>', "the resource's id")
      .option('--context <json>', 'the request context as a JSON object, read by policies\' contextCondition', contextOption)
      .option('--explain', 'print the steps that led to the decision, as a tree')
      .addOption(new Option('--min-revision <n>', 'answer only from state at this tenant revision or later (a write\'s x-revision)').argParser(positiveInteger('--min-revision')))
      .addOption(new Option('--fully-consistent', 'answer from the latest committed revision (control plane only)').conflicts('minRevision'))
      .addOption(new Option('--at-revision <n>', 'answer as the tenant was at this past revision (control plane only)').argParser(positiveInteger('--at-revision')).conflicts(['minRevision', 'fullyConsistent']))
      .addOption(new Option('--at <time>', 'answer as the tenant was at this time, RFC 3339 (control plane only)').argParser(timeOption).conflicts(['minRevision', 'fullyConsistent', 'atRevision']))
      .action(cli.action<CheckOptions>(check));
  },
};
