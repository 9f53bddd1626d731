/**
 * LookupSubjects: the subjects of a tenant that may do an action on a resource (or, without
 * one, in a scope), in id order and a page at a time.
 *
 * Definition: the set is exactly `{ s of the tenant (of type T when asked) : evaluate(index,
 * { actor: { subjectId: s.id }, scopeId, action, resource, context }).allowed }`, computed that
 * way: the tenant's subjects are walked in id order from the one after `after`, and `evaluate`
 * itself decides each (with its own decision budget), until `pageSize` are allowed, the page's
 * visit budget is spent or the subjects run out. No second decision path exists to disagree.
 *
 * One shortcut, from the order of the decision path: the resource and gate legs run before the
 * subject is read, so a decision that ends there (`resource_not_found`: an unknown resource id;
 * `gate_unreachable`) is the same for every subject, and the listing is empty without a walk.
 *
 * Cost: a page costs one decision per subject visited, returned or skipped, and visits at most
 * LOOKUP_MAX_VISITS (as LookupResources): a page that reaches it ends short, even empty, with a
 * cursor. The index's first listing sorts the tenant's subjects once; writes keep that order
 * (tenant-index/subject-order.ts). With `explain`, each listed subject is decided once more with
 * its trace, and its grant is read from that trace (see grantOf).
 */
import { evaluate, type Decision, type DecisionReason, type EvaluateOptions, type EvaluateRequest, type ResourceRef, type TraceStep } from './evaluate.js';
import { ScopeNotFoundError } from './errors.js';
import { LOOKUP_MAX_VISITS } from './lookup.js';
import type { Subject } from './model.js';
import type { HeldRole } from './roles.js';
import type { TenantIndex } from './tenant-index/mod.js';
import { firstAfter } from './tenant-index/resource-order.js';

export interface LookupSubjectsQuery {
  scopeId: string;
  action: string;
  /** As Evaluate takes it; absent: the action in the scope without a resource. */
  resource?: ResourceRef;
  context?: Record<string, unknown>;
  /** Only subjects of this type. */
  subjectType?: string;
  /** At most this many subjects (a positive integer). */
  pageSize: number;
  /** The last subject id of the previous page: this page starts after it. */
  after?: string;
  /** Give each listed subject its grant. */
  explain?: boolean;
}

/**
 * How a listed subject is allowed, read from its decision's trace. Which fields are set depends
 * on `reason`:
 * - `role`: `roleId`, the role's source (`membershipId` or `tagBindingId`) and `sourceScopeId`;
 * - `ownership`: `roleId`, `ownershipGrantId`;
 * - `inherited`: `ancestorResourceId`, `roleId`, and either `ownershipGrantId` (a grant on the
 *   ancestor) or the role's source (`membershipId` or `tagBindingId`, `sourceScopeId`);
 * - `policy_allow`: `policyId`.
 * A role held through several sources names the first in the trace's order (role id, then
 * source id).
 */
export interface SubjectGrant {
  reason: DecisionReason;
  roleId?: string;
  membershipId?: string;
  tagBindingId?: string;
  ownershipGrantId?: string;
  sourceScopeId?: string;
  ancestorResourceId?: string;
  policyId?: string;
  trace: TraceStep[];
}

export interface LookupSubjectsPage {
  /** The allowed subjects of this page, by id, with their grants when asked. */
  subjects: { subject: Subject; grant?: SubjectGrant }[];
  /**
   * Set when more may follow: the `after` of the next page (the last subject visited, which a
   * page ended by its visit budget may not list).
   */
  last?: string;
  /** The revision of the index the page was computed from. */
  revision: number;
}

/** Reasons the decision path gives before it reads the subject: the same for every subject. */
const BEFORE_SUBJECT: ReadonlySet<DecisionReason> = new Set(['resource_not_found', 'gate_unreachable']);

/**
 * One page of the subjects that may `query.action` on `query.resource` at `query.scopeId`.
 * Throws ScopeNotFoundError for an unknown scope (as evaluate does).
 */
export function lookupSubjects(
  index: TenantIndex,
  query: LookupSubjectsQuery,
  options: Pick<EvaluateOptions, 'now' | 'gate' | 'onError'> & { maxVisits?: number },
): LookupSubjectsPage {
  const maxVisits = options.maxVisits ?? LOOKUP_MAX_VISITS;
  const { pageSize } = query;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new RangeError('pageSize must be a positive integer');
  if (!Number.isSafeInteger(maxVisits) || maxVisits < 1) throw new RangeError('maxVisits must be a positive integer');
  const revision = index.revision;
  if (index.scopePath(query.scopeId).ids.length === 0) throw new ScopeNotFoundError(query.scopeId);

  const nodes = index.subjectsInIdOrder(query.subjectType || undefined);
  let i = query.after === undefined ? 0 : firstAfter(nodes, query.after, (n) => n.id);
  if (i >= nodes.length) return { subjects: [], revision };
  const actor = { subjectId: '' };
  const request: EvaluateRequest = { actor, scopeId: query.scopeId, action: query.action, resource: query.resource, context: query.context };
  actor.subjectId = (nodes[i].row as Subject).id;
  const first = evaluate(index, request, options);
  if (BEFORE_SUBJECT.has(first.reason)) return { subjects: [], revision };

  const subjects: LookupSubjectsPage['subjects'] = [];
  const end = Math.min(nodes.length, i + maxVisits);
  for (let decided: Decision | undefined = first; i < end && subjects.length < pageSize; i++, decided = undefined) {
    const row = nodes[i].row as Subject;
    actor.subjectId = row.id;
    if (!(decided ?? evaluate(index, request, options)).allowed) continue;
    if (query.explain) {
      const explained = evaluate(index, { ...request, actor: { subjectId: row.id }, explain: true }, options);
      subjects.push({ subject: row, grant: grantOf(explained) });
    } else subjects.push({ subject: row });
  }
  const page: LookupSubjectsPage = { subjects, revision };
  if (i < nodes.length) page.last = (nodes[i - 1].row as Subject).id;
  return page;
}

/**
 * The grant of an allowing decision with its trace: the deciding step's details (role, grant,
 * hierarchy path), the held role's source from the `roles held` step, the deciding policy.
 */
export function grantOf(decision: Decision): SubjectGrant {
  const trace = decision.trace ?? [];
  const grant: SubjectGrant = { reason: decision.reason, trace };
  if (decision.reason === 'policy_allow') {
    if (decision.evaluatedPolicy !== undefined) grant.policyId = decision.evaluatedPolicy.id;
    return grant;
  }
  const leg = decision.reason === 'role' ? 'role' : decision.reason === 'ownership' ? 'ownership' : decision.reason === 'inherited' ? 'hierarchy' : undefined;
  const step = leg === undefined ? undefined : trace.find((s) => s.leg === leg && s.outcome === 'allow');
  const detail = step?.detail ?? {};
  if (typeof detail.roleId === 'string') grant.roleId = detail.roleId;
  if (typeof detail.grantId === 'string') grant.ownershipGrantId = detail.grantId;
  const path = detail.hierarchyPath;
  if (Array.isArray(path) && path.length > 0) grant.ancestorResourceId = String(path[path.length - 1]);
  if (grant.roleId !== undefined && grant.ownershipGrantId === undefined) {
    const held = trace.find((s) => s.leg === 'role' && s.outcome === 'info' && Array.isArray(s.detail?.roles))?.detail?.roles as HeldRole[] | undefined;
    const source = held?.find((h) => h.roleId === grant.roleId);
    if (source !== undefined) {
      if (source.source === 'role') grant.membershipId = source.viaId;
      else grant.tagBindingId = source.viaId;
      grant.sourceScopeId = source.sourceScopeId;
    }
  }
  return grant;
}
