/**
 * `authz lookup resources|subjects`: the listings, paged to the end (or to `--limit`). Names go
 * as in `authz check`: a subject by external id (the service resolves it), a scope by path
 * (resolved with a platform key first) or by id, a resource as TYPE/EXTERNAL_ID or by id.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { Option, type Command } from 'commander';
import { toRestJson } from '../../client/rest-json.js';
import type { Listing } from '../../client/listings.js';
import { LookupResourceSchema, LookupSubjectSchema, type LookupResource, type LookupSubject } from '../../gen/authz/v1/decision_service_pb.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../exit.js';
import { columns } from '../output.js';
import { positiveInteger, type CliCommand } from '../command.js';
import { contextOption, resolved, resourceOption } from './check.js';

interface CommonOptions {
  scope?: string;
  scopeId?: string;
  action: string;
  context?: JsonObject;
  pageSize?: number;
  limit?: number;
  minRevision?: number;
  fullyConsistent?: boolean;
}

interface ResourcesOptions extends CommonOptions {
  subject?: string;
  subjectId?: string;
  subjectType?: string;
  type?: string;
}

interface SubjectsOptions extends CommonOptions {
  resource?: { resourceType: string; externalResourceId: string };
  resourceId?: string;
  subjectType?: string;
  explain?: boolean;
}

async function scopeIdOf(ctx: CliContext, o: CommonOptions): Promise<string> {
  if (o.scope === undefined && o.scopeId === undefined) throw new UsageError('give the scope: --scope PATH (with --tenant) or --scope-id ID');
  if (o.scopeId !== undefined) return o.scopeId;
  const tenant = ctx.requireTenant('--scope PATH');
  return (await resolved('--scope', o.scope!, '--scope-id', () => ctx.client().resolveScopePath(tenant, o.scope!))).id;
}

function consistencyOf(o: CommonOptions) {
  if (o.minRevision !== undefined) return { consistency: { minRevision: BigInt(o.minRevision) } };
  if (o.fullyConsistent) return { consistency: { fullyConsistent: true } };
  return {};
}

const pageSizeOption = () =>
  new Option('--page-size <n>', 'items a page asks for, 1 to 1,000 (default: the server\'s, 100); every page is fetched').argParser((raw) => {
    const n = positiveInteger('--page-size')(raw);
    if (n > 1000) throw new UsageError('--page-size: at most 1000');
    return n;
  });

/** The footer of a table: how many, at which revision, and whether --limit cut the listing short. */
function footer(what: string, listing: Listing<unknown>, limit: number | undefined): string {
  const line = `${listing.items.length} ${what} at revision ${listing.revision} (${listing.pages} page${listing.pages === 1 ? '' : 's'})`;
  return listing.truncated ? `${line}; stopped at --limit ${limit}: more may follow` : line;
}

async function lookupResources(ctx: CliContext, o: ResourcesOptions): Promise<void> {
  if (o.subject === undefined && o.subjectId === undefined) throw new UsageError('give the subject: --subject EXTERNAL_ID or --subject-id ID');
  const scopeId = await scopeIdOf(ctx, o);
  const listing = await ctx.client().lookupAllResources(
    {
      actor: { ...(o.subjectId !== undefined ? { subjectId: o.subjectId } : { externalId: o.subject! }), ...(o.subjectType !== undefined ? { subjectType: o.subjectType } : {}) },
      scopeId, action: o.action,
      ...(o.type !== undefined ? { resourceType: o.type } : {}),
      ...(o.context !== undefined ? { context: o.context } : {}),
      ...consistencyOf(o),
    },
    { pageSize: o.pageSize, limit: o.limit },
  );
  const resources = listing.items.map((r: LookupResource) => toRestJson(LookupResourceSchema, r));
  ctx.emit({ resources, revision: listing.revision, truncated: listing.truncated }, () =>
    [
      ...(resources.length ? [columns(['ID', 'TYPE', 'EXTERNAL ID', 'OWNER SCOPE'], resources.map((r) => [r.id, r.resourceType, r.externalResourceId, r.ownerScopeId]), ctx.styles)] : []),
      footer('resources', listing, o.limit),
    ].join('\n'),
  );
}

/** How a grant reads in a table: its reason and the rows behind it. */
function grantText(g: JsonObject | undefined): string {
  if (g === undefined) return '';
  const parts = [String(g.reason)];
  if (g.policyId) parts.push(`policy ${g.policyId}`);
  if (g.roleId) parts.push(`role ${g.roleId}`);
  if (g.membershipId) parts.push(`membership ${g.membershipId} at ${g.sourceScopeId}`);
  if (g.tagBindingId) parts.push(`tag binding ${g.tagBindingId} at ${g.sourceScopeId}`);
  if (g.ownershipGrantId) parts.push(`ownership grant ${g.ownershipGrantId}`);
  if (g.ancestorResourceId) parts.push(`on ancestor ${g.ancestorResourceId}`);
  return parts.join(' · ');
}

async function lookupSubjects(ctx: CliContext, o: SubjectsOptions): Promise<void> {
  const scopeId = await scopeIdOf(ctx, o);
  const listing = await ctx.client().lookupAllSubjects(
    {
      scopeId, action: o.action,
      ...(o.resourceId !== undefined ? { resource: { resourceId: o.resourceId } } : {}),
      ...(o.resource !== undefined ? { resource: o.resource } : {}),
      ...(o.subjectType !== undefined ? { subjectType: o.subjectType } : {}),
      ...(o.context !== undefined ? { context: o.context } : {}),
      explain: o.explain === true,
      ...consistencyOf(o),
    },
    { pageSize: o.pageSize, limit: o.limit },
  );
  const subjects = listing.items.map((s: LookupSubject) => toRestJson(LookupSubjectSchema, s));
  const header = o.explain ? ['ID', 'TYPE', 'EXTERNAL ID', 'GRANT'] : ['ID', 'TYPE', 'EXTERNAL ID'];
  ctx.emit({ subjects, revision: listing.revision, truncated: listing.truncated }, () =>
    [
      ...(subjects.length
        ? [columns(header, subjects.map((s) => [s.id, s.type, s.externalId, ...(o.explain ? [grantText(s.grant as JsonObject | undefined)] : [])]), ctx.styles)]
        : []),
      footer('subjects', listing, o.limit),
    ].join('\n'),
  );
}

function commonOptions(c: Command): Command {
  return c
    .addOption(new Option('--scope <path>', 'the scope\'s path as a model file writes it: /eng/platform, / for the tenant\'s root').conflicts('scopeId'))
    .option('--scope-id <id>', "the scope's id")
    .requiredOption('--action <action>', 'the action, e.g. read')
    .option('--context <json>', 'the request context as a JSON object, read by policies\' contextCondition', contextOption)
    .addOption(pageSizeOption())
    .addOption(new Option('--limit <n>', 'stop after this many (the output says when more may follow)').argParser(positiveInteger('--limit')))
    .addOption(new Option('--min-revision <n>', 'answer only from state at this tenant revision or later (a write\'s x-revision)').argParser(positiveInteger('--min-revision')))
    .addOption(new Option('--fully-consistent', 'answer from the latest committed revision (control plane only)').conflicts('minRevision'));
}

export const lookupCommand: CliCommand = {
  register(program: Command, cli) {
    const lookup = program
      .command('lookup')
      .summary('list the resources a subject may act on, or the subjects that may act on a resource')
      .description('Lists, paged to the end (or to --limit), what Evaluate allows: `lookup resources` for a subject, `lookup subjects` for a resource.');
    commonOptions(
      lookup
        .command('resources')
        .summary('the resources a subject may act on')
        .description('Lists the resources on which a subject may do an action in a scope (of one type with --type), by id, every page of the listing at one revision.')
        .addOption(new Option('--subject <externalId>', "the subject's external id (the service looks it up)").conflicts('subjectId'))
        .option('--subject-id <id>', "the subject's id")
        .addOption(new Option('--subject-type <type>', 'with --subject, only a subject of this type is looked up').choices(['user', 'service', 'agent']))
        .option('--type <key>', 'only resources of this type key'),
    ).action(cli.action<ResourcesOptions>(lookupResources));
    commonOptions(
      lookup
        .command('subjects')
        .summary('the subjects that may act on a resource')
        .description('Lists the subjects that may do an action on a resource in a scope (without a resource: in the scope), by id, every page at one revision; --explain gives each its grant.')
        .addOption(new Option('--resource <type/externalId>', 'the resource by type key and external id, e.g. doc/readme').argParser(resourceOption).conflicts('resourceId'))
        .option('--resource-id <id>', "the resource's id")
        .option('--subject-type <type>', 'only subjects of this type')
        .option('--explain', 'give each subject its grant: the reason and the role, membership, tag binding, ownership grant or policy behind it'),
    ).action(cli.action<SubjectsOptions>(lookupSubjects));
  },
};
