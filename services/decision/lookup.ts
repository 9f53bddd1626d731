/**
 * DecisionService.LookupResources for both processes: the request validated and mapped to the
 * engine's lookupResources, answered from the index a DecisionSource hands out, a page at a time.
 *
 * The cursor and its pinned revision: cursor.ts (shared with LookupSubjects).
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { AmbiguousSubjectError, lookupResources, ScopeNotFoundError, type LookupResourcesQuery } from '../engine/mod.js';
import { notFound } from '../common/errors.js';
import { jsonObject, optionalString, requireString } from '../common/validate.js';
import { ambiguous, freshnessOf, subjectRef, type CallSignal, type ConsistencyLike, type DecisionSource, type Freshness } from './decide.js';
import { decodeCursor, encodeCursor, listingDigest, listingIndex, pageSizeOf, type Cursor } from './cursor.js';

/** A LookupResources request as a decoded message or as its proto JSON. */
export interface LookupResourcesLike {
  actor?: { subjectId?: string; externalId?: string; subjectType?: string } | null;
  scopeId?: string;
  action?: string;
  resourceType?: string;
  context?: JsonObject | null;
  pageSize?: number;
  cursor?: string;
  consistency?: ConsistencyLike | null;
}

/** One resource of a page, as the response carries it (the engine's ListedResource is one). */
export interface LookupResourceOut {
  id: string;
  externalResourceId: string;
  /** The type's key. */
  resourceType: string;
  ownerScopeId: string;
}

export interface LookupResourcesOut {
  resources: LookupResourceOut[];
  /** Empty on the last page. */
  nextCursor: string;
  revision: number;
}

function digest(query: Omit<LookupResourcesQuery, 'pageSize' | 'after'>): string {
  const { actor, scopeId, action, resourceType, context } = query;
  return listingDigest('resources', [actor.subjectId ?? null, actor.externalId ?? null, actor.subjectType ?? null, scopeId, action, resourceType ?? null, context ?? null]);
}

/** A validated request: the engine's query (without `after`), the cursor, the freshness asked. */
export interface LookupInput {
  query: Omit<LookupResourcesQuery, 'after'>;
  cursor: Cursor | undefined;
  freshness: Freshness;
  digest: string;
}

export function parseLookupResources(req: LookupResourcesLike): LookupInput {
  const { subjectId, externalId } = subjectRef(req.actor?.subjectId, req.actor?.externalId, 'actor.subjectId', 'actor.externalId');
  const query: Omit<LookupResourcesQuery, 'after'> = {
    actor: { subjectId, externalId, subjectType: optionalString(req.actor?.subjectType, 'actor.subjectType') },
    scopeId: requireString(req.scopeId, 'scopeId'),
    action: requireString(req.action, 'action'),
    resourceType: optionalString(req.resourceType, 'resourceType'),
    context: jsonObject(req.context ?? undefined, 'context'),
    pageSize: pageSizeOf(req.pageSize),
  };
  const freshness = freshnessOf(req.consistency, 'consistency');
  const d = digest(query);
  const cursor = req.cursor ? decodeCursor(req.cursor, 'resources', d, 'actor, scopeId, action, resourceType and context') : undefined;
  return { query, cursor, freshness, digest: d };
}

/** One page of a LookupResources listing from `source`'s index. */
export async function lookupResourcesFor<C>(
  source: DecisionSource<C>, caller: C, input: LookupInput, deadline: number, signal?: CallSignal, onTenant?: (tenantId: string) => void,
): Promise<LookupResourcesOut> {
  const { query, cursor } = input;
  const index = await listingIndex(source, caller, query.scopeId, input.freshness, cursor, deadline, signal, onTenant);
  try {
    const page = lookupResources(index, { ...query, after: cursor?.a }, { now: new Date(), gate: source.gate(index), onError: source.onEngineError });
    return {
      resources: page.resources,
      nextCursor: page.last === undefined ? '' : encodeCursor({ r: page.revision, a: page.last, q: input.digest }),
      revision: page.revision,
    };
  } catch (e) {
    if (e instanceof AmbiguousSubjectError) throw ambiguous(e, 'actor.subjectType', 'actor.externalId');
    if (e instanceof ScopeNotFoundError) throw notFound('scope', query.scopeId, 'scopeId');
    throw e;
  }
}
