/**
 * The decision path (service spec "Evaluation behaviour", contract §5) as a pure function of a
 * tenant index, a request and the caller's clock and gate mode.
 *
 * Order: scope → resource resolution → reachability gate → subject → resource policies →
 * role-based permissions → ownership grants → hierarchy inheritance → no match. This file runs
 * the legs in order; resolution and the gate are in target.ts, the policy leg in policy-leg.ts,
 * held roles and permission covers in roles.ts, the explanation's text in trace.ts.
 * Interpretations fixed here (the spec leaves them open):
 * - Gate: the resource is reachable from S when its owner scope or one of its linked scopes is
 *   S or an ancestor of S (a project's resources are reachable from its environments, as the
 *   project's roles are). Under `links-fallback` a resource without links is reachable from
 *   everywhere. An unknown `externalResourceId` has no links: reachable under
 *   `links-fallback`, unreachable under `strict`.
 * - An unknown subject (no subject row in the tenant, whatever rows name it) is denied with
 *   reason `subject_not_found`; one whose stored type differs from `actor.subjectType` when that
 *   is given (non-empty) with reason `no_match`. Policies are not consulted for either.
 * - `actor.externalId` (instead of `subjectId`) names the subject with that external id; with
 *   `subjectType`, only a subject of that type (none of that type: `subject_not_found`). Several
 *   matching subjects throw AmbiguousSubjectError (a request error, not a decision).
 * - `externalResourceId` + type key naming several resources (bad data) resolves to the one
 *   owned nearest to S along its ancestors, else the smallest id.
 * - A null/absent condition is no condition. A condition that errors (invalid rule, a safety
 *   limit hit while evaluating, an exception) fails closed: on a `deny` policy it counts as
 *   passing, so the deny applies; on an `allow` policy it counts as failing, so the allow does
 *   not apply. A condition that merely evaluates to a falsy value (a missing variable reads as
 *   null) is not an error. An unparsable `validFrom`/`validUntil` bound fails closed the same
 *   way: it counts as holding on a deny (the other bound still decides), as not holding on an
 *   allow. A non-numeric priority counts as 0.
 * - A collection whose match definition errors against the resource (invalid definition or
 *   regex, a `condition` that errors or hits a safety limit) fails closed: its deny policies
 *   are considered as if it matched (still subject to their action, window and conditions),
 *   its allow policies are not. A definition that merely does not match is not an error.
 * - Conditions, match definitions and regex searches draw on the decision's operation budget
 *   (budget.ts), itself drawn from the caller's group budget (one `evaluate/batch` call) when
 *   given. Running out is an error like any other, so it fails closed as above; once the
 *   budget is spent the rules left error without running. A decision that reaches no policy
 *   never touches a budget, and rules run only for an explanation draw on a spare one, so
 *   explaining never changes a decision.
 * - Ownership: a grant counts only when its role is defined at R's owner scope or an ancestor
 *   of it (the API's rule, checked again so a later scope move fails closed).
 *   `owns(subject, R, role)` gives the subject, independently of any membership,
 *   the role's permissions at S (add/remove overrides applied, block overrides not, as a block
 *   stops flow from a membership) bound to R: each permission whose pattern covers R (`*`,
 *   R's id or external id) acts as the same permission with pattern R's id. So the grant
 *   covers R when the permission's action and type cover the request, and it is inherited by
 *   R's descendants exactly like a role permission patterned to R (reason `inherited`).
 * - Inheritance: ancestors are reached through `inherit` edges only (the walk stops at the
 *   first `none` edge), at most 64 deep, cycle-safe. The permission's pattern must equal the
 *   ancestor's resource `id` (not its external id: external ids are not unique across types).
 *   Policies are never inherited.
 * - Any internal error is a deny with reason `error`; an unknown scope throws
 *   ScopeNotFoundError.
 */
import type { EvaluationBudget } from './budget.js';
import { AmbiguousSubjectError, ScopeNotFoundError } from './errors.js';
import { subjectByExternalId } from './subject-ref.js';
import {
  F_POLICIES,
  F_NAMED,
  F_UP,
  F_UP_INHERIT,
  MAX_HIERARCHY_DEPTH,
  type ParentLink,
  type ResourceNode,
  type RoleInfo,
  type ScopePath,
  type SubjectNode,
  type TenantIndex,
} from './tenant-index/mod.js';
import type { OwnershipGrant, Policy, Resource } from './model.js';
import { inIdOrder } from './order.js';
import { evaluatePolicies } from './policy-leg.js';
import {
  collectRoles,
  coversWith,
  namedCover,
  grantRoleUsable,
  type RoleList,
  heldRoles,
  overrideDecisions,
  pathHasOverrides,
  roleCovers,
  setTerms,
  type CoverQuery,
  type HeldRole,
  type OverrideDecisions,
  type SkippedRole,
} from './roles.js';
import { gateReachable, resolveTarget, rowOf, type GateMode, type KnownTarget, type ResourceRef, type Target } from './target.js';
import { byRole, gateMessage, traceHeld, traceTarget, traceUnusableGrant, type TraceStep } from './trace.js';

export { conditionContext } from './policy-leg.js';
export type { GateMode, ResourceRef } from './target.js';
export type { TraceLeg, TraceStep } from './trace.js';

export interface EvaluateOptions {
  /** The clock: policy windows and the `time` context variables read it. */
  now: Date;
  /** `SERVICE_RESOURCE_SCOPE_GATE`. */
  gate: GateMode;
  /** Receives the original error when a decision fails with reason `error` (for logging). */
  onError?: (error: unknown) => void;
  /**
   * Operations shared by a group of decisions (the requests of one `evaluate/batch` call): each
   * decision draws at most `DECISION_MAX_OPERATIONS` from it and is charged what it spent. Without
   * one, each decision has its own `DECISION_MAX_OPERATIONS`. See budget.ts.
   */
  budget?: EvaluationBudget;
}

export interface EvaluateRequest {
  /** Exactly one of `subjectId` and `externalId` (the subject's `externalId` in the tenant). */
  actor: { subjectId?: string; externalId?: string; subjectType?: string };
  scopeId: string;
  action: string;
  resource?: ResourceRef;
  context?: Record<string, unknown>;
  explain?: boolean;
}

/** Every reason a decision can give, in the order of the decision path. */
export const DECISION_REASONS = [
  'resource_not_found',
  'gate_unreachable',
  'subject_not_found',
  'policy_allow',
  'policy_deny',
  'role',
  'ownership',
  'inherited',
  'no_match',
  'error',
] as const;

export type DecisionReason = (typeof DECISION_REASONS)[number];

export interface Decision {
  allowed: boolean;
  reason: DecisionReason;
  /** True when a resource policy decided. */
  decidedByPolicy: boolean;
  /** The deciding policy: the deny of the top group, else its first allow by id. */
  evaluatedPolicy?: Policy;
  /** Tenant revision of the index the decision was computed from. */
  revision: number;
  /** Present when the request asked for `explain`. */
  trace?: TraceStep[];
}

class MalformedRequestError extends Error {}

/**
 * Evaluates one request. Never throws except ScopeNotFoundError and AmbiguousSubjectError;
 * fails closed on anything else.
 */
export function evaluate(index: TenantIndex, request: EvaluateRequest, options: EvaluateOptions): Decision {
  let trace: TraceStep[] | undefined;
  try {
    trace = request?.explain === true ? [] : undefined;
    return decide(index, request, options, trace);
  } catch (e) {
    if (e instanceof ScopeNotFoundError || e instanceof AmbiguousSubjectError) throw e;
    try {
      options?.onError?.(e);
    } catch {
      // a failing logger must not turn a deny into anything else
    }
    let revision = -1;
    try {
      revision = index.revision;
    } catch {
      // index unusable: the revision stays unknown
    }
    const d: Decision = { allowed: false, reason: 'error', decidedByPolicy: false, revision };
    if (trace) {
      // Internal details go to onError only, never to the caller.
      trace.push({ leg: 'error', outcome: 'deny', message: 'internal error during evaluation; denied' });
      d.trace = trace;
    }
    return d;
  }
}

/** How a trace names the request's subject. */
function subjectLabel(actor: EvaluateRequest['actor']): string {
  if (actor.subjectId) return `subject ${actor.subjectId}`;
  const type = actor.subjectType ? ` of type ${actor.subjectType}` : '';
  return `subject with external id ${JSON.stringify(actor.externalId)}${type}`;
}

function nonEmptyString(v: unknown): boolean {
  return typeof v === 'string' && v.length > 0;
}

function checkRequest(request: EvaluateRequest): void {
  if (!request || typeof request !== 'object') throw new MalformedRequestError('request');
  if (!request.actor) throw new MalformedRequestError('actor.subjectId');
  const byId = nonEmptyString(request.actor.subjectId);
  if (byId === nonEmptyString(request.actor.externalId)) throw new MalformedRequestError(byId ? 'actor.externalId' : 'actor.subjectId');
  const st = request.actor.subjectType;
  if (st !== undefined && st !== null && typeof st !== 'string') throw new MalformedRequestError('actor.subjectType');
  if (!nonEmptyString(request.scopeId)) throw new MalformedRequestError('scopeId');
  if (!nonEmptyString(request.action)) throw new MalformedRequestError('action');
  const r = request.resource as Record<string, unknown> | undefined | null;
  if (r !== undefined && r !== null) {
    const byId = nonEmptyString(r.resourceId);
    const byExt = nonEmptyString(r.externalResourceId) && nonEmptyString(r.resourceType);
    if (byId === byExt) throw new MalformedRequestError('resource');
  }
  const c = request.context as unknown;
  if (c !== undefined && c !== null && (typeof c !== 'object' || Array.isArray(c))) throw new MalformedRequestError('context');
}

/** Per-request state shared by the legs (module-level helpers instead of closures: cheaper per call). */
interface Ctx {
  index: TenantIndex;
  trace: TraceStep[] | undefined;
  path: ScopePath;
  hasOverrides: boolean;
  decisions: Map<string, OverrideDecisions | null> | undefined;
}

// Scratch space of the decision path, reused by every call so that a check without `explain`
// allocates nothing but its Decision (and a few small objects on rare paths). `evaluate` is
// synchronous and never re-entered (nothing it calls can call back into it), so one set is safe.
/** The distinct roles the subject holds at the evaluation scope. */
const ROLES: RoleList = { items: [], n: 0 };
/** Query of the direct role and ownership legs. */
const DIRECT: CoverQuery = { action: '', type: null, p0: undefined, p1: undefined, p2: undefined, actionTerm: 0, typeTerm: 0 };
/** Query of one hierarchy step. */
const VIA: CoverQuery = { action: '', type: null, p0: undefined, p1: undefined, p2: undefined, actionTerm: 0, typeTerm: 0 };
/** Ancestors visited by the hierarchy walk (cycle detection): `VISITED[0..visited)`. */
const VISITED: ResourceNode[] = [];
/** Role ids of a subject's grants on one resource (`GrantSet.rolesOn`). */
const GRANT_ROLES: string[] = [];

function decisionsOf(ctx: Ctx, roleId: string): OverrideDecisions | null {
  if (!ctx.hasOverrides) return null;
  ctx.decisions ??= new Map();
  let d = ctx.decisions.get(roleId);
  if (d === undefined) {
    d = overrideDecisions(ctx.index, roleId, ctx.path);
    ctx.decisions.set(roleId, d);
  }
  return d;
}

function done(ctx: { index: TenantIndex; trace: TraceStep[] | undefined }, allowed: boolean, reason: DecisionReason, policy?: Policy): Decision {
  const d: Decision = { allowed, reason, decidedByPolicy: policy !== undefined, revision: ctx.index.revision };
  if (policy) d.evaluatedPolicy = policy;
  if (ctx.trace) {
    ctx.trace.push({ leg: 'decision', outcome: allowed ? 'allow' : 'deny', message: `${allowed ? 'allowed' : 'denied'} (${reason})` });
    d.trace = ctx.trace;
  }
  return d;
}

function decide(index: TenantIndex, request: EvaluateRequest, options: EvaluateOptions, trace: TraceStep[] | undefined): Decision {
  checkRequest(request);
  const now = options.now.getTime();
  if (Number.isNaN(now)) throw new Error('invalid clock');
  const gate = options.gate;
  if (gate !== 'off' && gate !== 'links-fallback' && gate !== 'strict') throw new Error('invalid gate mode');
  const action = request.action;
  const actor = request.actor;

  // Scope.
  const path = index.scopePath(request.scopeId);
  if (path.ids.length === 0) throw new ScopeNotFoundError(request.scopeId);
  const ctx: Ctx = { index, trace, path, hasOverrides: false, decisions: undefined };
  trace?.push({
    leg: 'scope',
    outcome: 'info',
    message: `scope ${request.scopeId}; ancestors nearest first: ${path.ids.slice(1).join(' → ') || '(none)'}`,
    detail: { scopePath: [...path.ids] },
  });

  // The resource's slot (and its parent's node, when the walk will need it), then the
  // subject's node. On a large tenant each of these reads misses every cache; they do not
  // depend on one another, so issued back to back (before any work that uses them) their misses
  // overlap instead of adding up. Nothing is decided on the subject before the resource and
  // gate legs, as the order of the decision path requires.
  const target = resolveTarget(index, request.resource, path);
  const upPatterns =
    target !== null && target.kind === 'known' && (target.flags & F_UP) !== 0 && !index.isPlainNum(target.upNum) ? index.resourceNodes.patterns(target.upNum) : 0;
  // An external id is looked up among subjects of the wanted type only (proto3's empty string: none).
  const subjectNode = actor.subjectId ? index.subjectNode(actor.subjectId) : subjectByExternalId(index, actor.externalId!, actor.subjectType);
  if (target === null) {
    trace?.push({ leg: 'resource', outcome: 'fail', message: `resource ${(request.resource as { resourceId: string }).resourceId} not found` });
    return done(ctx, false, 'resource_not_found');
  }
  if (trace) traceTarget(index, trace, target);

  // Reachability gate.
  if (target.kind !== 'none' && gate !== 'off') {
    const reachable = gateReachable(index, target, path, gate);
    trace?.push({ leg: 'gate', outcome: reachable ? 'pass' : 'fail', message: gateMessage(index, target, path, gate, reachable) });
    if (!reachable) return done(ctx, false, 'gate_unreachable');
  } else if (target.kind !== 'none') trace?.push({ leg: 'gate', outcome: 'pass', message: 'gate off' });

  // Subject. A node without a row is a subject only dangling rows name: not in the tenant.
  if (subjectNode === undefined || subjectNode.row === undefined) {
    trace?.push({ leg: 'subject', outcome: 'fail', message: `${subjectLabel(actor)} not found` });
    return done(ctx, false, 'subject_not_found');
  }
  // The node's copy of the row's type (the row itself is read only by conditions); an empty
  // subjectType is how proto3 spells "not given".
  const wantType = actor.subjectType || undefined;
  if (wantType !== undefined && wantType !== subjectNode.type) {
    trace?.push({ leg: 'subject', outcome: 'fail', message: `subject ${subjectNode.row.id} is a ${String(subjectNode.type)}, not a ${String(wantType)}` });
    return done(ctx, false, 'no_match');
  }
  if (trace) {
    const message = `subject ${subjectNode.row.id} (${String(subjectNode.type)})`;
    // Resolved from an external id: the trace tells which subject it named.
    if (actor.subjectId) trace.push({ leg: 'subject', outcome: 'info', message });
    else trace.push({ leg: 'subject', outcome: 'info', message: `${message} from external id ${JSON.stringify(actor.externalId)}`, detail: { subjectId: subjectNode.row.id } });
  }

  // Resource policies: direct ones on the node, and collections of its type (counted on the
  // type slot), so a resource without either costs no further lookup.
  if (target.kind === 'known') {
    if ((target.flags & F_POLICIES) !== 0 || (target.type !== undefined && target.type.collections > 0)) {
      const winner = evaluatePolicies({
        index, action, context: request.context, target, path, now, subject: subjectNode.row, trace, group: options.budget,
      });
      if (winner) return done(ctx, winner.effect === 'allow', winner.effect === 'allow' ? 'policy_allow' : 'policy_deny', winner);
    } else trace?.push({ leg: 'policy', outcome: 'skip', message: 'no policy targets the resource or a matching collection' });
  } else if (target.kind === 'external') {
    trace?.push({ leg: 'policy', outcome: 'skip', message: 'unknown resource: no policies' });
  }

  // Role-based permissions.
  ctx.hasOverrides = pathHasOverrides(index, path);
  let roles: RoleList;
  if (trace) {
    const skipped: SkippedRole[] = [];
    // Explained roles are tried in id order, so the trace names the same role whatever order the index was built in.
    const held = heldRoles(index, subjectNode, path, skipped).sort(byRole);
    const infos = distinctRoleIds(held).map((id) => index.roleInfo(id) as RoleInfo);
    roles = { items: infos, n: infos.length };
    traceHeld(trace, held, skipped);
  } else {
    collectRoles(index, subjectNode, path, ROLES);
    roles = ROLES;
  }
  const direct = directQuery(index, DIRECT, action, target);
  for (let k = 0; k < roles.n; k++) {
    const role = roles.items[k];
    const roleId = role.id;
    const p = coversWith(index, role, direct, decisionsOf(ctx, roleId));
    if (p) {
      const n = trace ? namedCover(index, roleId, direct, decisionsOf(ctx, roleId), p) : p;
      trace?.push({ leg: 'role', outcome: 'allow', message: `role ${roleId} has permission ${n.id} (${n.key}) covering the request`, detail: { roleId, permissionId: n.id } });
      return done(ctx, true, 'role');
    }
  }
  trace?.push({ leg: 'role', outcome: 'fail', message: 'no held role has a permission covering the request' });

  if (target.kind !== 'known') {
    trace?.push({ leg: 'ownership', outcome: 'skip', message: 'no concrete resource' });
    trace?.push({ leg: 'hierarchy', outcome: 'skip', message: 'no concrete resource' });
    return done(ctx, false, 'no_match');
  }

  // Ownership grants on the resource.
  const grantsByResource = subjectNode.grantsByResource;
  if (grantsByResource !== undefined && trace === undefined) {
    const n = grantsByResource.rolesOn(target.num, GRANT_ROLES);
    if (n > 0 && grantCovers(ctx, n, target.num, direct)) return done(ctx, true, 'ownership');
  } else if (grantsByResource !== undefined) {
    const grants = grantsByResource.get(target.num);
    let grantCount = 0;
    for (const g of inIdOrder<OwnershipGrant>(grants)) {
      if (!usableGrant(index, g, target.num, trace)) continue;
      grantCount++;
      const p = roleCovers(index, g.roleId, direct, decisionsOf(ctx, g.roleId));
      if (p) {
        const n = trace ? namedCover(index, g.roleId, direct, decisionsOf(ctx, g.roleId), p) : p;
        trace?.push({ leg: 'ownership', outcome: 'allow', message: `ownership grant ${g.id} (role ${g.roleId}) permission ${n.id} (${n.key}) covers the request`, detail: { grantId: g.id, roleId: g.roleId, permissionId: n.id } });
        return done(ctx, true, 'ownership');
      }
    }
    trace?.push({ leg: 'ownership', outcome: 'fail', message: grantCount ? `${grantCount} ownership grant(s) on the resource, none covers the request` : 'no ownership grant on the resource' });
  } else trace?.push({ leg: 'ownership', outcome: 'fail', message: 'no ownership grant on the resource' });

  // Hierarchy inheritance through `inherit` edges.
  return inherit(ctx, action, target, roles, subjectNode, upPatterns);
}

/**
 * Walks ancestors through `inherit` edges (at most 64, cycle-safe) looking for an inherited
 * grant. Reads node fields only: an ancestor no permission names (`patterns` 0) costs no
 * lookup in the roles' cover indexes, and its id string is read only for a subject holding
 * ownership grants or for the explanation.
 */
function inherit(
  ctx: Ctx,
  action: string,
  target: KnownTarget,
  roles: RoleList,
  subjectNode: SubjectNode,
  /** `patterns` of the first ancestor, read early by the caller (see decide). */
  upPatterns: number,
): Decision {
  const { index, trace } = ctx;
  const q = VIA;
  q.action = action;
  q.type = target.typeKey;
  setTerms(index, q);
  const walked: string[] | undefined = trace ? [] : undefined;
  const grantsByResource = subjectNode.grantsByResource;
  // Without grants (and without an explanation to write), a plain ancestor ends the walk
  // unread: it exists, no permission names it and nothing lies above it.
  const skipPlain = grantsByResource === undefined && trace === undefined;
  let visited = 0;
  let stop = 'no parent';
  // The slot facts end the commonest walks without reading the node: no parent, or (with no
  // explanation to write) a first edge that does not cascade or a plain parent.
  const f = target.flags;
  const settled = (f & F_UP) === 0 || (trace === undefined && ((f & F_UP_INHERIT) === 0 || (skipPlain && index.isPlainNum(target.upNum))));
  const nodes = index.resourceNodes;
  const start = settled ? -1 : target.num;
  let node: ResourceNode = start;
  for (let depth = 0; node >= 0; depth++) {
    if (depth >= MAX_HIERARCHY_DEPTH) {
      if (trace) stop = `depth limit ${MAX_HIERARCHY_DEPTH}`;
      break;
    }
    if (skipPlain && index.upIsPlain(node)) break;
    const parentNode = nodes.up(node);
    if (parentNode < 0) break;
    if (!nodes.upInherit(node)) {
      if (trace) {
        const link = index.parentOf(node) as ParentLink;
        stop = `edge ${link.id} to ${index.resourceNodes.idOf(link.parent)} has cascade none`;
      }
      break;
    }
    if (!nodes.exists(parentNode)) {
      if (trace) stop = `parent ${index.resourceNodes.idOf(parentNode)} not found`;
      break;
    }
    // One node per id, so the number is the id comparison.
    let seen = parentNode === start;
    for (let k = 0; k < visited && !seen; k++) seen = VISITED[k] === parentNode;
    if (seen) {
      if (trace) stop = `cycle at ${index.resourceNodes.idOf(parentNode)}`;
      break;
    }
    VISITED[visited++] = parentNode;
    const named = (depth === 0 ? upPatterns : nodes.patterns(parentNode)) > 0;
    // The ancestor's id string, made only for what reads it: a permission naming it, an explanation.
    let parentId = named || walked !== undefined ? nodes.idOf(parentNode) : undefined;
    walked?.push(parentId as string);
    // A role permission is inherited when its pattern is the ancestor's id.
    if (named) {
      q.p0 = parentId;
      q.p1 = undefined;
      q.p2 = undefined;
      for (let k = 0; k < roles.n; k++) {
        const role = roles.items[k];
        const roleId = role.id;
        const p = coversWith(index, role, q, decisionsOf(ctx, roleId));
        if (p) {
          const n = trace ? namedCover(index, roleId, q, decisionsOf(ctx, roleId), p) : p;
          trace?.push({ leg: 'hierarchy', outcome: 'allow', message: `ancestor ${parentId} via ${(walked as string[]).join(' → ')}: role ${roleId} has permission ${n.id} (${n.key})`, detail: { hierarchyPath: [...(walked as string[])], roleId, permissionId: n.id } });
          return done(ctx, true, 'inherited');
        }
      }
    }
    // An ownership grant on the ancestor binds its role's covering permissions to it.
    // Without an explanation only the grants' roles are read; with one, their rows.
    const n = grantsByResource !== undefined && trace === undefined ? grantsByResource.rolesOn(parentNode, GRANT_ROLES) : 0;
    const grants = grantsByResource !== undefined && trace !== undefined ? grantsByResource.get(parentNode) : undefined;
    if (n > 0 || grants !== undefined) {
      q.p0 = '*';
      q.p1 = parentId ??= nodes.idOf(parentNode);
      q.p2 = nodes.ext(parentNode);
    }
    if (n > 0 && grantCovers(ctx, n, parentNode, q)) return done(ctx, true, 'inherited');
    if (grants !== undefined) {
      for (const g of inIdOrder<OwnershipGrant>(grants)) {
        if (!usableGrant(index, g, parentNode, trace)) continue;
        const p = roleCovers(index, g.roleId, q, decisionsOf(ctx, g.roleId));
        if (p) {
          const n = trace ? namedCover(index, g.roleId, q, decisionsOf(ctx, g.roleId), p) : p;
          trace?.push({ leg: 'hierarchy', outcome: 'allow', message: `ancestor ${parentId} via ${(walked as string[]).join(' → ')}: ownership grant ${g.id} (role ${g.roleId}) permission ${n.id} (${n.key})`, detail: { hierarchyPath: [...(walked as string[])], grantId: g.id, roleId: g.roleId, permissionId: n.id } });
          return done(ctx, true, 'inherited');
        }
      }
    }
    node = parentNode;
  }
  trace?.push({ leg: 'hierarchy', outcome: 'fail', message: `walked ${walked?.length ? walked.join(' → ') : '(no inheriting ancestor)'}; stopped: ${stop}; nothing inherited`, detail: { hierarchyPath: walked } });
  return done(ctx, false, 'no_match');
}

/**
 * Whether one of the first `n` roles of {@link GRANT_ROLES}, those of the subject's grants on
 * `node`, is usable there and covers `q`: the ownership legs without an explanation, where any
 * covering grant allows (which one, and so the grants' order, matters only to the trace), so
 * no grant row is made.
 */
function grantCovers(ctx: Ctx, n: number, node: ResourceNode, q: CoverQuery): boolean {
  for (let k = 0; k < n; k++) {
    const roleId = GRANT_ROLES[k];
    if (grantRoleUsable(ctx.index, roleId, ctx.index.resourceNodes.owner(node)) && roleCovers(ctx.index, roleId, q, decisionsOf(ctx, roleId))) return true;
  }
  return false;
}

/** Whether a grant on `node` counts (see grantRoleUsable); says why not in the trace. */
function usableGrant(index: TenantIndex, g: OwnershipGrant, node: ResourceNode, trace: TraceStep[] | undefined): boolean {
  if (grantRoleUsable(index, g.roleId, index.resourceNodes.owner(node))) return true;
  if (trace) traceUnusableGrant(index, trace, g, node);
  return false;
}

/**
 * The resource a request's resource reference names: by id, or by external id and type key
 * (several matches: the one owned nearest to the scope, else the smallest id). Undefined when
 * unknown. Throws ScopeNotFoundError for an unknown scope.
 */
export function resolveResource(index: TenantIndex, scopeId: string, ref: ResourceRef): Resource | undefined {
  if (!index.scope(scopeId)) throw new ScopeNotFoundError(scopeId);
  const t = resolveTarget(index, ref, index.scopePath(scopeId));
  return t?.kind === 'known' ? rowOf(index, t) : undefined;
}

/**
 * Fills the cover query of the direct role and ownership legs. A resource no permission names
 * (`patterns` 0) is looked up under `*` only: its id and external id cannot match anything.
 */
function directQuery(index: TenantIndex, q: CoverQuery, action: string, target: Target): CoverQuery {
  q.action = action;
  q.p0 = '*';
  q.p1 = undefined;
  q.p2 = undefined;
  switch (target.kind) {
    case 'none':
      q.type = null;
      break;
    case 'external':
      q.type = target.typeKey;
      q.p1 = target.externalResourceId;
      break;
    case 'known':
      q.type = target.typeKey;
      if ((target.flags & F_NAMED) !== 0) {
        q.p1 = index.resourceNodes.ext(target.num);
        q.p2 = target.id;
      }
      break;
  }
  setTerms(index, q);
  return q;
}

function distinctRoleIds(held: HeldRole[]): string[] {
  const out: string[] = [];
  for (const h of held) if (!out.includes(h.roleId)) out.push(h.roleId);
  return out;
}
