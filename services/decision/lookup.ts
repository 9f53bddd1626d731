/**
 * DecisionService.LookupResources for both processes: the request validated and mapped to the
 * engine's lookupResources, answered from the index a DecisionSource hands out, a page at a time.
 *
 * The cursor is base64url JSON `{v, r, a, q}`: the revision the listing started at (`r`), the
 * last id of the page before (`a`), and a digest of the query (`q`: actor, scope, action, type,
 * context) so a cursor cannot page another listing. It is not signed: a forged one can only
 * start a listing of the caller's own query after an id of its choice, which any caller may ask.
 *
 * Pinned revision: every page answers at `r`. The control plane reads the tenant at `r` from its
 * history once it has moved past it (`failed_precondition` on `cursor` when the history no longer
 * holds `r`); a sidecar holds only its current state, so a page asked once it has moved past `r`
 * is `failed_precondition` on `cursor` (the listing must start again) rather than a mix of
 * states. A process still behind `r` waits for it as for `consistency.minRevision`.
 */
import { createHash } from 'node:crypto';
import type { JsonObject } from '@bufbuild/protobuf';
import {
  AmbiguousSubjectError, lookupResources, ScopeNotFoundError, type LookupResourcesQuery, type Resource, type TenantIndex,
} from '../engine/mod.js';
import { constraint, invalid, notFound } from '../common/errors.js';
import { jsonObject, optionalString, requireString } from '../common/validate.js';
import { ambiguous, freshnessOf, subjectRef, type CallSignal, type ConsistencyLike, type DecisionSource, type Freshness } from './decide.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** Longer than any cursor this module writes (a 256-character id and the rest). */
const MAX_CURSOR_CHARS = 1024;

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

/** One resource of a page, as the response carries it. */
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

interface Cursor {
  /** The revision the listing started at. */
  r: number;
  /** The last resource id of the previous page. */
  a: string;
  /** The query's digest. */
  q: string;
}

function digest(query: Omit<LookupResourcesQuery, 'pageSize' | 'after'>): string {
  const { actor, scopeId, action, resourceType, context } = query;
  const key = JSON.stringify([actor.subjectId ?? null, actor.externalId ?? null, actor.subjectType ?? null, scopeId, action, resourceType ?? null, context ?? null]);
  return createHash('sha256').update(key).digest('base64url').slice(0, 22);
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify({ v: 1, r: c.r, a: c.a, q: c.q })).toString('base64url');
}

/** The cursor a previous page returned, for this query; anything else is invalid_argument on `cursor`. */
export function decodeCursor(text: string, q: string): Cursor {
  const bad = () => invalid('cursor', 'is not a cursor a LookupResources page returned');
  if (text.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const c = parsed as Record<string, unknown> | null;
  if (
    typeof c !== 'object' || c === null || Array.isArray(c) || c.v !== 1 ||
    typeof c.r !== 'number' || !Number.isSafeInteger(c.r) || c.r < 0 ||
    typeof c.a !== 'string' || c.a === '' || c.a.length > 256 || typeof c.q !== 'string'
  ) throw bad();
  if (c.q !== q) throw invalid('cursor', 'was returned for another listing: actor, scopeId, action, resourceType and context must stay those of the first page');
  return { r: c.r, a: c.a, q: c.q };
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
    pageSize: DEFAULT_PAGE_SIZE,
  };
  const size = req.pageSize ?? 0;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) {
    throw invalid('pageSize', `must be an integer from 1 to ${MAX_PAGE_SIZE} (0 or absent: ${DEFAULT_PAGE_SIZE})`);
  }
  if (size > 0) query.pageSize = size;
  const freshness = freshnessOf(req.consistency, 'consistency');
  const d = digest(query);
  const cursor = req.cursor ? decodeCursor(req.cursor, d) : undefined;
  return { query, cursor, freshness, digest: d };
}

function resourceOut(index: TenantIndex, r: Resource): LookupResourceOut {
  return { id: r.id, externalResourceId: r.externalResourceId, resourceType: index.resourceType(r.resourceTypeId)?.key ?? '', ownerScopeId: r.ownerScopeId };
}

/** One page of a LookupResources listing from `source`'s index. */
export async function lookupResourcesFor<C>(
  source: DecisionSource<C>, caller: C, input: LookupInput, deadline: number, signal?: CallSignal, onTenant?: (tenantId: string) => void,
): Promise<LookupResourcesOut> {
  const { query, cursor } = input;
  // A later page needs the index at its listing's revision: a process behind it waits for it,
  // the control plane reads it from the history once it has moved past it.
  const freshness = cursor === undefined ? input.freshness : { minRevision: cursor.r, fullyConsistent: false, pinned: cursor.r };
  const index = await source.indexFor(caller, query.scopeId, '', freshness, deadline, signal);
  // From here on nothing awaits: the index cannot move under the page.
  if (cursor !== undefined && index.revision !== cursor.r) {
    throw constraint(
      `the tenant moved from revision ${cursor.r}, where this listing started, to revision ${index.revision}; ` +
        'pages of one listing answer at one revision, so start the listing again without a cursor',
      'cursor',
    );
  }
  if (onTenant !== undefined) {
    const tenantId = index.scope(query.scopeId)?.tenantId;
    if (tenantId !== undefined) onTenant(tenantId);
  }
  try {
    const page = lookupResources(index, { ...query, after: cursor?.a }, { now: new Date(), gate: source.gate(index), onError: source.onEngineError });
    return {
      resources: page.resources.map((r) => resourceOut(index, r)),
      nextCursor: page.last === undefined ? '' : encodeCursor({ r: page.revision, a: page.last, q: input.digest }),
      revision: page.revision,
    };
  } catch (e) {
    if (e instanceof AmbiguousSubjectError) throw ambiguous(e, 'actor.subjectType', 'actor.externalId');
    if (e instanceof ScopeNotFoundError) throw notFound('scope', query.scopeId, 'scopeId');
    throw e;
  }
}
