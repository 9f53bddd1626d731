import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { create, fromJson, type JsonObject } from '@bufbuild/protobuf';
import { DecisionService, type EvaluateRequest, type EvaluateResponse } from '../../../gen/authz/v1/decision_service_pb.js';
import { EvaluateResponseSchema, EffectivePermissionSchema } from '../../../gen/authz/v1/decision_service_pb.js';
import { ResourcePolicySchema } from '../../../gen/authz/v1/policy_pb.js';
import {
  evaluate, effectivePermissions, ResourceNotFoundError, ScopeNotFoundError,
  type EvaluateRequest as EngineRequest, type GateMode, type ResourceRef,
} from '../../engine/mod.js';
import { invalid, limitExceeded, notFound } from '../../common/errors.js';
import { assertTenantReach, principalOf } from '../auth/principal.js';
import type { TenantIndexes } from '../decision/indexes.js';
import { MAX_BATCH, jsonObject, optionalString, requireString } from '../validate.js';

export interface DecisionDeps {
  indexes: TenantIndexes;
  gate: GateMode;
  /** Receives internal errors of the engine (which denies on them). */
  onEngineError?: (err: unknown) => void;
}

/** Validates one request and maps it to the engine's input. */
function toEngineRequest(req: EvaluateRequest, p: string): EngineRequest {
  const subjectId = requireString(req.actor?.subjectId, `${p}actor.subjectId`);
  const scopeId = requireString(req.scopeId, `${p}scopeId`);
  const action = requireString(req.action, `${p}action`);
  let resource: ResourceRef | undefined;
  const r = req.resource;
  if (r && (r.resourceId || r.externalResourceId || r.resourceType)) {
    if (r.resourceId) {
      if (r.externalResourceId) throw invalid(`${p}resource`, 'give either resourceId or externalResourceId with resourceType, not both');
      resource = { resourceId: requireString(r.resourceId, `${p}resource.resourceId`) };
    } else {
      resource = {
        externalResourceId: requireString(r.externalResourceId, `${p}resource.externalResourceId`),
        resourceType: requireString(r.resourceType, `${p}resource.resourceType`),
      };
    }
  }
  return {
    actor: { subjectId, subjectType: optionalString(req.actor?.subjectType, `${p}actor.subjectType`) },
    scopeId,
    action,
    resource,
    context: jsonObject(req.context as JsonObject | undefined, `${p}context`),
    explain: req.explain,
  } as EngineRequest;
}

/** JSON-safe copy (Struct fields take only JSON values). */
const plain = (v: unknown): JsonObject => JSON.parse(JSON.stringify(v ?? {}));

function toResponse(d: ReturnType<typeof evaluate>): EvaluateResponse {
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

/** The DecisionService of the control plane: the engine over the change-log followers. */
export function decisionService(deps: DecisionDeps): ServiceImpl<typeof DecisionService> {
  async function decideAll(ctx: HandlerContext, reqs: EvaluateRequest[], batch: boolean): Promise<EvaluateResponse[]> {
    const principal = principalOf(ctx);
    const now = new Date();
    const prepared = [];
    for (let i = 0; i < reqs.length; i++) {
      const p = batch ? `requests[${i}].` : '';
      const input = toEngineRequest(reqs[i], p);
      const tenantId = await deps.indexes.tenantOfScope(input.scopeId, `${p}scopeId`);
      assertTenantReach(principal, tenantId);
      prepared.push({ input, tenantId, minRevision: Number(reqs[i].consistency?.minRevision ?? 0n), p });
    }
    const out: EvaluateResponse[] = [];
    for (const { input, tenantId, minRevision, p } of prepared) {
      const index = await deps.indexes.get(tenantId, minRevision);
      try {
        out.push(toResponse(evaluate(index, input, { now, gate: deps.gate, onError: deps.onEngineError })));
      } catch (e) {
        // The scope was seen in the store; the index may not have it only if it was deleted since.
        if (e instanceof ScopeNotFoundError) throw notFound('scope', input.scopeId, `${p}scopeId`);
        throw e;
      }
    }
    return out;
  }

  return {
    async evaluate(req, ctx) {
      return (await decideAll(ctx, [req], false))[0];
    },
    async evaluateBatch(req, ctx) {
      if (req.requests.length > MAX_BATCH) throw limitExceeded('requests', `holds ${req.requests.length} requests; at most ${MAX_BATCH} are allowed`);
      return { results: await decideAll(ctx, req.requests, true) };
    },
    async getEffectivePermissions(req, ctx) {
      const subjectId = requireString(req.subjectId, 'subjectId');
      const scopeId = requireString(req.scopeId, 'scopeId');
      const resourceId = optionalString(req.resourceId, 'resourceId');
      const tenantId = await deps.indexes.tenantOfScope(scopeId);
      assertTenantReach(principalOf(ctx), tenantId);
      const index = await deps.indexes.get(tenantId);
      try {
        const perms = effectivePermissions(index, { subjectId, scopeId, resourceId });
        return { permissions: perms.map((x) => create(EffectivePermissionSchema, x)) };
      } catch (e) {
        if (e instanceof ScopeNotFoundError) throw notFound('scope', scopeId, 'scopeId');
        if (e instanceof ResourceNotFoundError) throw notFound('resource', resourceId ?? '', 'resourceId');
        throw e;
      }
    },
  };
}
