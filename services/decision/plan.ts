/**
 * DecisionService.PlanResources for both processes: the request validated, the engine's plan
 * compiled from the index a DecisionSource hands out (the same index and clock evaluate uses),
 * and rendered as proto JSON and as SQL over the request's column mapping.
 *
 * `resourceType` is required; a key no resource has is planned like any other (the role legs'
 * patterns still apply to rows the application may add later; id sets are empty). An unknown
 * subject, or one not of `actor.subjectType`, is `always_denied`; an unknown scope `not_found`.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { AmbiguousSubjectError, ScopeNotFoundError } from '../engine/mod.js';
import { planResources, type PlanNode, type PlanResourcesQuery } from '../engine/plan/mod.js';
import { InvalidColumnError, planColumns, planToSql, type PlanColumns } from '../engine/plan/sql.js';
import { invalid, notFound } from '../common/errors.js';
import { jsonObject, optionalString, requireString } from '../common/validate.js';
import { ambiguous, freshnessOf, subjectRef, type CallSignal, type ConsistencyLike, type DecisionSource, type Freshness } from './decide.js';

/** A PlanResources request as a decoded message or as its proto JSON. */
export interface PlanResourcesLike {
  actor?: { subjectId?: string; externalId?: string; subjectType?: string } | null;
  scopeId?: string;
  action?: string;
  resourceType?: string;
  context?: JsonObject | null;
  consistency?: ConsistencyLike | null;
  columns?: Partial<Record<keyof PlanColumns, string>> | null;
}

export interface PlanInput {
  query: PlanResourcesQuery;
  columns: PlanColumns;
  freshness: Freshness;
}

/** The answer as proto JSON (PlanResourcesResponse). */
export interface PlanResourcesOut {
  kind: 'PLAN_KIND_ALWAYS_ALLOWED' | 'PLAN_KIND_ALWAYS_DENIED' | 'PLAN_KIND_CONDITIONAL';
  condition?: JsonObject;
  hasResidual: boolean;
  sql: string;
  sqlParams: JsonValue[];
  revision: number;
}

export function parsePlanResources(req: PlanResourcesLike): PlanInput {
  const { subjectId, externalId } = subjectRef(req.actor?.subjectId, req.actor?.externalId, 'actor.subjectId', 'actor.externalId');
  const query: PlanResourcesQuery = {
    actor: { subjectId, externalId, subjectType: optionalString(req.actor?.subjectType, 'actor.subjectType') },
    scopeId: requireString(req.scopeId, 'scopeId'),
    action: requireString(req.action, 'action'),
    resourceType: requireString(req.resourceType, 'resourceType'),
    context: jsonObject(req.context ?? undefined, 'context'),
  };
  let columns: PlanColumns;
  try {
    columns = planColumns(req.columns ?? {});
  } catch (e) {
    if (e instanceof InvalidColumnError) throw invalid(`columns.${e.field}`, e.message);
    throw e;
  }
  return { query, columns, freshness: freshnessOf(req.consistency, 'consistency') };
}

/** A tree node as PlanCondition's proto JSON. */
export function conditionJson(n: PlanNode): JsonObject {
  switch (n.kind) {
    case 'const':
      return n.value ? { all: {} } : { any: {} };
    case 'all':
      return { all: { conditions: n.of.map(conditionJson) } };
    case 'any':
      return { any: { conditions: n.of.map(conditionJson) } };
    case 'not':
      return { not: conditionJson(n.of) };
    case 'compare':
      return { compare: { field: n.field, operator: n.operator, value: n.value as JsonValue } };
    case 'residual': {
      const r: JsonObject = { reason: n.reason };
      if (n.policyId) r.policyId = n.policyId;
      if (n.collectionId) r.collectionId = n.collectionId;
      return { residual: r };
    }
  }
}

const KINDS = { always_allowed: 'PLAN_KIND_ALWAYS_ALLOWED', always_denied: 'PLAN_KIND_ALWAYS_DENIED', conditional: 'PLAN_KIND_CONDITIONAL' } as const;

/** The plan from `source`'s index. */
export async function planResourcesFor<C>(
  source: DecisionSource<C>, caller: C, input: PlanInput, deadline: number, signal?: CallSignal, onTenant?: (tenantId: string) => void,
): Promise<PlanResourcesOut> {
  const { query } = input;
  const index = await source.indexFor(caller, query.scopeId, '', input.freshness, deadline, signal);
  // From here on nothing awaits: the plan is of one revision.
  if (onTenant !== undefined) {
    const tenantId = index.scope(query.scopeId)?.tenantId;
    if (tenantId !== undefined) onTenant(tenantId);
  }
  try {
    const plan = planResources(index, query, { now: new Date(), gate: source.gate(index) });
    const { sql, params } = planToSql(plan.condition, query.resourceType, input.columns);
    const out: PlanResourcesOut = { kind: KINDS[plan.kind], hasResidual: plan.hasResidual, sql, sqlParams: params, revision: plan.revision };
    if (plan.kind === 'conditional') out.condition = conditionJson(plan.condition);
    return out;
  } catch (e) {
    if (e instanceof AmbiguousSubjectError) throw ambiguous(e, 'actor.subjectType', 'actor.externalId');
    if (e instanceof ScopeNotFoundError) throw notFound('scope', query.scopeId, 'scopeId');
    throw e;
  }
}
