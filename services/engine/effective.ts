/**
 * Effective permissions of a subject at a scope (`GET /effective-permissions`).
 */
import { ResourceNotFoundError, ScopeNotFoundError } from './errors.js';
import { bagRows, type TenantIndex } from './tenant-index/mod.js';
import type { OwnershipGrant } from './model.js';
import { subjectByExternalId } from './subject-ref.js';
import { grantRoleUsable, heldRoles, overrideDecisions, rolePermissionIdsAt, type OverrideDecisions } from './roles.js';

export interface EffectivePermissionsQuery {
  /** Exactly one of `subjectId` and `subjectExternalId` (the subject's `externalId`). */
  subjectId?: string;
  subjectExternalId?: string;
  /** Only a subject of this type holds anything (with an external id: only one of this type is looked up). */
  subjectType?: string;
  scopeId: string;
  resourceId?: string;
}

export interface EffectivePermission {
  key: string;
  resourceType: string;
  action: string;
  resourcePattern: string;
  source: 'role' | 'ownership' | 'tag_binding';
  roleId: string;
}

/**
 * Lists what the subject holds at the scope, before resource policies and the reachability
 * gate (those depend on the resource and the request, not on the subject's holdings):
 * - source `role` / `tag_binding`: every permission of every role held at the scope through a
 *   membership / tag binding at the scope or an ancestor (block overrides, role scope and
 *   add/remove overrides applied exactly as `evaluate` applies them);
 * - with `resourceId` R, source `ownership`: for each ownership grant of the subject on R whose
 *   role is defined at R's owner scope or above (see grantRoleUsable), each
 *   permission of the grant's role at the scope whose pattern covers R, listed with
 *   `resourcePattern` = R's id and `key` = `<type>:<action>:<R's id>` (the grant binds it to R).
 *
 * Relation with `evaluate` (same index, subject and scope; a request for which no policy
 * matches and the gate passes):
 * - evaluate answers `role` for (action, X) ⇔ a `role`/`tag_binding` entry covers (action, X)
 *   under the permission-cover rule (X absent: only pattern `*` entries cover);
 * - for X = R, evaluate answers `ownership` ⇔ no such role entry covers it and an `ownership`
 *   entry of effectivePermissions(…, resourceId: R) covers (action, R);
 * - for a child C, evaluate answers `inherited` ⇔ neither of the above, and for some ancestor A
 *   reached from C through `inherit` edges, an entry of effectivePermissions(…, resourceId: A)
 *   has an action equal to `action` or `*`, a type equal to C's type key or `*` and the pattern
 *   A's id.
 * Entries are unique per (key, source, roleId) and sorted by key, then source, then role id.
 * Throws ScopeNotFoundError for an unknown scope and ResourceNotFoundError for an unknown
 * resource; an unknown subject (or one not of `subjectType`) holds nothing. An external id
 * several subjects share throws AmbiguousSubjectError.
 */
export function effectivePermissions(index: TenantIndex, query: EffectivePermissionsQuery): EffectivePermission[] {
  if (!index.scope(query.scopeId)) throw new ScopeNotFoundError(query.scopeId);
  const resource = query.resourceId !== undefined ? index.resource(query.resourceId) : undefined;
  if (query.resourceId !== undefined && !resource) throw new ResourceNotFoundError(query.resourceId);
  const wantType = query.subjectType || undefined;
  const subjectNode = query.subjectId ? index.subjectNode(query.subjectId) : subjectByExternalId(index, query.subjectExternalId ?? '', wantType);
  if (subjectNode?.row === undefined || (wantType !== undefined && subjectNode.type !== wantType)) return [];

  const path = index.scopePath(query.scopeId);
  const out = new Map<string, EffectivePermission>();
  const decisions = new Map<string, OverrideDecisions | null>();
  const permsOf = (roleId: string): string[] => {
    if (!decisions.has(roleId)) decisions.set(roleId, overrideDecisions(index, roleId, path));
    return rolePermissionIdsAt(index, roleId, decisions.get(roleId) ?? null);
  };
  const put = (e: EffectivePermission) => out.set(`${e.key}\u0000${e.source}\u0000${e.roleId}`, e);

  for (const h of heldRoles(index, subjectNode, path)) {
    for (const pId of permsOf(h.roleId)) {
      const p = index.permission(pId);
      if (!p) continue;
      put({
        key: p.key || `${p.resourceType}:${p.action}:${p.resourcePattern}`,
        resourceType: p.resourceType,
        action: p.action,
        resourcePattern: p.resourcePattern,
        source: h.source,
        roleId: h.roleId,
      });
    }
  }

  const resourceNode = resource ? index.resourceNode(resource.id) : undefined;
  if (resource && resourceNode !== undefined) {
    for (const g of bagRows<OwnershipGrant>(subjectNode.grantsByResource?.get(resourceNode))) {
      if (!grantRoleUsable(index, g.roleId, resource.ownerScopeId)) continue;
      for (const pId of permsOf(g.roleId)) {
        const p = index.permission(pId);
        if (!p) continue;
        const pat = p.resourcePattern;
        if (pat !== '*' && pat !== resource.id && pat !== resource.externalResourceId) continue;
        put({
          key: `${p.resourceType}:${p.action}:${resource.id}`,
          resourceType: p.resourceType,
          action: p.action,
          resourcePattern: resource.id,
          source: 'ownership',
          roleId: g.roleId,
        });
      }
    }
  }

  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...out.values()].sort((a, b) => cmp(a.key, b.key) || cmp(a.source, b.source) || cmp(a.roleId, b.roleId));
}
