/**
 * The resource-policy leg of the decision path: the policies targeting the resource directly and
 * those of the matching collections defined at the scope or an ancestor for its type; the
 * matching ones kept; the winner of the highest-priority group (a deny in it wins, else its
 * first allow by id). Errors fail closed (evaluate.ts states the rules): a condition or a bound
 * that cannot be evaluated holds on a deny and not on an allow, and a collection whose match
 * definition errors brings in its deny policies, not its allows.
 */
import { DecisionBudget, type EvaluationBudget } from './budget.js';
import { bagRows, type RowBag, type ScopePath, type TenantIndex } from './tenant-index/mod.js';
import { isPlainObject } from './json.js';
import { applyJsonLogic, logicTruthy, missingVariables } from './jsonlogic.js';
import { matchOutcome, type MatchSubject, type ResourceTags } from './match.js';
import type { Collection, Policy, Resource, Subject } from './model.js';
import { cmp } from './order.js';
import type { KnownTarget } from './target.js';
import { collectionStep, policyStep, ruledOutStep, type TraceStep } from './trace.js';

/** What the policy leg reads, built once by a decision that reaches it. */
export interface PolicyLeg {
  index: TenantIndex;
  action: string;
  /** The request's context as sent. */
  context: Record<string, unknown> | undefined;
  target: KnownTarget;
  /** The evaluation scope and its ancestors. */
  path: ScopePath;
  /** The clock, in milliseconds. */
  now: number;
  subject: Subject;
  trace: TraceStep[] | undefined;
  /** The group budget of the caller (one `evaluate/batch` call), when given. */
  group: EvaluationBudget | undefined;
}

interface Candidate {
  policy: Policy;
  via: string;
}

/**
 * The winner of the highest-priority group of matching policies, or undefined when none
 * matches. Its budget is created here, so a decision that reaches no policy never touches one.
 */
export function evaluatePolicies(leg: PolicyLeg): Policy | undefined {
  const budget = new DecisionBudget(leg.group);
  try {
    return decidePolicies(leg, budget);
  } finally {
    budget.settle();
  }
}

/**
 * Policies are collected, then the matching ones kept. Rules that run only for the explanation
 * (conditions of a policy already out, collections without policies) draw on a spare budget of
 * their own, so explaining never changes a decision.
 */
function decidePolicies(leg: PolicyLeg, budget: DecisionBudget): Policy | undefined {
  const { index, trace, now } = leg;
  const spare = trace ? new DecisionBudget() : undefined;
  // A view: match definitions read a field or two, so no whole row is built.
  const resource = index.resourceView(leg.target.num);
  const direct = index.resourceNodes.policies(leg.target.num);
  const hasCollections = index.hasCollectionsOfType(resource.resourceTypeId);
  if (direct === undefined && !hasCollections) {
    trace?.push({ leg: 'policy', outcome: 'skip', message: 'no policy targets the resource or a matching collection' });
    return undefined;
  }
  const candidates: Candidate[] = [];
  for (const p of bagRows<Policy>(direct)) candidates.push({ policy: p, via: 'direct' });
  if (hasCollections) collectionCandidates(leg, resource, candidates, budget, spare);
  if (candidates.length === 0) {
    trace?.push({ leg: 'policy', outcome: 'skip', message: 'no policy targets the resource or a matching collection' });
    return undefined;
  }
  // One order in every process, whatever order the index received its rows in: which condition
  // runs out of a shared budget (and so fails closed) must not depend on it.
  if (candidates.length > 1) candidates.sort(byPriorityThenId);

  const action = leg.action;
  const subject = leg.subject;
  let subjectData: unknown;
  let contextData: Record<string, unknown> | undefined;
  const nowDate = new Date(now);
  const matching: Policy[] = [];
  for (const { policy: p, via } of candidates) {
    const actionOk = p.actions.includes(action) || p.actions.includes('*');
    // A bound or condition that cannot be evaluated fails closed: it counts as holding on a
    // deny, not holding on an allow.
    const failClosed = p.effect === 'deny';
    const from = validTime(p.validFrom);
    const until = validTime(p.validUntil);
    const windowOk =
      (from === null || (Number.isNaN(from) ? failClosed : now >= from)) &&
      (until === null || (Number.isNaN(until) ? failClosed : now < until));
    const hasSubjectCond = p.subjectCondition !== undefined && p.subjectCondition !== null;
    const hasContextCond = p.contextCondition !== undefined && p.contextCondition !== null;
    // Cheap checks first; conditions run only when they can still matter, except when explaining.
    let subjectOk: boolean | undefined;
    let contextOk: boolean | undefined;
    let subjectError: string | undefined;
    let contextError: string | undefined;
    let missing: string[] | undefined;
    if ((actionOk && windowOk) || trace) {
      const needed = actionOk && windowOk;
      if (hasSubjectCond) {
        subjectData ??= { subject: { id: subject.id, type: subject.type, externalId: subject.externalId, meta: isPlainObject(subject.metadata) ? subject.metadata : {} } };
        const r = applyJsonLogic(p.subjectCondition, subjectData, needed ? budget : spare);
        if (r.ok) subjectOk = logicTruthy(r.value);
        else {
          subjectError = r.error;
          subjectOk = failClosed;
        }
      } else subjectOk = true;
      if (subjectOk || trace) {
        if (hasContextCond) {
          contextData ??= conditionContext(leg.context, nowDate);
          const r = applyJsonLogic(p.contextCondition, contextData, needed && subjectOk ? budget : spare);
          if (r.ok) contextOk = logicTruthy(r.value);
          else {
            contextError = r.error;
            contextOk = failClosed;
          }
          if (trace && !contextOk && contextError === undefined) missing = missingVariables(p.contextCondition, contextData);
        } else contextOk = true;
      }
    }
    const matched = actionOk && windowOk && subjectOk === true && contextOk === true;
    if (matched) matching.push(p);
    if (trace) {
      trace.push(policyStep(p, {
        via, priority: priorityOf(p), action: actionOk, window: windowOk, badWindow: Number.isNaN(from) || Number.isNaN(until),
        subjectCondition: subjectOk, contextCondition: contextOk, hasSubjectCondition: hasSubjectCond, hasContextCondition: hasContextCond,
        subjectError, contextError, missing, matched,
      }));
    }
  }
  if (matching.length === 0) {
    trace?.push({ leg: 'policy', outcome: 'skip', message: 'no policy matches; role-based evaluation follows' });
    return undefined;
  }
  const top = Math.max(...matching.map(priorityOf));
  let deny: Policy | undefined;
  let allow: Policy | undefined;
  for (const p of matching) {
    if (priorityOf(p) !== top) continue;
    if (p.effect === 'deny') {
      if (!deny || p.id < deny.id) deny = p;
    } else if (!allow || p.id < allow.id) allow = p;
  }
  const winner = (deny ?? allow) as Policy;
  trace?.push({
    leg: 'policy',
    outcome: winner.effect === 'deny' ? 'deny' : 'allow',
    message: `highest matching priority ${top}: ${deny ? `deny wins (policy ${winner.id})` : `only allows; first by id is policy ${winner.id}`}`,
  });
  return winner;
}

/**
 * Policies of the matching collections defined at S or an ancestor for the resource's type. A
 * collection whose match definition errors fails closed: its deny policies are considered (as if
 * it matched, still subject to their action, window and conditions), its allow policies are not.
 * Only the collections the index leaves to try are matched (those whose definitions require a
 * value or tag the resource lacks can neither match nor error), and of those only the ones with
 * a policy of the action (or `*`) on the decision's budget: another's policies cannot match.
 */
function collectionCandidates(leg: PolicyLeg, resource: Resource, out: Candidate[], budget: DecisionBudget, spare: DecisionBudget | undefined): void {
  const { index, trace, action } = leg;
  let tags: ResourceTags | undefined;
  const subject: MatchSubject = { resource, tags: (): ResourceTags => (tags ??= index.resourceTags(resource.id)) };
  const toTry: Collection[] = [];
  let ruledOut = 0;
  for (const s of leg.path.ids) {
    toTry.length = 0;
    ruledOut += index.collectionsToTry(resource.resourceTypeId, s, resource, subject.tags, toTry);
    for (const c of toTry) {
      const policies = index.collectionPolicies(c.id);
      const decides = hasPolicyOf(policies, action);
      if (!decides && !trace) continue;
      // Matched only for the explanation: drawn from the spare budget, never the decision's.
      subject.budget = decides ? budget : spare;
      const outcome = matchOutcome(c.matchDefinition, subject);
      trace?.push(collectionStep(c.id, s, outcome, subject.error));
      if (outcome === 'no_match') continue;
      const via = outcome === 'match' ? `collection ${c.id}` : `collection ${c.id}, match definition errored`;
      for (const p of bagRows<Policy>(policies)) if (outcome === 'match' || p.effect === 'deny') out.push({ policy: p, via });
    }
  }
  if (trace && ruledOut > 0) trace.push(ruledOutStep(ruledOut));
}

/** Whether a policy of the bag names the action or `*` (the action check of decidePolicies). */
function hasPolicyOf(policies: RowBag<Policy> | undefined, action: string): boolean {
  for (const p of bagRows<Policy>(policies)) if (p.actions.includes(action) || p.actions.includes('*')) return true;
  return false;
}

function validTime(iso: string | null | undefined): number | null {
  if (iso === undefined || iso === null) return null;
  return typeof iso === 'string' ? Date.parse(iso) : NaN;
}

/** Context as sent, with `time` filled from the clock when absent. */
export function conditionContext(context: Record<string, unknown> | undefined | null, now: Date): Record<string, unknown> {
  const base: Record<string, unknown> = isPlainObject(context) ? context : {};
  if (Object.prototype.hasOwnProperty.call(base, 'time')) return base;
  return {
    ...base,
    time: { hour: now.getUTCHours(), minute: now.getUTCMinutes(), dayOfWeek: now.getUTCDay(), iso: now.toISOString() },
  };
}

/** Highest priority first, then by id: the order policies are evaluated in. */
function byPriorityThenId(a: Candidate, b: Candidate): number {
  return priorityOf(b.policy) - priorityOf(a.policy) || cmp(a.policy.id, b.policy.id);
}

function priorityOf(p: Policy): number {
  return typeof p.priority === 'number' && Number.isFinite(p.priority) ? p.priority : 0;
}
