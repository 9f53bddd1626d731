/**
 * Names to ids: a scope by its path of scope names from the tenant's root (`acme/eng/platform`),
 * a subject by its external id (and type). A name that matches nothing is `not_found`; one that
 * matches several is `invalid_argument`: the caller must say which, nothing is guessed.
 * Both read the control plane's ScopeService, TenancyService and SubjectService, so they need
 * a `platform` key (a `service` key reaches the decision path only: pass ids instead).
 */
import { Code } from '@connectrpc/connect';
import type { Scope } from '../gen/authz/v1/scope_pb.js';
import type { Subject } from '../gen/authz/v1/subject_pb.js';
import { AuthzError } from './errors.js';
import type { ServiceClients } from './services.js';

/** The largest page the list RPCs give. */
const PAGE = 1000;

/** Every item of a paged list, page after page. */
export async function allPages<T>(page: (cursor: string) => Promise<{ items: T[]; nextCursor: string }>): Promise<T[]> {
  const out: T[] = [];
  let cursor = '';
  do {
    const { items, nextCursor } = await page(cursor);
    out.push(...items);
    cursor = nextCursor;
  } while (cursor !== '');
  return out;
}

const invalid = (field: string, message: string) => new AuthzError(message, Code.InvalidArgument, { reason: 'INVALID_FIELD', field });
const notFound = (field: string, message: string) => new AuthzError(message, Code.NotFound, { reason: 'NOT_FOUND', field });

/** The segments of a scope path; `invalid_argument` for an empty one or an empty segment. */
export function scopePathSegments(path: string): string[] {
  const segments = path.split('/');
  if (path === '' || segments.some((s) => s === '')) {
    throw invalid('scopePath', `scope path ${JSON.stringify(path)} must be scope names separated by "/", starting with the tenant's root scope (e.g. acme/eng/platform)`);
  }
  return segments;
}

/**
 * The scope at `path` in the tenant: the first segment names the tenant's root scope (it carries
 * the tenant's name), each next one a child of the scope before it.
 */
export async function resolveScopePath(clients: ServiceClients, tenantId: string, path: string): Promise<Scope> {
  const segments = scopePathSegments(path);
  const { tenant } = await clients.tenancy.getTenant({ id: tenantId });
  const { scope: root } = await clients.scopes.getScope({ id: tenant!.scopeId });
  if (root!.name !== segments[0]) {
    throw notFound('scopePath', `scope path ${JSON.stringify(path)}: the root scope of tenant ${tenantId} is named ${JSON.stringify(root!.name)}, not ${JSON.stringify(segments[0])}`);
  }
  let scope = root!;
  for (let i = 1; i < segments.length; i++) {
    const parent = scope;
    const children = await allPages(async (cursor) => {
      const r = await clients.scopes.listScopeChildren({ id: parent.id, limit: PAGE, cursor });
      return { items: r.scopes, nextCursor: r.nextCursor };
    });
    const named = children.filter((c) => c.name === segments[i]);
    const at = segments.slice(0, i + 1).join('/');
    if (named.length === 0) throw notFound('scopePath', `no scope ${JSON.stringify(at)} in tenant ${tenantId}: ${parent.id} has no child named ${JSON.stringify(segments[i])}`);
    if (named.length > 1) {
      throw invalid('scopePath', `scope path ${JSON.stringify(at)} is ambiguous: ${named.length} children of ${parent.id} are named ${JSON.stringify(segments[i])} (${named.map((s) => s.id).join(', ')}): give the scope's id`);
    }
    scope = named[0];
  }
  return scope;
}

/** The tenant's subject with `externalId` (of `type` when given). */
export async function resolveSubject(clients: ServiceClients, tenantId: string, externalId: string, type?: string): Promise<Subject> {
  if (externalId === '') throw invalid('externalId', 'the external id must not be empty');
  const all = await allPages(async (cursor) => {
    const r = await clients.subjects.listSubjects({ tenantId, externalId, limit: PAGE, cursor });
    return { items: r.subjects, nextCursor: r.nextCursor };
  });
  const matching = all.filter((s) => s.externalId === externalId && (type === undefined || s.type === type));
  const what = `subject with external id ${JSON.stringify(externalId)}${type === undefined ? '' : ` of type ${type}`}`;
  if (matching.length === 0) throw notFound('externalId', `no ${what} in tenant ${tenantId}`);
  if (matching.length > 1) {
    throw invalid('externalId', `${matching.length} subjects have external id ${JSON.stringify(externalId)} in tenant ${tenantId} (types ${matching.map((s) => s.type).join(', ')}): give the type`);
  }
  return matching[0];
}
