/**
 * Listings paged to the end: LookupResources and LookupSubjects called page after page with the
 * previous page's cursor until a page comes without one (a short or empty page is not the end:
 * a page's visit budget may end it), or until `limit` items.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type {
  LookupResource, LookupResourcesRequestSchema, LookupSubject, LookupSubjectsRequestSchema,
} from '../gen/authz/v1/decision_service_pb.js';
import type { ServiceClients } from './services.js';

export interface ListingOptions {
  /** Items a page (1 to 1,000; absent: the server's default, 100). */
  pageSize?: number;
  /** Stop once this many items are listed. */
  limit?: number;
}

export interface Listing<T> {
  items: T[];
  /** The revision every page answered at. */
  revision: number;
  pages: number;
  /** True when `limit` stopped the listing and more may follow. */
  truncated: boolean;
}

type Page<T> = { items: T[]; nextCursor: string; revision: bigint };

async function pageToEnd<T>(next: (cursor: string) => Promise<Page<T>>, options: ListingOptions): Promise<Listing<T>> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const items: T[] = [];
  let cursor = '';
  let pages = 0;
  let revision = 0;
  for (;;) {
    const page = await next(cursor);
    pages++;
    revision = Number(page.revision);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (items.length >= limit) {
      const truncated = items.length > limit || cursor !== '';
      return { items: items.slice(0, limit), revision, pages, truncated };
    }
    if (cursor === '') return { items, revision, pages, truncated: false };
  }
}

export type LookupResourcesQuery = Omit<MessageInitShape<typeof LookupResourcesRequestSchema>, 'cursor' | 'pageSize' | '$typeName'>;
export type LookupSubjectsQuery = Omit<MessageInitShape<typeof LookupSubjectsRequestSchema>, 'cursor' | 'pageSize' | '$typeName'>;

export function lookupAllResources(clients: ServiceClients, query: LookupResourcesQuery, options: ListingOptions = {}): Promise<Listing<LookupResource>> {
  return pageToEnd(async (cursor) => {
    // Later pages answer at their cursor's revision: the first page's consistency is enough.
    const r = await clients.decisions.lookupResources({ ...query, ...(cursor ? { cursor, consistency: undefined } : {}), pageSize: options.pageSize ?? 0 });
    return { items: r.resources, nextCursor: r.nextCursor, revision: r.revision };
  }, options);
}

export function lookupAllSubjects(clients: ServiceClients, query: LookupSubjectsQuery, options: ListingOptions = {}): Promise<Listing<LookupSubject>> {
  return pageToEnd(async (cursor) => {
    const r = await clients.decisions.lookupSubjects({ ...query, ...(cursor ? { cursor, consistency: undefined } : {}), pageSize: options.pageSize ?? 0 });
    return { items: r.subjects, nextCursor: r.nextCursor, revision: r.revision };
  }, options);
}
