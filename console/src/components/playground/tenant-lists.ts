/**
 * What the decision forms suggest and what the trace names ids with: the first page of each of
 * the tenant's listings, never the whole tenant (a tenant may hold millions of subjects). A value
 * not on the first page can still be typed.
 */
import { useQuery } from '@tanstack/react-query';
import { PermissionService } from '../../../../gen/authz/v1/permission_service_pb.js';
import { PolicyService } from '../../../../gen/authz/v1/policy_service_pb.js';
import { ResourceService } from '../../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../../gen/authz/v1/resource_type_service_pb.js';
import { RoleService } from '../../../../gen/authz/v1/role_service_pb.js';
import { ScopeService } from '../../../../gen/authz/v1/scope_service_pb.js';
import { SubjectService } from '../../../../gen/authz/v1/subject_service_pb.js';
import type { Scope } from '../../../../gen/authz/v1/scope_pb.js';
import { client } from '../../api/transport.js';
import { useTenant } from '../../tenant.js';

/** How many of each listing the forms offer. */
export const SUGGESTION_LIMIT = 100;

export interface Suggestion {
  readonly value: string;
  readonly label: string;
}

export function useSubjectsPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'subjects', tenant.id],
    queryFn: async () => (await client(SubjectService).listSubjects({ tenantId: tenant.id, limit: SUGGESTION_LIMIT })).subjects,
  });
}

export function useScopesPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'scopes', tenant.id],
    queryFn: async () => (await client(ScopeService).listScopes({ tenantId: tenant.id, limit: SUGGESTION_LIMIT })).scopes,
  });
}

export function usePermissionsPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'permissions', tenant.id],
    queryFn: async () => (await client(PermissionService).listPermissions({ tenantId: tenant.id, limit: SUGGESTION_LIMIT })).permissions,
  });
}

/** Resource types defined at the tenant's root scope (where a model file puts them). */
export function useResourceTypesPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'resource-types', tenant.scopeId],
    queryFn: async () => (await client(ResourceTypeService).listResourceTypes({ scopeId: tenant.scopeId, limit: SUGGESTION_LIMIT })).resourceTypes,
  });
}

/** Roles defined at the tenant's root scope. */
export function useRolesPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'roles', tenant.scopeId],
    queryFn: async () => (await client(RoleService).listRoles({ scopeId: tenant.scopeId, limit: SUGGESTION_LIMIT })).roles,
  });
}

/** Collections defined at the tenant's root scope (the trace names them by id). */
export function useCollectionsPage() {
  const tenant = useTenant();
  return useQuery({
    queryKey: ['decide', 'collections', tenant.scopeId],
    queryFn: async () => (await client(PolicyService).listResourceCollections({ scopeId: tenant.scopeId, limit: SUGGESTION_LIMIT })).resourceCollections,
  });
}

/** Resources owned by `scopeId` (none asked for while it is empty). */
export function useResourcesPage(scopeId: string) {
  return useQuery({
    queryKey: ['decide', 'resources', scopeId],
    queryFn: async () => (await client(ResourceService).listResources({ scopeId, limit: SUGGESTION_LIMIT })).resources,
    enabled: scopeId !== '',
  });
}

/** Each scope's path as a model file writes it (`/eng/platform`, `/` for the root), from the scopes at hand. */
export function scopePaths(scopes: readonly Scope[]): Map<string, string> {
  const byId = new Map(scopes.map((s) => [s.id, s]));
  const paths = new Map<string, string>();
  const pathOf = (s: Scope, depth = 0): string => {
    const known = paths.get(s.id);
    if (known !== undefined) return known;
    const parent = s.parentId ? byId.get(s.parentId) : undefined;
    // A parent beyond the first page (or a loop in bad data) leaves the name alone.
    const path = !s.parentId ? '/' : parent && depth < 64 ? `${pathOf(parent, depth + 1).replace(/\/$/, '')}/${s.name}` : s.name;
    paths.set(s.id, path);
    return path;
  };
  for (const s of scopes) pathOf(s);
  return paths;
}

/** The actions the tenant's permissions name (`type:action:pattern`), each once, sorted. */
export function actionsOf(permissions: readonly { action: string }[]): string[] {
  return [...new Set(permissions.map((p) => p.action).filter((a) => a !== '' && a !== '*'))].sort();
}

/** Suggestions and id names for the decision forms, from the first pages. */
export function useTenantLists(scopeId: string) {
  const subjects = useSubjectsPage();
  const scopes = useScopesPage();
  const permissions = usePermissionsPage();
  const types = useResourceTypesPage();
  const roles = useRolesPage();
  const resources = useResourcesPage(scopeId);
  const collections = useCollectionsPage();
  const paths = scopePaths(scopes.data ?? []);
  const typeKeys = new Map((types.data ?? []).map((t) => [t.id, t.key]));
  const typeKeySet = new Set([...typeKeys.values(), ...(permissions.data ?? []).map((p) => p.resourceType).filter((t) => t !== '*' && t !== '')]);

  const names = new Map<string, string>();
  for (const [id, path] of paths) names.set(id, path);
  for (const s of subjects.data ?? []) names.set(s.id, s.externalId);
  for (const p of permissions.data ?? []) names.set(p.id, p.key);
  for (const r of roles.data ?? []) names.set(r.id, r.key);
  for (const [id, key] of typeKeys) names.set(id, key);
  for (const c of collections.data ?? []) names.set(c.id, c.name);
  for (const r of resources.data ?? []) names.set(r.id, `${typeKeys.get(r.resourceTypeId) ?? 'resource'}/${r.externalResourceId}`);

  /** What a typed scope id is, as a hint under its field. */
  const scopeHint = (id: string): string => {
    if (id.trim() === '') return 'Suggested: the tenant\'s scopes, by path.';
    const path = paths.get(id.trim());
    return path !== undefined ? `The scope ${path}.` : 'Not among the scopes listed first; it is sent as typed.';
  };

  return {
    scopeHint,
    queries: { subjects, scopes, permissions, types, roles, resources, collections },
    names,
    suggest: {
      externalIds: (subjects.data ?? []).map((s): Suggestion => ({ value: s.externalId, label: `${s.type} ${s.id}` })),
      subjectIds: (subjects.data ?? []).map((s): Suggestion => ({ value: s.id, label: s.externalId })),
      scopeIds: (scopes.data ?? []).map((s): Suggestion => ({ value: s.id, label: paths.get(s.id) ?? s.name })),
      actions: actionsOf(permissions.data ?? []).map((a): Suggestion => ({ value: a, label: a })),
      resourceTypes: [...typeKeySet].sort().map((k): Suggestion => ({ value: k, label: k })),
      externalResourceIds: (type: string) =>
        (resources.data ?? [])
          .filter((r) => type === '' || typeKeys.get(r.resourceTypeId) === type)
          .map((r): Suggestion => ({ value: r.externalResourceId, label: r.displayName ?? typeKeys.get(r.resourceTypeId) ?? '' })),
      resourceIds: (resources.data ?? []).map((r): Suggestion => ({ value: r.id, label: names.get(r.id) ?? r.externalResourceId })),
    },
  };
}

export type TenantLists = ReturnType<typeof useTenantLists>;
