/**
 * DecisionService's semantics, shared by the control plane and the sidecar: requests validated
 * and mapped to the engine, answered from the index a DecisionSource hands out. No transport
 * here: the Connect implementation (connect.ts) and the lean HTTP path (lean.ts) both call it,
 * so every surface of both processes answers alike.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import {
  AmbiguousSubjectError, evaluate, effectivePermissions, EvaluationBudget, ResourceNotFoundError, ScopeNotFoundError, subjectByExternalId,
  type Decision, type EffectivePermission, type EvaluateRequest as EngineRequest, type GateMode, type ResourceRef, type TenantIndex,
} from '../engine/mod.js';
import { canceled, deadlineExceeded, invalid, notFound, unavailable, type DomainError } from '../common/errors.js';
import { jsonObject, optionalString, requireString } from '../common/validate.js';
import type { DecisionCall, DecisionLog } from './log.js';

/** How fresh the state behind an answer must be (`consistency` of a request). */
export interface Freshness {
  /** Answer from this tenant revision or later; 0: any. */
  minRevision: number;
  /** Answer from the latest committed revision (the control plane asks its database). */
  fullyConsistent: boolean;
  /** Answer as the tenant was at a past revision or time (`consistency.atRevision`/`atTime`). */
  at?: PastState;
  /**
   * Answer at exactly this revision (a listing's later page, at its cursor's revision): the
   * control plane reads the past when it has moved on; a sidecar only has its current state.
   */
  pinned?: number;
}

/** A past state asked by a request: exactly one of `revision` and `time`. */
export interface PastState {
  revision?: number;
  time?: Date;
  /** The request field that asked (`consistency.atRevision`, `requests[2].consistency.atTime`). */
  field: string;
}

/**
 * How a wait learns that the caller went away: an AbortSignal (connect-node's `ctx.signal`), or
 * a function that makes one, called only when a wait starts (the lean path: most calls never
 * wait, and an AbortController with its signal costs microseconds).
 */
export type CallSignal = AbortSignal | (() => AbortSignal);

/** The AbortSignal of `s`, made now when it is made on demand. */
export function signalOf(s: CallSignal | undefined): AbortSignal | undefined {
  return typeof s === 'function' ? s() : s;
}

/** Resolves after `ms`, or as soon as `signal` aborts (the caller then checks `signal.aborted`). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The error of a wait for a revision that ended without it (`message` says which revision):
 * `canceled` when the caller went away, `deadline_exceeded` when the caller's deadline ended
 * the wait, else `unavailable`. A signal aborted by the deadline itself counts as the deadline.
 */
export function waitEnded(message: string, deadline: number, waitUntil: number, signal: AbortSignal | undefined): DomainError {
  const now = Date.now();
  if (signal?.aborted && now < deadline && now < waitUntil) return canceled(`${message}; the call was canceled`);
  return deadline < waitUntil ? deadlineExceeded(`${message}; the call's deadline passed`) : unavailable(message);
}

/**
 * Where a process finds the state to answer from, and who may ask. `C` is the caller as the
 * process knows it (the control plane: the API key's principal; the sidecar: nothing).
 */
export interface DecisionSource<C> {
  /** `SERVICE_RESOURCE_SCOPE_GATE` of the state this source serves. */
  gate(index: TenantIndex): GateMode;
  /**
   * The index that answers a request at `scopeId` for `caller`, at least as fresh as asked,
   * waiting no later than `deadline` (epoch ms) for it. `prefix` is where the request's fields are
   * in the call (`requests[3].` in a batch, else empty), for the field its errors name. Throws a DomainError: `not_found` for a
   * scope it does not know, `permission_denied` out of the caller's reach, `unavailable` when
   * the freshness cannot be had in time (`deadline_exceeded` when the caller's deadline ends
   * the wait first, `canceled` when `signal` ends it: see waitEnded).
   */
  indexFor(caller: C, scopeId: string, prefix: string, freshness: Freshness, deadline: number, signal?: CallSignal): TenantIndex | Promise<TenantIndex>;
  /** Receives internal errors of the engine (which denies on them). */
  onEngineError?: (err: unknown) => void;
  /** Sees every decision answered (metrics). */
  onDecision?: (d: Decision) => void;
  /** Where every decision is logged, when the process has a decision log (services/decision/log.ts). */
  readonly decisionLog?: DecisionLog;
}

/** An EvaluateRequest as a decoded message or as its proto JSON: the fields both have. */
export interface EvaluateLike {
  actor?: { subjectId?: string; externalId?: string; subjectType?: string } | null;
  scopeId?: string;
  action?: string;
  resource?: { resourceId?: string; externalResourceId?: string; resourceType?: string } | null;
  context?: JsonObject | null;
  explain?: boolean;
  consistency?: ConsistencyLike | null;
}

/** `consistency` as a message (bigint) or proto JSON (string or number). */
export interface ConsistencyLike {
  minRevision?: bigint | string | number;
  fullyConsistent?: boolean;
  atRevision?: bigint | string | number;
  /** A Timestamp message, or its JSON (an RFC 3339 string). */
  atTime?: { seconds: bigint; nanos: number } | string;
}

/** One validated request: the engine's input, the freshness asked, its field prefix. */
export interface EvaluateInput {
  request: EngineRequest;
  freshness: Freshness;
  /** `requests[3].` in a batch, '' otherwise. */
  prefix: string;
}

/** Reads `consistency`; a min revision that is not a non-negative integer is invalid_argument. */
export function freshnessOf(c: ConsistencyLike | null | undefined, field: string): Freshness {
  const minRevision = revisionOf(c?.minRevision, `${field}.minRevision`);
  const fullyConsistent = c?.fullyConsistent === true;
  if (c?.atRevision === undefined && c?.atTime === undefined) return { minRevision, fullyConsistent };
  const atRevision = revisionOf(c.atRevision, `${field}.atRevision`);
  const atTime = timeOf(c.atTime, `${field}.atTime`);
  if (atRevision === 0 && atTime === undefined) return { minRevision, fullyConsistent };
  const at: PastState = atTime !== undefined ? { time: atTime, field: `${field}.atTime` } : { revision: atRevision, field: `${field}.atRevision` };
  if (atRevision !== 0 && atTime !== undefined) throw invalid(at.field, `give either ${field}.atRevision or ${field}.atTime, not both`);
  if (minRevision !== 0 || fullyConsistent) {
    throw invalid(at.field, `a past state cannot be combined with ${minRevision !== 0 ? `${field}.minRevision` : `${field}.fullyConsistent`}`);
  }
  return { minRevision, fullyConsistent, at };
}

/** A revision field (0 when absent). */
function revisionOf(raw: bigint | string | number | undefined, field: string): number {
  const n = Number(raw ?? 0);
  if (!Number.isInteger(n) || n < 0) throw invalid(field, 'must be a non-negative integer');
  if (!Number.isSafeInteger(n)) throw invalid(field, `must be at most ${Number.MAX_SAFE_INTEGER} (no tenant reaches a revision past 2^53 - 1)`);
  return n;
}

/** `consistency.atTime`, not after the clock; undefined when absent. */
function timeOf(raw: ConsistencyLike['atTime'], field: string): Date | undefined {
  if (raw === undefined || raw === null) return undefined;
  let ms: number;
  if (typeof raw === 'string') {
    // RFC 3339 with an offset, as protobuf's JSON form of a Timestamp.
    ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? Date.parse(raw) : Number.NaN;
  } else {
    ms = Number(raw.seconds) * 1000 + Math.floor(raw.nanos / 1e6);
  }
  if (!Number.isFinite(ms)) throw invalid(field, 'must be an RFC 3339 time such as 2025-03-04T10:11:12Z');
  if (ms > Date.now()) throw invalid(field, 'is in the future: only past states can be read');
  return new Date(ms);
}

/** A subject named by exactly one of its id and its external id (each field named as given). */
export function subjectRef(
  id: string | null | undefined, externalId: string | null | undefined, idField: string, externalField: string,
): { subjectId?: string; externalId?: string } {
  const byId = optionalString(id, idField);
  const byExternal = optionalString(externalId, externalField);
  if (byId === undefined && byExternal === undefined) throw invalid(idField, `is required (or ${externalField})`);
  if (byId !== undefined && byExternal !== undefined) throw invalid(externalField, `give either ${idField} or ${externalField}, not both`);
  return byId !== undefined ? { subjectId: byId } : { externalId: byExternal };
}

/** The request error of an external id several subjects share: the type field when a type would pick one. */
export function ambiguous(e: AmbiguousSubjectError, typeField: string, externalField: string): DomainError {
  return invalid(e.typeWouldPick ? typeField : externalField, e.message);
}

/** A request's resource (EvaluateRequest's and LookupSubjects'), validated; undefined when absent. */
export function resourceRefOf(r: EvaluateLike['resource'], field: string): ResourceRef | undefined {
  if (!r || !(r.resourceId || r.externalResourceId || r.resourceType)) return undefined;
  if (r.resourceId) {
    if (r.externalResourceId) throw invalid(field, 'give either resourceId or externalResourceId with resourceType, not both');
    return { resourceId: requireString(r.resourceId, `${field}.resourceId`) };
  }
  return {
    externalResourceId: requireString(r.externalResourceId, `${field}.externalResourceId`),
    resourceType: requireString(r.resourceType, `${field}.resourceType`),
  };
}

/** Validates one request and maps it to the engine's input (`p` prefixes field names). */
export function parseEvaluate(req: EvaluateLike, p = ''): EvaluateInput {
  const { subjectId, externalId } = subjectRef(req.actor?.subjectId, req.actor?.externalId, `${p}actor.subjectId`, `${p}actor.externalId`);
  const scopeId = requireString(req.scopeId, `${p}scopeId`);
  const action = requireString(req.action, `${p}action`);
  const resource = resourceRefOf(req.resource, `${p}resource`);
  const request: EngineRequest = {
    actor: { subjectId, externalId, subjectType: optionalString(req.actor?.subjectType, `${p}actor.subjectType`) },
    scopeId,
    action,
    resource,
    context: jsonObject(req.context ?? undefined, `${p}context`),
    explain: req.explain === true,
  };
  return { request, freshness: freshnessOf(req.consistency, `${p}consistency`), prefix: p };
}

/**
 * Decides validated requests in order. A batch shares one evaluation budget (a single request
 * has its decision's own). Every request's index is resolved (reach and freshness) before any
 * is evaluated, so a refused request refuses the whole batch. Synchronous when the source
 * answers synchronously (the common case: no wait for a revision), so the decision path takes
 * no microtask turns.
 */
export function decideAll<C>(
  source: DecisionSource<C>, caller: C, inputs: readonly EvaluateInput[], batch: boolean, deadline: number, signal?: CallSignal, call?: DecisionCall,
): Decision[] | Promise<Decision[]> {
  const indexes: TenantIndex[] = [];
  for (let i = 0; i < inputs.length; i++) {
    const { request, freshness, prefix } = inputs[i];
    const index = source.indexFor(caller, request.scopeId, prefix, freshness, deadline, signal);
    if (index instanceof Promise) return resolveRest(source, caller, inputs, batch, deadline, signal, indexes, i, index, call);
    indexes.push(index);
  }
  return evaluateAll(source, inputs, indexes, batch, call);
}

/**
 * decideAll once an index had to be waited for: the rest are resolved in turn. A batch asks the
 * database once per tenant for `fullyConsistent`: a later request of the batch on a tenant already
 * read that way takes that index's revision as its `minRevision` instead. The read came after the
 * batch arrived, so it holds every write committed before any request of it, which is all that
 * `fullyConsistent` promises; 1,000 such requests used to make 1,000 queries, one after another.
 */
async function resolveRest<C>(
  source: DecisionSource<C>, caller: C, inputs: readonly EvaluateInput[], batch: boolean, deadline: number, signal: CallSignal | undefined,
  indexes: TenantIndex[], from: number, pending: Promise<TenantIndex>, call: DecisionCall | undefined,
): Promise<Decision[]> {
  const readConsistently: TenantIndex[] = [];
  const resolved = (i: number, index: TenantIndex, fresh: boolean) => {
    indexes.push(index);
    if (fresh && inputs[i].freshness.fullyConsistent) readConsistently.push(index);
  };
  resolved(from, await pending, true);
  for (let i = from + 1; i < inputs.length; i++) {
    const { request, prefix } = inputs[i];
    let { freshness } = inputs[i];
    const read = freshness.fullyConsistent ? readConsistently.find((x) => x.scope(request.scopeId) !== undefined) : undefined;
    if (read !== undefined) freshness = { minRevision: Math.max(freshness.minRevision, read.revision), fullyConsistent: false };
    resolved(i, await source.indexFor(caller, request.scopeId, prefix, freshness, deadline, signal), read === undefined);
  }
  return evaluateAll(source, inputs, indexes, batch, call);
}

function evaluateAll<C>(source: DecisionSource<C>, inputs: readonly EvaluateInput[], indexes: readonly TenantIndex[], batch: boolean, call: DecisionCall | undefined): Decision[] {
  // An external id that names several subjects refuses the call before anything is decided
  // (and logged), as a refused index does. The subjects found are what the log records.
  let resolved: (string | undefined)[] | undefined;
  for (let i = 0; i < inputs.length; i++) {
    const { request: { actor }, prefix } = inputs[i];
    if (actor.externalId === undefined) continue;
    try {
      (resolved ??= [])[i] = subjectByExternalId(indexes[i], actor.externalId, actor.subjectType)?.row?.id;
    } catch (e) {
      if (e instanceof AmbiguousSubjectError) throw ambiguous(e, `${prefix}actor.subjectType`, `${prefix}actor.externalId`);
      throw e;
    }
  }
  const now = new Date();
  const budget = batch ? new EvaluationBudget() : undefined;
  const log = source.decisionLog;
  return inputs.map(({ request, prefix }, i) => {
    const index = indexes[i];
    try {
      const d = evaluate(index, request, { now, gate: source.gate(index), onError: source.onEngineError, budget });
      source.onDecision?.(d);
      // Only a logged or traced call pays for the tenant lookup and the line.
      if (call !== undefined) {
        const tenantId = index.scope(request.scopeId)?.tenantId;
        if (tenantId !== undefined) call.onTenant?.(tenantId);
        log?.record(request, d, tenantId, call, resolved?.[i]);
      }
      return d;
    } catch (e) {
      // The source checked the scope; the index can lack it only if it was deleted since.
      if (e instanceof ScopeNotFoundError) throw notFound('scope', request.scopeId, `${prefix}scopeId`);
      throw e;
    }
  });
}

/** A GetEffectivePermissions request as a message or its proto JSON. */
export interface EffectiveLike {
  subjectId?: string;
  subjectExternalId?: string;
  subjectType?: string;
  scopeId?: string;
  resourceId?: string;
  consistency?: ConsistencyLike | null;
}

/** The permissions a subject holds at a scope (and on a resource), with the revision used. */
export async function effectiveFor<C>(
  source: DecisionSource<C>, caller: C, req: EffectiveLike, deadline: number, signal?: CallSignal, onTenant?: (tenantId: string) => void,
): Promise<{ permissions: EffectivePermission[]; revision: number }> {
  const { subjectId, externalId } = subjectRef(req.subjectId, req.subjectExternalId, 'subjectId', 'subjectExternalId');
  const subjectType = optionalString(req.subjectType, 'subjectType');
  const scopeId = requireString(req.scopeId, 'scopeId');
  const resourceId = optionalString(req.resourceId, 'resourceId');
  const index = await source.indexFor(caller, scopeId, '', freshnessOf(req.consistency, 'consistency'), deadline, signal);
  if (onTenant !== undefined) {
    const tenantId = index.scope(scopeId)?.tenantId;
    if (tenantId !== undefined) onTenant(tenantId);
  }
  try {
    return { permissions: effectivePermissions(index, { subjectId, subjectExternalId: externalId, subjectType, scopeId, resourceId }), revision: index.revision };
  } catch (e) {
    if (e instanceof AmbiguousSubjectError) throw ambiguous(e, 'subjectType', 'subjectExternalId');
    if (e instanceof ScopeNotFoundError) throw notFound('scope', scopeId, 'scopeId');
    if (e instanceof ResourceNotFoundError) throw notFound('resource', resourceId ?? '', 'resourceId');
    throw e;
  }
}
