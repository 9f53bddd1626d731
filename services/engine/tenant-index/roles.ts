/**
 * Roles, permissions, role permissions and scope overrides. A role's permissions are kept as a
 * cover index (resourcePattern → action → entries) and, for pattern `*`, as a flat
 * {@link StarCover}, both behind one {@link RoleInfo} lookup.
 */
import type { Permission, Role, RolePermission, ScopeOverride } from '../model.js';
import { bagAdd, bagDelete, bagIds, bagRows, nested, rbAdd, rbAdd2, rbDelete, rbDelete2, type Multi, type MutableRowBag } from './bags.js';
import type { ResourceNodes } from './resource-nodes.js';
import { RowTable } from './row-table.js';
import type { ScopeFamily } from './scopes.js';
import { ANY_TERM, NO_TERM, type CachedPath, type CoverEntry, type ScopePath, type StarCover } from './types.js';

export interface MutableRoleInfo {
  readonly id: string;
  row: Role | undefined;
  scope: string | undefined;
  cover: Map<string, Map<string, MutableRowBag<CoverEntry>>> | undefined;
  star: StarCover | undefined;
}

export class RoleFamily {
  readonly rpByRole: Multi = new Map();
  readonly rpByPermission: Multi = new Map();
  /**
   * role → its row and cover index (resourcePattern → action → entries). A check looks up the
   * few patterns that can cover the resource (`*`, and its external id and id when a permission
   * names them) and the action or `*`, then verifies the type on the row: no key building, no
   * scan of the role's permissions.
   */
  readonly infos = new Map<string, MutableRoleInfo>();
  /**
   * Term numbers of the actions and type keys of permissions with pattern `*` (see
   * {@link StarCover}). Never shrinks: a term outlives its last permission, harmlessly.
   */
  private readonly terms = new Map<string, number>();
  readonly overridesByScopeRole = new Map<string, Map<string, MutableRowBag<ScopeOverride>>>();
  /** Bumped on every override change; invalidates the paths' cached override flag. */
  private overridesVersion = 0;

  constructor(
    private readonly scopes: ScopeFamily,
    private readonly resources: ResourceNodes,
  ) {}

  readonly roles = new RowTable<'role'>({
    required: ['id', 'scopeId'],
    index: (r) => {
      const info = this.infoFor(r.id);
      info.row = r;
      info.scope = this.scopes.str(r.scopeId);
    },
    unindex: (r) => {
      const info = this.infos.get(r.id);
      if (info) {
        info.row = undefined;
        info.scope = undefined;
        this.pruneInfo(info);
      }
    },
  });

  readonly permissions = new RowTable<'permission'>({
    required: ['id', 'action', 'resourceType', 'resourcePattern'],
    index: (p) => {
      for (const rpId of bagIds(this.rpByPermission.get(p.id))) {
        const rp = this.rolePermissions.rows.get(rpId);
        if (rp) this.addCover(rp, p);
      }
      this.resources.countPattern(p.resourcePattern, 1);
    },
    unindex: (p) => {
      for (const rpId of bagIds(this.rpByPermission.get(p.id))) {
        const rp = this.rolePermissions.rows.get(rpId);
        if (rp) this.deleteCover(rp, p);
      }
      this.resources.countPattern(p.resourcePattern, -1);
    },
  });

  readonly rolePermissions = new RowTable<'role_permission'>({
    required: ['id', 'roleId', 'permissionId'],
    slim: (rp) => ({ id: rp.id, roleId: this.str(rp.roleId), permissionId: this.permissions.rows.get(rp.permissionId)?.id ?? rp.permissionId }),
    index: (rp) => {
      bagAdd(this.rpByRole, rp.roleId, rp.id);
      bagAdd(this.rpByPermission, rp.permissionId, rp.id);
      const p = this.permissions.rows.get(rp.permissionId);
      if (p) this.addCover(rp, p);
    },
    unindex: (rp) => {
      bagDelete(this.rpByRole, rp.roleId, rp.id);
      bagDelete(this.rpByPermission, rp.permissionId, rp.id);
      const p = this.permissions.rows.get(rp.permissionId);
      if (p) this.deleteCover(rp, p);
    },
  });

  readonly overrides = new RowTable<'scope_override'>({
    required: ['id', 'scopeId', 'roleId', 'mode'],
    invalid: (r) => {
      if (!['block', 'add', 'remove'].includes(r.mode as string)) return 'scope_override.mode is invalid';
      if (!Array.isArray(r.permissionIds) || !r.permissionIds.every((p) => typeof p === 'string')) {
        return 'scope_override.permissionIds must be an array of strings';
      }
      return null;
    },
    index: (o) => {
      rbAdd2(this.overridesByScopeRole, o.scopeId, o.roleId, o);
      this.overridesVersion++;
    },
    unindex: (o) => {
      rbDelete2(this.overridesByScopeRole, o.scopeId, o.roleId, o.id);
      this.overridesVersion++;
    },
  });

  /** The role row's own id string when the role exists, else `id` (see `RowHooks.slim`). */
  str(id: string): string {
    return this.roles.rows.get(id)?.id ?? id;
  }

  /**
   * The number of an action or type key in the {@link StarCover}s, or {@link NO_TERM} when no
   * permission with pattern `*` uses it (then only entries with `*` there can match it).
   */
  termNum(term: string): number {
    return this.terms.get(term) ?? NO_TERM;
  }

  /** Ids of the existing permissions attached to a role (no overrides applied). */
  rolePermissionIds(roleId: string): string[] {
    const out: string[] = [];
    for (const rpId of bagIds(this.rpByRole.get(roleId))) {
      const rp = this.rolePermissions.rows.get(rpId);
      if (rp && this.permissions.rows.has(rp.permissionId) && !out.includes(rp.permissionId)) out.push(rp.permissionId);
    }
    return out;
  }

  /**
   * True when any scope of the path defines an override. Cached on the path and recomputed
   * only after an override changed anywhere (overrides are rare; most paths have none).
   */
  pathHasOverrides(path: ScopePath): boolean {
    const p = path as CachedPath;
    if (p.overridesVersion !== this.overridesVersion) {
      p.hasOverrides = p.ids.some((s) => this.overridesByScopeRole.has(s));
      p.overridesVersion = this.overridesVersion;
    }
    return p.hasOverrides;
  }

  /** Builds a role's {@link StarCover} from its cover index (interning new terms). */
  starCoverOf(info: MutableRoleInfo): StarCover | undefined {
    const byAction = info.cover?.get('*');
    if (byAction === undefined) return undefined;
    const out: (number | Permission)[] = [];
    const push = (bag: MutableRowBag<CoverEntry>) => {
      for (const e of bagRows<CoverEntry>(bag)) {
        const p = e.permission;
        out.push(this.intern(p.action), this.intern(p.resourceType), p);
      }
    };
    for (const [action, bag] of byAction) if (action !== '*') push(bag);
    const any = byAction.get('*');
    if (any !== undefined) push(any);
    return out;
  }

  private infoFor(id: string): MutableRoleInfo {
    let info = this.infos.get(id);
    if (!info) this.infos.set(id, (info = { id, row: undefined, scope: undefined, cover: undefined, star: undefined }));
    return info;
  }

  private pruneInfo(info: MutableRoleInfo): void {
    if (info.row === undefined && info.cover === undefined) this.infos.delete(info.id);
  }

  private addCover(rp: RolePermission, p: Permission): void {
    const info = this.infoFor(rp.roleId);
    info.cover ??= new Map<string, Map<string, MutableRowBag<CoverEntry>>>();
    rbAdd(nested(info.cover, p.resourcePattern), p.action, { id: rp.id, permission: p });
    if (p.resourcePattern === '*') info.star = this.starCoverOf(info);
  }

  private deleteCover(rp: RolePermission, p: Permission): void {
    const info = this.infos.get(rp.roleId);
    const byPattern = info?.cover;
    if (!info || !byPattern) return;
    const byAction = byPattern.get(p.resourcePattern);
    if (byAction) {
      rbDelete(byAction, p.action, rp.id);
      if (byAction.size === 0) byPattern.delete(p.resourcePattern);
    }
    if (p.resourcePattern === '*') info.star = this.starCoverOf(info);
    if (byPattern.size === 0) {
      info.cover = undefined;
      this.pruneInfo(info);
    }
  }

  private intern(term: string): number {
    if (term === '*') return ANY_TERM;
    let n = this.terms.get(term);
    if (n === undefined) this.terms.set(term, (n = this.terms.size));
    return n;
  }
}
