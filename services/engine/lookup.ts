/**
 * LookupResources: the resources of a tenant on which a subject may do an action, evaluated in
 * a scope, in id order and a page at a time.
 *
 * Definition: the set is exactly `{ r of the tenant (of type key T when asked) :
 * evaluate(index, { actor, scopeId, action, resource: { resourceId: r.id }, context }).allowed }`.
 * It is computed that way: `evaluate` itself decides each resource (with its own decision
 * budget, as a single Evaluate has), until `pageSize` are allowed or the resources run out. No
 * second decision path exists to disagree with the first.
 *
 * Which resources are visited: the query's candidates (lookup-candidates.ts), a set built from
 * the index that holds every resource evaluate could allow, when one can be bounded; else every
 * resource of the type (a role permission with pattern `*`, an allow policy on a collection).
 * Either way in id order from the one after `after`.
 *
 * Cost: a page costs one decision per resource visited, returned or skipped, and visits at most
 * LOOKUP_MAX_VISITS: a subject allowed on few of many resources gets short (even empty) pages
 * with a cursor, never a truncated listing; the listing ends only with a page without one. With
 * candidates, a page also builds them: O(the subject's roles, grants and their descendants, and
 * the action's allow policies) plus a sort, independent of the tenant's other resources, made
 * by the listing's first page and kept for its later ones (a small cache per index). The walk instead sorts the tenant's resources once per index; writes then keep that order (see
 * tenant-index/resource-order.ts).
 */
import { evaluate, type EvaluateOptions, type EvaluateRequest } from './evaluate.js';
import { ScopeNotFoundError } from './errors.js';
import { candidatesFor } from './lookup-candidates.js';
import type { Resource } from './model.js';
import { subjectByExternalId } from './subject-ref.js';
import type { ResourceNode, TenantIndex, TypeSlot } from './tenant-index/mod.js';
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

/**
 * A listed resource: the fields a listing answers with, read from the resource's node (a full
 * row would also build its `createdAt` string and copy its attributes, for nothing).
 */
export type ListedResource = Pick<Resource, 'id' | 'externalResourceId' | 'resourceTypeId' | 'ownerScopeId'> & {
  /** The resource type's key. */
  resourceType: string;
};

/** A node whose resource exists, as a listing answers it. */
function listed(index: TenantIndex, node: ResourceNode, id: string): ListedResource {
  const nodes = index.resourceNodes;
  const type = nodes.type(node) as TypeSlot;
  return { id, externalResourceId: nodes.ext(node) as string, resourceTypeId: type.id, resourceType: type.key ?? '', ownerScopeId: nodes.owner(node) as string };
}

export interface LookupResourcesPage {
  /** The allowed resources of this page, by id. */
  resources: ListedResource[];
  /**
   * Set when more may follow: the `after` of the next page (the last resource visited, which a
   * page ended by its visit budget may not list).
   */
  last?: string;
  /** The revision of the index the page was computed from. */
  revision: number;
  /** Which resources the page visited: the query's candidates, or every resource of the type. */
  via: 'candidates' | 'walk';
  /** Decisions the page made. */
  visited: number;
}

export interface LookupOptions extends Pick<EvaluateOptions, 'now' | 'gate' | 'onError'> {
  /** Decisions a page may make (default LOOKUP_MAX_VISITS). */
  maxVisits?: number;
  /** Visit every resource of the type even when candidates can be bounded (tests, benchmarks). */
  walk?: boolean;
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
  options: LookupOptions,
): LookupResourcesPage {
  const maxVisits = options.maxVisits ?? LOOKUP_MAX_VISITS;
  const { pageSize } = query;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new RangeError('pageSize must be a positive integer');
  const revision = index.revision;
  const path = index.scopePath(query.scopeId);
  if (path.ids.length === 0) throw new ScopeNotFoundError(query.scopeId);
  const actor = query.actor;
  // Every decision of a subject not in the tenant (or not of the type asked) is a deny: no walk.
  const subject = actor.subjectId ? index.subjectNode(actor.subjectId) : subjectByExternalId(index, actor.externalId ?? '', actor.subjectType);
  if (subject === undefined || subject.row === undefined || (actor.subjectType && actor.subjectType !== subject.type)) return { resources: [], revision, via: 'candidates', visited: 0 };

  const candidates = options.walk === true ? undefined : candidatesFor(index, subject, subject.row.id, path, query.action, query.resourceType);
  const nodes = candidates ?? index.resourcesInIdOrder(query.resourceType);
  const request: EvaluateRequest = { actor, scopeId: query.scopeId, action: query.action, resource: { resourceId: '' }, context: query.context };
  const resourceRef = request.resource as { resourceId: string };
  const resources: ListedResource[] = [];
  const idOf = (n: ResourceNode) => index.resourceNodes.idOf(n);
  const start = query.after === undefined ? 0 : firstAfter(nodes, query.after, idOf);
  let i = start;
  const end = Math.min(nodes.length, i + maxVisits);
  for (; i < end && resources.length < pageSize; i++) {
    const id = idOf(nodes[i]);
    resourceRef.resourceId = id;
    if (evaluate(index, request, options).allowed) resources.push(listed(index, nodes[i], id));
  }
  const page: LookupResourcesPage = { resources, revision, via: candidates === undefined ? 'walk' : 'candidates', visited: i - start };
  if (i < nodes.length) page.last = idOf(nodes[i - 1]);
  return page;
}
