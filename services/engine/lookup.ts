/**
 * LookupResources: the resources of a tenant on which a subject may do an action, evaluated in
 * a scope, in id order and a page at a time.
 *
 * Definition: the set is exactly `{ r of the tenant (of type key T when asked) :
 * evaluate(index, { actor, scopeId, action, resource: { resourceId: r.id }, context }).allowed }`.
 * It is computed that way: the tenant's resources are walked in id order from the one after
 * `after`, and `evaluate` itself decides each (with its own decision budget, as a single
 * Evaluate has), until `pageSize` are allowed or the resources run out. No second decision path
 * exists to disagree with the first.
 *
 * Cost: a page costs one decision per resource visited, returned or skipped, and visits at most
 * LOOKUP_MAX_VISITS: a subject allowed on few of many resources gets short (even empty) pages
 * with a cursor, never a truncated listing; the listing ends only with a page without one. Other entities of the tenant (subjects, grants,
 * policies) cost nothing beyond what each decision reads. The index's first listing sorts the
 * tenant's resources once; writes then keep that order (see tenant-index/resource-order.ts).
 */
import { evaluate, type EvaluateOptions, type EvaluateRequest } from './evaluate.js';
import { ScopeNotFoundError } from './errors.js';
import type { Resource } from './model.js';
import { subjectByExternalId } from './subject-ref.js';
import type { TenantIndex } from './tenant-index/mod.js';
import { firstAfter } from './tenant-index/resource-order.js';

export interface LookupResourcesQuery {
  /** As Evaluate takes it: exactly one of `subjectId` and `externalId`. */
  actor: EvaluateRequest['actor'];
  scopeId: string;
  action: string;
  /** Only resources whose type has this key. */
  resourceType?: string;
  context?: Record<string, unknown>;
  /** At most this many resources (a positive integer). */
  pageSize: number;
  /** The last resource id of the previous page: this page starts after it. */
  after?: string;
}

/** Decisions one page may make: a page ends there, short, with a cursor (about 20–40 ms). */
export const LOOKUP_MAX_VISITS = 20_000;

export interface LookupResourcesPage {
  /** The allowed resources of this page, by id. */
  resources: Resource[];
  /**
   * Set when more may follow: the `after` of the next page (the last resource visited, which a
   * page ended by its visit budget may not list).
   */
  last?: string;
  /** The revision of the index the page was computed from. */
  revision: number;
}

/**
 * One page of the resources `query.actor` may `query.action` on at `query.scopeId`. Throws
 * ScopeNotFoundError for an unknown scope and AmbiguousSubjectError for an external id several
 * subjects share (as evaluate does); an unknown subject, or one of another type than asked,
 * is allowed nothing, so the page is empty.
 */
export function lookupResources(
  index: TenantIndex,
  query: LookupResourcesQuery,
  options: Pick<EvaluateOptions, 'now' | 'gate' | 'onError'> & { maxVisits?: number },
): LookupResourcesPage {
  const maxVisits = options.maxVisits ?? LOOKUP_MAX_VISITS;
  const { pageSize } = query;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new RangeError('pageSize must be a positive integer');
  const revision = index.revision;
  if (index.scopePath(query.scopeId).ids.length === 0) throw new ScopeNotFoundError(query.scopeId);
  const actor = query.actor;
  // Every decision of a subject not in the tenant (or not of the type asked) is a deny: no walk.
  const subject = actor.subjectId ? index.subjectNode(actor.subjectId) : subjectByExternalId(index, actor.externalId ?? '', actor.subjectType);
  if (subject === undefined || subject.row === undefined || (actor.subjectType && actor.subjectType !== subject.type)) return { resources: [], revision };

  const nodes = index.resourcesInIdOrder(query.resourceType);
  const request: EvaluateRequest = { actor, scopeId: query.scopeId, action: query.action, resource: { resourceId: '' }, context: query.context };
  const resourceRef = request.resource as { resourceId: string };
  const resources: Resource[] = [];
  let i = query.after === undefined ? 0 : firstAfter(nodes, query.after);
  const end = Math.min(nodes.length, i + maxVisits);
  for (; i < end && resources.length < pageSize; i++) {
    resourceRef.resourceId = nodes[i].id;
    if (evaluate(index, request, options).allowed) resources.push(index.resourceRow(nodes[i]));
  }
  const page: LookupResourcesPage = { resources, revision };
  if (i < nodes.length) page.last = nodes[i - 1].id;
  return page;
}
