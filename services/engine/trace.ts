/**
 * The explanation of a decision (`explain: true`): the steps' text and details. Built only when
 * asked for; nothing here decides anything. A trace names rows in id order, so it reads the same
 * in every process whatever order its index was built in.
 */
import { bagRows, type ResourceNode, type ScopePath, type TenantIndex } from './tenant-index/mod.js';
import type { MatchOutcome } from './match.js';
import type { OwnershipGrant, Policy, ResourceScopeLink } from './model.js';
import { cmp } from './order.js';
import type { HeldRole, SkippedRole } from './roles.js';
import { rowOf, type GateMode, type Target } from './target.js';

export type TraceLeg =
  | 'scope'
  | 'resource'
  | 'gate'
  | 'subject'
  | 'policy'
  | 'role'
  | 'ownership'
  | 'hierarchy'
  | 'decision'
  | 'error';

/** One step of an explanation, in the order the engine took it. */
export interface TraceStep {
  leg: TraceLeg;
  outcome: 'info' | 'pass' | 'fail' | 'skip' | 'allow' | 'deny';
  message: string;
  detail?: Record<string, unknown>;
}

export function traceTarget(index: TenantIndex, trace: TraceStep[], target: Target): void {
  if (target.kind === 'none') trace.push({ leg: 'resource', outcome: 'info', message: 'no resource: only permissions with pattern * apply' });
  else if (target.kind === 'known') {
    const r = rowOf(index, target);
    trace.push({
      leg: 'resource',
      outcome: 'info',
      message: `resource ${r.id} (type ${target.typeKey ?? '(unknown type)'}, external id ${r.externalResourceId}, owner scope ${r.ownerScopeId})`,
    });
  } else {
    trace.push({
      leg: 'resource',
      outcome: 'info',
      message: `unknown external id ${target.externalResourceId} of type ${target.typeKey}: evaluated by permission pattern alone (no policies, no hierarchy)`,
    });
  }
}

/** The explanation of a gate outcome. */
export function gateMessage(index: TenantIndex, target: Target, path: ScopePath, gate: GateMode, reachable: boolean): string {
  if (target.kind === 'external') {
    return gate === 'strict'
      ? 'strict gate: an unknown resource is never reachable'
      : 'links-fallback gate: an unknown resource has no links, so it is reachable';
  }
  if (target.kind !== 'known') return 'no resource';
  const r = rowOf(index, target);
  const links = index.resourceNodes.links(target.num);
  if (gate === 'links-fallback' && links === undefined) return 'links-fallback gate: resource has no scope links, reachable from every scope';
  if (path.set.has(r.ownerScopeId)) return `${gate} gate: owner scope ${r.ownerScopeId} is the evaluation scope or an ancestor`;
  for (const l of [...bagRows<ResourceScopeLink>(links)].sort((a, b) => cmp(a.id, b.id))) {
    if (path.set.has(l.scopeId)) return `${gate} gate: linked scope ${l.scopeId} (link ${l.id}) is the evaluation scope or an ancestor`;
  }
  if (reachable) return `${gate} gate: reachable`;
  return `${gate} gate: neither owner scope ${r.ownerScopeId} nor any linked scope is the evaluation scope or an ancestor`;
}

/** Orders explained roles by id, source and scope: a trace must not depend on the order the index was built in. */
export const byRole = (a: HeldRole | SkippedRole, b: HeldRole | SkippedRole) =>
  cmp(a.roleId, b.roleId) || cmp(a.viaId, b.viaId) || cmp(a.sourceScopeId, b.sourceScopeId) || cmp(a.source, b.source);

/** `held` comes sorted (byRole). */
export function traceHeld(trace: TraceStep[], held: HeldRole[], unorderedSkipped: SkippedRole[]): void {
  const skipped = [...unorderedSkipped].sort(byRole);
  for (const s of skipped) {
    const why =
      s.why === 'blocked' ? `blocked by an override at ${s.blockedAt}` : s.why === 'role_missing' ? 'role does not exist' : 'role is not defined at or above the source scope';
    trace.push({ leg: 'role', outcome: 'skip', message: `role ${s.roleId} from ${s.source === 'role' ? 'membership' : 'tag binding'} ${s.viaId} at ${s.sourceScopeId}: ${why}` });
  }
  trace.push({
    leg: 'role',
    outcome: 'info',
    message: held.length
      ? `roles held: ${held.map((h) => `${h.roleId} (${h.source === 'role' ? 'membership' : 'tag binding'} ${h.viaId} at ${h.sourceScopeId})`).join(', ')}`
      : 'no roles held at this scope',
    detail: { roles: held.map((h) => ({ ...h })) },
  });
}

/** Why a grant on `node` gives nothing: its role is missing, or defined below the resource's owner scope. */
export function traceUnusableGrant(index: TenantIndex, trace: TraceStep[], g: OwnershipGrant, node: ResourceNode): void {
  const role = index.role(g.roleId);
  trace.push({
    leg: 'ownership',
    outcome: 'skip',
    message: role
      ? `ownership grant ${g.id}: role ${g.roleId} is defined at ${role.scopeId}, not at the resource's owner scope ${String(index.resourceNodes.owner(node))} or above`
      : `ownership grant ${g.id}: role ${g.roleId} does not exist`,
  });
}

/** A collection's match against the resource; `error` is why its definition errored. */
export function collectionStep(collectionId: string, scopeId: string, outcome: MatchOutcome, error: string | undefined): TraceStep {
  const message =
    outcome === 'match'
      ? `collection ${collectionId} at ${scopeId} matches the resource`
      : outcome === 'no_match'
        ? `collection ${collectionId} at ${scopeId} does not match the resource`
        : `collection ${collectionId} at ${scopeId}: its match definition errored against the resource${error ? ` (${clip(error)})` : ''}, so its deny policies apply to fail closed (its allow policies do not)`;
  return {
    leg: 'policy',
    outcome: outcome === 'match' ? 'pass' : 'fail',
    message,
    detail: { collectionId, match: outcome, ...(outcome === 'error' && error ? { matchError: clip(error) } : {}) },
  };
}

/**
 * The collections of the resource's type along the scope path that the collection index left
 * out: each requires a field value or tag (one of several) that the resource does not have.
 */
export function ruledOutStep(count: number): TraceStep {
  return {
    leg: 'policy',
    outcome: 'info',
    message: `${count} other collection${count === 1 ? '' : 's'} of the resource's type at the scope or its ancestors not tried: the collection index rules ${count === 1 ? 'it' : 'them'} out, as ${count === 1 ? 'its' : 'their'} match definition${count === 1 ? ' requires' : 's require'} a field value or tag the resource does not have (so ${count === 1 ? 'it' : 'they'} can neither match nor error)`,
    detail: { collectionsRuledOut: count },
  };
}

/** What the policy leg found for one policy (undefined conditions: absent, or not run). */
export interface PolicyCheck {
  /** `direct`, or the collection that brought the policy in. */
  via: string;
  priority: number;
  action: boolean;
  window: boolean;
  /** An unparsable `validFrom`/`validUntil`. */
  badWindow: boolean;
  subjectCondition: boolean | undefined;
  contextCondition: boolean | undefined;
  hasSubjectCondition: boolean;
  hasContextCondition: boolean;
  subjectError: string | undefined;
  contextError: string | undefined;
  /** Context variables a failing `contextCondition` reads and the context lacks. */
  missing: string[] | undefined;
  matched: boolean;
}

export function policyStep(p: Policy, c: PolicyCheck): TraceStep {
  const failClosed = p.effect === 'deny';
  const parts = [
    `action ${c.action ? 'matches' : 'does not match'}`,
    `window ${c.window ? 'active' : 'inactive'}${c.badWindow ? ` (unparsable validFrom/validUntil counted as ${failClosed ? 'holding on a deny' : 'not holding on an allow'}, to fail closed)` : ''}`,
    c.hasSubjectCondition ? conditionText('subjectCondition', c.subjectCondition, c.subjectError, failClosed) : 'no subjectCondition',
    c.hasContextCondition
      ? `${conditionText('contextCondition', c.contextCondition, c.contextError, failClosed)}${c.missing && c.missing.length ? ` (missing: ${c.missing.join(', ')})` : ''}`
      : 'no contextCondition',
  ];
  return {
    leg: 'policy',
    outcome: c.matched ? 'pass' : 'fail',
    message: `policy ${p.id} (${c.via}, priority ${c.priority}, ${p.effect}): ${parts.join(', ')}`,
    detail: {
      policyId: p.id,
      via: c.via,
      priority: c.priority,
      effect: p.effect,
      action: c.action,
      window: c.window,
      ...(c.hasSubjectCondition ? { subjectCondition: c.subjectCondition } : {}),
      ...(c.hasContextCondition ? { contextCondition: c.contextCondition } : {}),
      ...(c.subjectError !== undefined ? { subjectConditionError: clip(c.subjectError) } : {}),
      ...(c.contextError !== undefined ? { contextConditionError: clip(c.contextError) } : {}),
      ...(c.missing && c.missing.length ? { missingContext: c.missing } : {}),
      matched: c.matched,
    },
  };
}

/** Trace text of one condition; an errored one says which way it failed closed. */
function conditionText(name: string, ok: boolean | undefined, error: string | undefined, deny: boolean): string {
  if (error === undefined) return `${name} ${ok ? 'passed' : 'failed'}`;
  return deny
    ? `${name} errored (${clip(error)}): counted as matching, so this deny policy is applied to fail closed`
    : `${name} errored (${clip(error)}): counted as not matching, so this allow policy is not applied (fail closed)`;
}

/** Error text of a tenant's own rule, bounded for the trace (the end says what went wrong). */
function clip(text: string): string {
  return text.length > 160 ? `${text.slice(0, 50)}…${text.slice(-100)}` : text;
}
