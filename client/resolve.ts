/**
 * Names to ids: a scope by its path from the tenant's root scope, as the tenant model file
 * writes it (`/eng/platform`; `/` is the root), a subject by its external id (and type). A name
 * that matches nothing is `not_found`; one that matches several is `invalid_argument`: the caller
 * must say which, nothing is guessed. Both read the control plane's ScopeService, TenancyService
 * and SubjectService, so they need a `platform` key (a `service` key reaches the decision path
 * only: pass ids instead).
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

/**
 * The scope names of a path below the tenant's root (`/eng/platform` → `eng`, `platform`; `/` →
 * none); `invalid_argument` for a path without the leading `/`, with an empty name or a trailing `/`.
 */
export function scopePathSegments(path: string): string[] {
  if (path === '/') return [];
  const segments = path.split('/').slice(1);
  if (!path.startsWith('/') || segments.some((s) => s === '')) {
    throw invalid('scopePath', `scope path ${JSON.stringify(path)} must be "/" (the tenant's root scope) or scope names below it, each after a "/" (e.g. /eng/platform), as in a model file`);
  }
  return segments;
}

/** The scope at `path` in the tenant (see scopePathSegments): each name a child of the scope before it, from the root. */
export async function resolveScopePath(clients: ServiceClients, tenantId: string, path: string): Promise<Scope> {
  const segments = scopePathSegments(path);
  const { tenant } = await clients.tenancy.getTenant({ id: tenantId });
  const { scope: root } = await clients.scopes.getScope({ id: tenant!.scopeId });
  let scope = root!;
  for (let i = 0; i < segments.length; i++) {
    const parent = scope;
    const children = await allPages(async (cursor) => {
      const r = await clients.scopes.listScopeChildren({ id: parent.id, limit: PAGE, cursor });
      return { items: r.scopes, nextCursor: r.nextCursor };
    });
    const named = children.filter((c) => c.name === segments[i]);
    const at = `/${segments.slice(0, i + 1).join('/')}`;
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
