/**
 * DecisionService as a Connect service implementation (gRPC, gRPC-Web, Connect and, through the
 * gateway, REST), over any DecisionSource: the control plane's and the sidecar's.
 */
import { create, fromJson, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import {
  DecisionService, EffectivePermissionSchema, EvaluateResponseSchema, GrantSchema, LookupResourceSchema, LookupSubjectSchema, PlanResourcesResponseSchema,
  type EvaluateResponse, type LookupResource, type LookupSubject,
} from '../../gen/authz/v1/decision_service_pb.js';
import { ResourcePolicySchema } from '../../gen/authz/v1/policy_pb.js';
import type { Decision } from '../engine/mod.js';
import { DomainError } from '../common/errors.js';
import { setRevision } from '../transport/revision.js';
import { decideAll, effectiveFor, parseEvaluate, type DecisionSource } from './decide.js';
import { lookupResourcesFor, parseLookupResources, type LookupResourceOut } from './lookup.js';
import { lookupSubjectsFor, parseLookupSubjects, type LookupSubjectOut } from './lookup-subjects.js';
import { parsePlanResources, planResourcesFor } from './plan.js';
import { traceIdOf, type DecisionCall } from './log.js';
import { spanKey, TENANT_ATTRIBUTE } from '../transport/tracing.js';
import { plain } from './response-codec.js';

/**
 * The response message of a decision, for connect-node (gRPC-Web, compressed calls); the lean
 * path writes the same bytes with response-codec.ts.
 */
export function responseOf(d: Decision): EvaluateResponse {
  return create(EvaluateResponseSchema, {
    allowed: d.allowed,
    decidedByPolicy: d.decidedByPolicy,
    evaluatedPolicy: d.evaluatedPolicy
      ? fromJson(ResourcePolicySchema, plain(d.evaluatedPolicy), { ignoreUnknownFields: true })
      : undefined,
    reason: d.reason,
    revision: BigInt(d.revision),
    trace: (d.trace ?? []).map((t) => ({ step: t.leg, result: t.outcome, message: t.message, details: plain(t.detail) })),
  });
}

/**
 * A listed subject as its message, for connect-node; the lean path writes the same bytes with
 * listing-codec.ts.
 */
export function subjectMessage(s: LookupSubjectOut): LookupSubject {
  let grant: MessageInitShape<typeof GrantSchema> | undefined;
  if (s.grant !== undefined) {
    const { trace, ...ids } = s.grant;
    grant = { ...ids, trace: trace.map((t) => ({ step: t.leg, result: t.outcome, message: t.message, details: plain(t.detail) })) };
  }
  return create(LookupSubjectSchema, { id: s.id, externalId: s.externalId, type: s.type, grant });
}

/** A listed resource as its message, for connect-node (the lean path: listing-codec.ts). */
export function resourceMessage(r: LookupResourceOut): LookupResource {
  return create(LookupResourceSchema, { id: r.id, externalResourceId: r.externalResourceId, resourceType: r.resourceType, ownerScopeId: r.ownerScopeId });
}

/** When the caller's deadline (`grpc-timeout`, `connect-timeout-ms`) ends, as epoch ms. */
export function deadlineOf(ctx: Pick<HandlerContext, 'timeoutMs'>): number {
  const ms = ctx.timeoutMs();
  return ms === undefined ? Number.POSITIVE_INFINITY : Date.now() + ms;
}

/**
 * `f()`, except that a wait it ended because `ctx.signal` aborted for the server's shutdown (its
 * reason is `unavailable`) answers that reason instead of `canceled`: the caller is still there
 * and should retry elsewhere. A caller that left stays `canceled`, whatever reason connect-node
 * gave its abort (`aborted` for a Connect GET). The caller's deadline never gets here
 * (waitEnded answers it as `deadline_exceeded`).
 */
async function orServerReason<T>(ctx: HandlerContext, f: () => Promise<T> | T): Promise<T> {
  try {
    return await f();
  } catch (err) {
    const reason: unknown = ctx.signal.reason;
    if (err instanceof DomainError && err.kind === 'canceled' && reason instanceof ConnectError && reason.code === Code.Unavailable) throw reason;
    throw err;
  }
}

/**
 * What the decision log and the span learn of a call (its trace id, its tenant), or undefined
 * when neither is on. `start` is when the handler ran (connect-node has read the body by then).
 */
function callOf(source: DecisionSource<unknown>, ctx: HandlerContext, method: string): DecisionCall | undefined {
  const span = ctx.values.get(spanKey);
  if (span === undefined && source.decisionLog === undefined) return undefined;
  return {
    start: performance.now(),
    method,
    traceId: span !== undefined ? span.spanContext().traceId : traceIdOf(ctx.requestHeader.get('traceparent')),
    onTenant: span === undefined ? undefined : (tenantId) => span.setAttribute(TENANT_ATTRIBUTE, tenantId),
  };
}

/** DecisionService over `source`; `callerOf` tells the source who calls. */
export function decisionService<C>(source: DecisionSource<C>, callerOf: (ctx: HandlerContext) => C): ServiceImpl<typeof DecisionService> {
  return {
    async evaluate(req, ctx) {
      const call = callOf(source, ctx, 'Evaluate');
      const [d] = await orServerReason(ctx, () => decideAll(source, callerOf(ctx), [parseEvaluate(req)], false, deadlineOf(ctx), ctx.signal, call));
      return responseOf(d);
    },
    async evaluateBatch(req, ctx) {
      const call = callOf(source, ctx, 'EvaluateBatch');
      const inputs = req.requests.map((r, i) => parseEvaluate(r, `requests[${i}].`));
      return { results: (await orServerReason(ctx, () => decideAll(source, callerOf(ctx), inputs, true, deadlineOf(ctx), ctx.signal, call))).map(responseOf) };
    },
    async getEffectivePermissions(req, ctx) {
      const onTenant = callOf(source, ctx, 'GetEffectivePermissions')?.onTenant;
      const { permissions, revision } = await orServerReason(ctx, () => effectiveFor(source, callerOf(ctx), req, deadlineOf(ctx), ctx.signal, onTenant));
      setRevision(ctx, revision);
      return { permissions: permissions.map((x) => create(EffectivePermissionSchema, x)), revision: BigInt(revision) };
    },
    async lookupResources(req, ctx) {
      const onTenant = callOf(source, ctx, 'LookupResources')?.onTenant;
      const input = parseLookupResources(req);
      const page = await orServerReason(ctx, () => lookupResourcesFor(source, callerOf(ctx), input, deadlineOf(ctx), ctx.signal, onTenant));
      setRevision(ctx, page.revision);
      return { resources: page.resources.map(resourceMessage), nextCursor: page.nextCursor, revision: BigInt(page.revision) };
    },
    async lookupSubjects(req, ctx) {
      const onTenant = callOf(source, ctx, 'LookupSubjects')?.onTenant;
      const input = parseLookupSubjects(req);
      const page = await orServerReason(ctx, () => lookupSubjectsFor(source, callerOf(ctx), input, deadlineOf(ctx), ctx.signal, onTenant));
      setRevision(ctx, page.revision);
      return { subjects: page.subjects.map(subjectMessage), nextCursor: page.nextCursor, revision: BigInt(page.revision) };
    },
    async planResources(req, ctx) {
      const onTenant = callOf(source, ctx, 'PlanResources')?.onTenant;
      const input = parsePlanResources(req);
      const plan = await orServerReason(ctx, () => planResourcesFor(source, callerOf(ctx), input, deadlineOf(ctx), ctx.signal, onTenant));
      setRevision(ctx, plan.revision);
      return fromJson(PlanResourcesResponseSchema, { ...plan });
    },
  };
}
