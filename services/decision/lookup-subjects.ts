/**
 * DecisionService.LookupSubjects for both processes: the request validated and mapped to the
 * engine's lookupSubjects, answered from the index a DecisionSource hands out, a page at a time,
 * with the cursor and pinned revision of every listing (cursor.ts).
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { lookupSubjects, ScopeNotFoundError, type LookupSubjectsQuery, type SubjectGrant } from '../engine/mod.js';
import { notFound } from '../common/errors.js';
import { jsonObject, optionalString, requireString } from '../common/validate.js';
import { freshnessOf, resourceRefOf, type CallSignal, type ConsistencyLike, type DecisionSource, type Freshness } from './decide.js';
import { decodeCursor, encodeCursor, listingDigest, listingIndex, pageSizeOf, type Cursor } from './cursor.js';

/** A LookupSubjects request as a decoded message or as its proto JSON. */
export interface LookupSubjectsLike {
  scopeId?: string;
  action?: string;
  resource?: { resourceId?: string; externalResourceId?: string; resourceType?: string } | null;
  context?: JsonObject | null;
  subjectType?: string;
  pageSize?: number;
  cursor?: string;
  consistency?: ConsistencyLike | null;
  explain?: boolean;
}

/**
 * A subject of a page as the response carries it; the grant is the engine's, whose fields are the
 * message's (its trace steps are written as Evaluate's, see connect.ts and listing-codec.ts).
 */
export interface LookupSubjectOut {
  id: string;
  externalId: string;
  type: string;
  grant?: SubjectGrant;
}

export interface LookupSubjectsOut {
  subjects: LookupSubjectOut[];
  /** Empty on the last page. */
  nextCursor: string;
  revision: number;
}

export interface LookupSubjectsInput {
  query: Omit<LookupSubjectsQuery, 'after'>;
  cursor: Cursor | undefined;
  freshness: Freshness;
  digest: string;
}

/** `explain` is left out: a listing may be explained on some pages only. */
function digest(q: Omit<LookupSubjectsQuery, 'after'>): string {
  const r = q.resource as { resourceId?: string; externalResourceId?: string; resourceType?: string } | undefined;
  return listingDigest('subjects', [q.scopeId, q.action, r?.resourceId ?? null, r?.externalResourceId ?? null, r?.resourceType ?? null, q.subjectType ?? null, q.context ?? null]);
}

export function parseLookupSubjects(req: LookupSubjectsLike): LookupSubjectsInput {
  const query: Omit<LookupSubjectsQuery, 'after'> = {
    scopeId: requireString(req.scopeId, 'scopeId'),
    action: requireString(req.action, 'action'),
    resource: resourceRefOf(req.resource, 'resource'),
    context: jsonObject(req.context ?? undefined, 'context'),
    subjectType: optionalString(req.subjectType, 'subjectType'),
    pageSize: pageSizeOf(req.pageSize),
    explain: req.explain === true,
  };
  const freshness = freshnessOf(req.consistency, 'consistency');
  const d = digest(query);
  const cursor = req.cursor ? decodeCursor(req.cursor, 'subjects', d, 'scopeId, action, resource, subjectType and context') : undefined;
  return { query, cursor, freshness, digest: d };
}

/** One page of a LookupSubjects listing from `source`'s index. */
export async function lookupSubjectsFor<C>(
  source: DecisionSource<C>, caller: C, input: LookupSubjectsInput, deadline: number, signal?: CallSignal, onTenant?: (tenantId: string) => void,
): Promise<LookupSubjectsOut> {
  const { query, cursor } = input;
  const index = await listingIndex(source, caller, query.scopeId, input.freshness, cursor, deadline, signal, onTenant);
  try {
    const page = lookupSubjects(index, { ...query, after: cursor?.a }, { now: new Date(), gate: source.gate(index), onError: source.onEngineError });
    return {
      subjects: page.subjects.map(({ subject, grant }) => ({ id: subject.id, externalId: subject.externalId, type: subject.type, grant })),
      nextCursor: page.last === undefined ? '' : encodeCursor({ r: page.revision, a: page.last, q: input.digest }),
      revision: page.revision,
    };
  } catch (e) {
    if (e instanceof ScopeNotFoundError) throw notFound('scope', query.scopeId, 'scopeId');
    throw e;
  }
}
