/**
 * The change log's filters as they live in the URL query (so a filtered history can be linked
 * and survives a reload), and as ListChanges takes them.
 */
import type { ListChangesRequest } from '../../../../gen/authz/v1/change_service_pb.js';

/** ListChanges' filter fields (the request without tenant, page size and cursor). */
export type ChangeFilterFields = Pick<ListChangesRequest, 'kind' | 'entityId' | 'writerKeyId' | 'writerSubjectId' | 'fromTime' | 'toTime' | 'fromRevision' | 'toRevision'>;

/** The kinds ListChanges knows (change_service.proto), for the kind filter's choices. */
export const CHANGE_KINDS = [
  'scope', 'subject', 'role', 'permission', 'role_permission', 'membership', 'role_assignment', 'scope_override',
  'ownership_grant', 'resource_type', 'resource_type_edge', 'resource', 'resource_scope_link', 'resource_edge',
  'collection', 'policy', 'tag_group', 'tag', 'tag_assignment', 'tag_binding', 'project', 'environment', 'workspace', 'api_key',
] as const;

export interface HistoryFilters {
  readonly kind: string;
  readonly entityId: string;
  readonly writerKeyId: string;
  readonly writerSubjectId: string;
  /** RFC 3339, as the API takes it. */
  readonly fromTime: string;
  readonly toTime: string;
  /** Whole numbers as text ('' when unset): the form's fields and the URL hold text. */
  readonly fromRevision: string;
  readonly toRevision: string;
}

export const FILTER_KEYS = ['kind', 'entityId', 'writerKeyId', 'writerSubjectId', 'fromTime', 'toTime', 'fromRevision', 'toRevision'] as const satisfies readonly (keyof HistoryFilters)[];

export const NO_FILTERS: HistoryFilters = { kind: '', entityId: '', writerKeyId: '', writerSubjectId: '', fromTime: '', toTime: '', fromRevision: '', toRevision: '' };

export function filtersFromQuery(query: URLSearchParams): HistoryFilters {
  const out: Record<string, string> = {};
  for (const key of FILTER_KEYS) out[key] = (query.get(key) ?? '').trim();
  return out as unknown as HistoryFilters;
}

/** The filters that are set, as a URL query without `?` ('' when none is). */
export function filtersToQuery(filters: HistoryFilters): string {
  const query = new URLSearchParams();
  for (const key of FILTER_KEYS) if (filters[key] !== '') query.set(key, filters[key]);
  return query.toString();
}

const WHOLE = /^\d+$/;

/** A revision field's text as the API's int64, or undefined when unset or not a whole number (the form says so). */
function revision(text: string): bigint | undefined {
  return WHOLE.test(text) ? BigInt(text) : undefined;
}

/** What is wrong with the filters before asking the server, or '' when nothing is. */
export function filtersProblem(f: HistoryFilters): string {
  for (const [label, text] of [['From revision', f.fromRevision], ['To revision', f.toRevision]] as const) {
    if (text !== '' && !WHOLE.test(text)) return `${label} must be a whole number, got "${text}".`;
  }
  for (const [label, text] of [['From time', f.fromTime], ['To time', f.toTime]] as const) {
    if (text !== '' && Number.isNaN(Date.parse(text))) return `${label} is not a time: "${text}".`;
  }
  return '';
}

/** The ListChanges request of these filters (without tenant, page size and cursor). */
export function filtersToRequest(f: HistoryFilters): ChangeFilterFields {
  return {
    kind: f.kind,
    entityId: f.entityId,
    writerKeyId: f.writerKeyId,
    writerSubjectId: f.writerSubjectId,
    fromTime: f.fromTime,
    toTime: f.toTime,
    fromRevision: revision(f.fromRevision),
    toRevision: revision(f.toRevision),
  };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An RFC 3339 time as a `datetime-local` field shows it: the reader's local time, to the second. */
export function isoToLocalInput(iso: string): string {
  const ms = Date.parse(iso);
  if (iso === '' || Number.isNaN(ms)) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * A `datetime-local` field's value (local time, no zone) as RFC 3339 in UTC; '' stays ''. With
 * `wholeSecond`, the last millisecond of that second: the field shows whole seconds, and "to
 * 12:00:05" means up to the end of that second, as a person reads it.
 */
export function localInputToIso(local: string, wholeSecond = false): string {
  if (local === '') return '';
  const ms = new Date(local).getTime();
  if (Number.isNaN(ms)) return '';
  return new Date(wholeSecond ? ms + 999 : ms).toISOString();
}
