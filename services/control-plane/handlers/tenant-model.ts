/**
 * TenantModelService: a tenant's model file planned against the tenant, applied in one
 * transaction as one revision, and exported (docs/policy-as-code.md). The file is read and
 * checked by the same module `authz validate` uses (services/model), against the tenant's state
 * for what the file leaves out.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { TenantModelService } from '../../../gen/authz/v1/tenant_model_service_pb.js';
import { ModelChangeSchema, type ModelChange as ModelChangeMessage } from '../../../gen/authz/v1/tenant_model_service_pb.js';
import { create } from '@bufbuild/protobuf';
import { DomainError, constraint, invalid, limitExceeded, permissionDenied, revisionMismatch } from '../../common/errors.js';
import { MAX_BATCH, oneOf, optionalString, requireString } from '../../common/validate.js';
import { SECTIONS, type Section } from '../../model/format.js';
import { onlySections, policyIdFor, stateToModel, type TenantState } from '../../model/from-state.js';
import { normaliseModel, renderModel, sectionsOf } from '../../model/normalize.js';
import { formatModelError, formatPath, type ModelError, type ParsedModel } from '../../model/parse.js';
import { planModel, type ModelChange, type PlanProblem } from '../../model/plan.js';
import { checkModelText, checkParsedModel, prepareModelChecks, type CheckedModel } from '../../model/validate.js';
import { inReadSnapshot, readTenantModelRows, nameClashes, type TenantModelRows } from '../../store/tenant-model.js';
import { runWrite, type WriteTx } from '../../store/write.js';
import { assertTenantReach, assertWholeTenantReach, principalOf, type Principal } from '../auth/principal.js';
import { writerOfCall } from '../auth/writer.js';
import type { Deps } from './deps.js';
import { writePlan, type PlannedApply } from './tenant-model-apply.js';
import { setRevision } from './writes.js';

/** Errors listed in one answer; the rest are counted. */
const MAX_LISTED = 20;
/** Reasons a tenant's state cannot be a model, listed in one answer (each names entity ids, so they are long). */
const MAX_STATE_PROBLEMS = 5;

/** A model's errors as one `invalid_argument`: each `file:line:column: path: message`, the first one's path as the field. */
function invalidModel(errors: ModelError[]): DomainError {
  const lines = errors.slice(0, MAX_LISTED).map(formatModelError);
  if (errors.length > MAX_LISTED) lines.push(`… and ${errors.length - MAX_LISTED} more`);
  return new DomainError('invalid', `the model is not valid:\n${lines.join('\n')}`, errors[0]?.path || 'document');
}

/** The tenant a model request addresses: reachable by the key as a whole (a key bound to an environment is refused). */
function tenantOf(principal: Principal, tenantId: string): string {
  const id = requireString(tenantId, 'tenantId');
  assertTenantReach(principal, id, 'tenantId');
  assertWholeTenantReach(principal, 'a tenant model covers the whole tenant', 'tenantId');
  return id;
}

/**
 * The document read and checked on its own, before anything reads the tenant: a file that cannot
 * be valid costs its reading only.
 */
function readDocument(document: string, fileName: string): ParsedModel {
  const own = checkModelText(document, fileName);
  if (own.errors.length > 0) throw invalidModel(own.errors);
  return own.parsed;
}

/** A tenant's state a model cannot describe, as one `failed_precondition` listing the first few reasons. */
function unmodellable(problems: string[], total = problems.length): DomainError {
  const listed = problems.slice(0, MAX_STATE_PROBLEMS);
  if (total > listed.length) listed.push(`… and ${total - listed.length} more`);
  return constraint(`the tenant's state cannot be written as a model: ${listed.join('; ')}`, 'tenantId');
}

/**
 * The tenant's rows and their model, as `tx` reads them. Names a model cannot tell apart (sibling
 * scopes, collections) are looked for first, by one query, so that such a tenant is refused before
 * every row is read.
 */
async function tenantAsModel(tx: WriteTx, tenantId: string): Promise<{ rows: TenantModelRows; state: ReturnType<typeof stateToModel> }> {
  const clashes = await nameClashes(tx, tenantId, MAX_STATE_PROBLEMS + 1);
  if (clashes.length > 0) {
    throw unmodellable(clashes.map((c) => {
      const which = c.count > c.ids.length ? `${c.count} ${c.kind}s (${c.ids.join(', ')}, …)` : `${c.kind}s ${c.ids.join(', ')}`;
      const name = `"${c.name.slice(0, 64)}${c.name.length > 64 ? '…' : ''}"`;
      return c.kind === 'scope'
        ? `${which} under ${c.parentId} share the name ${name}: a model names scopes by path, so siblings need distinct names`
        : `${which} share the name ${name}: a model names collections by name`;
    }));
  }
  const rows = await readTenantModelRows(tx, tenantId);
  const state = stateToModel(rows as unknown as TenantState);
  if (state.problems.length > 0) throw unmodellable(state.problems);
  return { rows, state };
}

/** Plans the document against the tenant as `tx` reads it; refuses what the plan cannot do. */
async function planIn(tx: WriteTx, principal: Principal, tenantId: string, parsed: ParsedModel, prune: boolean): Promise<PlannedApply & { revision: number }> {
  const { rows, state } = await tenantAsModel(tx, tenantId);
  const checked = checkParsedModel(parsed, { universe: state.universe, keySubjects: state.keySubjects });
  if (checked.errors.length > 0) throw invalidModel(checked.errors);
  const problems: PlanProblem[] = [];
  const keySubjects = new Set(state.keySubjects);
  checked.model!.subjects?.forEach((s, i) => {
    if (keySubjects.has(s.externalId)) problems.push({ path: ['subjects', i, 'externalId'], message: `subject ${s.externalId} is an API key's subject: it is managed with the key, not listed in a model` });
  });
  const plan = planModel(checked.entities!, state.entities, { prune, managed: new Set(sectionsOf(checked.model!)) });
  problems.push(...plan.problems);
  const counts = new Map<string, number>();
  for (const c of plan.changes) {
    if (c.action === 'keep') continue;
    counts.set(c.kind, (counts.get(c.kind) ?? 0) + 1);
    if (c.action === 'create' && c.kind === 'scopeType' && principal.kind !== 'platform') {
      throw permissionDenied(`${formatPath([...c.entity!.path, 'name'])}: scope type "${JSON.parse(c.key)[0]}" does not exist, and only a platform key creates scope types (they are shared by every tenant)`, formatPath([...c.entity!.path, 'name']));
    }
    if (c.action === 'create' && c.kind === 'policy' && policyIdFor(tenantId, JSON.parse(c.key)[0]) === undefined) {
      problems.push({ path: [...c.entity!.path, 'name'], message: 'a policy the model creates takes the id policy_<tenant hash>_<name>: at most 53 characters' });
    }
  }
  for (const [kind, n] of counts) {
    if (n > MAX_BATCH) throw limitExceeded(kind, `the plan writes ${n} entities of kind ${kind}; one apply writes at most ${MAX_BATCH} of a kind (as a batch does)`);
  }
  if (problems.length > 0) throw planRefused(problems, checked);
  return { tenantId, plan, state, rows, revision: rows.revision };
}

/** Problems of a plan as one `failed_precondition`, each at its place in the file when it has one. */
function planRefused(problems: PlanProblem[], checked: CheckedModel): DomainError {
  const lines = problems.slice(0, MAX_LISTED).map((p) => {
    if (!p.path) return p.message;
    const at = checked.parsed.locate(p.path);
    return `${checked.parsed.file}:${at.line}:${at.column}: ${formatPath(p.path)}: ${p.message}`;
  });
  if (problems.length > MAX_LISTED) lines.push(`… and ${problems.length - MAX_LISTED} more`);
  const first = problems.find((p) => p.path);
  return new DomainError('constraint', `the plan cannot be applied:\n${lines.join('\n')}`, first?.path ? formatPath(first.path) : undefined);
}

/** A change as the wire carries it. */
function changeMessage(c: ModelChange, desiredPaths: boolean): ModelChangeMessage {
  const inFile = desiredPaths && c.entity !== undefined && c.entity !== c.current;
  return create(ModelChangeSchema, { kind: c.kind, action: c.action, key: c.label, fields: c.fields, reason: c.reason, path: inFile ? formatPath(c.entity!.path) : '' });
}

export function tenantModelService(deps: Deps): ServiceImpl<typeof TenantModelService> {
  // The schema's validator is compiled once, at start, not in the first request.
  prepareModelChecks();
  return {
    async planTenantModel(req, ctx) {
      const principal = principalOf(ctx);
      const tenantId = tenantOf(principal, req.tenantId);
      const parsed = readDocument(req.document, optionalString(req.fileName, 'fileName') ?? 'model.yaml');
      const planned = await inReadSnapshot(deps.db, (tx) => planIn(tx, principal, tenantId, parsed, req.prune));
      return { revision: BigInt(planned.revision), changes: planned.plan.changes.map((c) => changeMessage(c, true)) };
    },

    async applyTenantModel(req, ctx) {
      const principal = principalOf(ctx);
      const tenantId = tenantOf(principal, req.tenantId);
      const parsed = readDocument(req.document, optionalString(req.fileName, 'fileName') ?? 'model.yaml');
      const writer = writerOfCall(ctx);
      const { result, revision } = await runWrite(deps.db, async (tx) => {
        await tx.useTenant(tenantId, 'tenantId');
        const at = tx.revision! - 1;
        if (req.expectedRevision !== undefined && BigInt(at) !== req.expectedRevision) {
          throw revisionMismatch(`the tenant is at revision ${at}, not at the expected revision ${req.expectedRevision}: plan again`, 'expectedRevision');
        }
        const planned = await planIn(tx, principal, tenantId, parsed, req.prune);
        await writePlan(tx, principal, planned);
        return planned.plan;
      }, writer);
      setRevision(ctx, revision);
      return { revision: BigInt(revision ?? 0), changes: result.changes.map((c) => changeMessage(c, true)) };
    },

    async exportTenantModel(req, ctx) {
      const principal = principalOf(ctx);
      const tenantId = tenantOf(principal, req.tenantId);
      const format = oneOf(req.format, ['yaml', 'json'] as const, 'format', 'yaml');
      const sections = req.sections.map((s, i) => {
        if (!(SECTIONS as readonly string[]).includes(s)) throw invalid(`sections[${i}]`, `must be one of ${SECTIONS.join(', ')}`);
        return s as Section;
      }).sort((a, b) => SECTIONS.indexOf(a) - SECTIONS.indexOf(b));
      const { model, revision } = await inReadSnapshot(deps.db, async (tx) => {
        const { rows, state } = await tenantAsModel(tx, tenantId);
        return { model: state.model, revision: rows.revision };
      });
      const chosen = sections.length > 0 ? onlySections(model, sections) : normaliseModel(model);
      return { document: renderModel(chosen, format), format, revision: BigInt(revision) };
    },
  };
}
