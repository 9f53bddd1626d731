/**
 * Role resolution shared by `evaluate` and `effectivePermissions`, so the two cannot disagree.
 *
 * Roles held at scope S (contract §5, "Scope inheritance of roles"):
 * - every role assigned to the subject's memberships at S or at an ancestor of S (source
 *   `role`), and every role bound by a tag binding at S or an ancestor of S to a tag the subject
 *   carries (source `tag_binding`; the binding acts as a membership at its scope);
 * - a source counts only when its role exists and is defined at the source scope or one of its
 *   ancestors ("a role defined at a scope is usable in its descendants");
 * - a `block` override for the role at a scope strictly below the source scope and at or above
 *   S stops that source (other sources of the same role are unaffected). A block at the source
 *   scope itself does not stop a role assigned there.
 *
 * Permissions of role R at S: R's role permissions, changed by the `add`/`remove` overrides for
 * R defined at S or at any ancestor of S, wherever R was assigned ("at that scope and below").
 * For one permission, the override nearest to S decides; at one scope `remove` beats `add`.
 * Overrides do not depend on the source, so R has the same permission set at S whether it
 * comes from a membership, a tag binding or an ownership grant.
 */
import {
  ANY_TERM,
  A_MEMBERSHIP,
  A_ROLE,
  A_SCOPE,
  A_STRIDE,
  bagRows,
  type CoverEntry,
  type CoverIndex,
  type RoleInfo,
  type RowBag,
  type ScopePath,
  STAR_STRIDE,
  type StarCover,
  type SubjectNode,
  type TenantIndex,
} from './tenant-index/mod.js';
import type { Permission, TagBinding } from './model.js';

export type RoleSource = 'role' | 'tag_binding';

export interface HeldRole {
  roleId: string;
  source: RoleSource;
  /** Scope of the membership or binding that gives the role. */
  sourceScopeId: string;
  /** Membership id (source `role`) or tag binding id (source `tag_binding`). */
  viaId: string;
}

/** Why a source was not counted (for explanations). */
export interface SkippedRole {
  roleId: string;
  source: RoleSource;
  sourceScopeId: string;
  viaId: string;
  why: 'role_missing' | 'role_not_usable_at_source' | 'blocked';
  blockedAt?: string;
}

/** True when any scope of the path defines an override (most paths have none). */
export function pathHasOverrides(index: TenantIndex, path: ScopePath): boolean {
  return index.pathHasOverrides(path);
}

/**
 * A reusable list of roles: `items[0..n)` are the entries (later slots are stale). Truncating
 * a plain array (`length = 0`) is a slow builtin call; resetting `n` is not.
 */
export interface RoleList {
  items: RoleInfo[];
  n: number;
}

/** Appends a role to the list unless it is already there. */
export function addRole(list: RoleList, info: RoleInfo): void {
  const items = list.items;
  for (let k = 0; k < list.n; k++) if (items[k] === info) return;
  items[list.n++] = info;
}

/**
 * The roles of {@link heldRoles}, distinct and in the same order, written into `out` (reset
 * first) as their RoleInfo without allocating: the decision path's version. Returns their
 * number.
 */
export function collectRoles(index: TenantIndex, subject: SubjectNode | undefined, path: ScopePath, out: RoleList): number {
  out.n = 0;
  if (!subject) return 0;
  const tagIds = subject.tags === undefined ? undefined : index.existingTagIds(subject.tags);
  const overrides = pathHasOverrides(index, path);
  const ids = path.ids;
  const inline = subject.inline;
  const assignments = subject.assignments;
  const byScope = subject.assignmentsByScope;
  for (let i = 0; i < ids.length; i++) {
    const at = ids[i];
    if (inline >= 0) {
      // The node's own copy of its few entries, in list order: no array read.
      if (inline > 0 && subject.s0 === at) holdInto(index, path, i, subject.r0 as string, overrides, out);
      if (inline > 1 && subject.s1 === at) holdInto(index, path, i, subject.r1 as string, overrides, out);
      if (inline > 2 && subject.s2 === at) holdInto(index, path, i, subject.r2 as string, overrides, out);
      if (inline > 3 && subject.s3 === at) holdInto(index, path, i, subject.r3 as string, overrides, out);
    } else {
      const list = byScope !== undefined ? byScope.get(at) : assignments;
      if (list !== undefined) {
        for (let k = 0; k < list.length; k += A_STRIDE) {
          if (list[k + A_SCOPE] === at) holdInto(index, path, i, list[k + A_ROLE], overrides, out);
        }
      }
    }
    if (tagIds !== undefined) {
      for (const tagId of tagIds) {
        for (const b of bagRows<TagBinding>(index.bindingsAt(tagId, at))) {
          holdInto(index, path, i, b.roleId, overrides, out);
        }
      }
    }
  }
  return out.n;
}

function holdInto(index: TenantIndex, path: ScopePath, i: number, roleId: string, overrides: boolean, out: RoleList): void {
  const info = index.roleInfo(roleId);
  if (info !== undefined && sourceStatus(index, path, i, info, overrides) === HELD) addRole(out, info);
}

/** Every (role, source) the subject holds at `path.ids[0]`, nearest source first. */
export function heldRoles(index: TenantIndex, subject: SubjectNode | undefined, path: ScopePath, skipped?: SkippedRole[]): HeldRole[] {
  const out: HeldRole[] = [];
  if (!subject) return out;
  const tagIds = subject.tags === undefined ? undefined : index.existingTagIds(subject.tags);
  const overrides = pathHasOverrides(index, path);
  const ids = path.ids;
  const assignments = subject.assignments;
  const byScope = subject.assignmentsByScope;
  for (let i = 0; i < ids.length; i++) {
    const at = ids[i];
    // A handful of entries is scanned (cheaper than a map per subject); many use the map.
    const list = byScope !== undefined ? byScope.get(at) : assignments;
    if (list !== undefined) {
      for (let k = 0; k < list.length; k += A_STRIDE) {
        if (list[k + A_SCOPE] === at) consider(index, path, i, list[k + A_ROLE], 'role', list[k + A_MEMBERSHIP], overrides, out, skipped);
      }
    }
    if (tagIds !== undefined) {
      for (const tagId of tagIds) {
        for (const b of bagRows<TagBinding>(index.bindingsAt(tagId, at))) {
          consider(index, path, i, b.roleId, 'tag_binding', b.id, overrides, out, skipped);
        }
      }
    }
  }
  return out;
}

function consider(
  index: TenantIndex,
  path: ScopePath,
  i: number,
  roleId: string,
  source: RoleSource,
  viaId: string,
  overrides: boolean,
  out: HeldRole[],
  skipped: SkippedRole[] | undefined,
): void {
  const sourceScopeId = path.ids[i];
  const status = sourceStatus(index, path, i, index.roleInfo(roleId), overrides);
  if (status === HELD) out.push({ roleId, source, sourceScopeId, viaId });
  else if (status === ROLE_MISSING) skipped?.push({ roleId, source, sourceScopeId, viaId, why: 'role_missing' });
  else if (status === NOT_USABLE) skipped?.push({ roleId, source, sourceScopeId, viaId, why: 'role_not_usable_at_source' });
  else skipped?.push({ roleId, source, sourceScopeId, viaId, why: 'blocked', blockedAt: blockingScope(index, path, i, roleId) });
}

const HELD = 0;
const ROLE_MISSING = 1;
const NOT_USABLE = 2;
const BLOCKED = 3;

/** Whether the source at path index i gives its role (HELD), and if not, why. */
function sourceStatus(index: TenantIndex, path: ScopePath, i: number, info: RoleInfo | undefined, overrides: boolean): number {
  if (info === undefined || info.row === undefined) return ROLE_MISSING;
  const roleId = info.id;
  const scope = info.scope as string;
  // The source's ancestors are usually the rest of the path; the source's own path settles
  // the rare cases (a path cut at the depth limit or by a cycle).
  if (path.ids.indexOf(scope, i) < 0 && !index.scopePath(path.ids[i]).set.has(scope)) return NOT_USABLE;
  if (overrides && blockingScope(index, path, i, roleId) !== undefined) return BLOCKED;
  return HELD;
}

/** The scope, between S (inclusive) and the source at path index i (exclusive), that blocks the role. */
function blockingScope(index: TenantIndex, path: ScopePath, i: number, roleId: string): string | undefined {
  for (let j = 0; j < i; j++) {
    const s = path.ids[j];
    for (const o of bagRows(index.overridesAt(s)?.get(roleId))) if (o.mode === 'block') return s;
  }
  return undefined;
}

/**
 * Whether an ownership grant's role gives anything on a resource owned by `ownerScopeId`: the
 * role exists and is defined at that scope or an ancestor of it. The API refuses other grants;
 * checking here too makes a grant whose scopes were moved apart later fail closed, as a role
 * assignment does.
 */
export function grantRoleUsable(index: TenantIndex, roleId: string, ownerScopeId: string | undefined): boolean {
  const info = index.roleInfo(roleId);
  if (info === undefined || info.row === undefined || ownerScopeId === undefined) return false;
  return index.scopePath(ownerScopeId).set.has(info.scope as string);
}

/** Permission id → the deciding add/remove override for a role along a path; null when none. */
export type OverrideDecisions = ReadonlyMap<string, 'add' | 'remove'>;

/** Nearest override wins; at one scope removes are recorded before adds, so remove wins. */
export function overrideDecisions(index: TenantIndex, roleId: string, path: ScopePath): OverrideDecisions | null {
  let out: Map<string, 'add' | 'remove'> | null = null;
  for (const s of path.ids) {
    const here = index.overridesAt(s)?.get(roleId);
    if (here === undefined) continue;
    for (const mode of ['remove', 'add'] as const) {
      for (const o of bagRows(here)) {
        if (o.mode !== mode) continue;
        for (const p of o.permissionIds) {
          out ??= new Map();
          if (!out.has(p)) out.set(p, mode);
        }
      }
    }
  }
  return out;
}

/** The existing permission ids role R has at the end of `path` (overrides applied). */
export function rolePermissionIdsAt(index: TenantIndex, roleId: string, decisions: OverrideDecisions | null): string[] {
  const base = index.rolePermissionIds(roleId);
  if (!decisions) return base;
  const out = base.filter((p) => decisions.get(p) !== 'remove');
  for (const [p, d] of decisions) {
    if (d === 'add' && index.permission(p) && !out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * What a permission must cover: its action equals `action` or is `*`; its resourceType is `*`
 * or equals `type` (`type: null` accepts any type, for a request without a resource;
 * `type: undefined`, a resource whose type is unknown, accepts only `*`); its resourcePattern
 * is one of `p0`..`p2` (unused slots are undefined). Plain fields rather than arrays, so the
 * decision path can reuse one query object instead of allocating.
 */
export interface CoverQuery {
  action: string;
  type: string | null | undefined;
  p0: string | undefined;
  p1: string | undefined;
  p2: string | undefined;
  /** `action` and `type` as term numbers of the index (set by {@link setTerms}). */
  actionTerm: number;
  typeTerm: number;
}

/** `typeTerm` of a query without a resource: every type is accepted. */
const ALL_TYPES = -3;

/** Sets a query's term numbers from its action and type (after those are set). */
export function setTerms(index: TenantIndex, q: CoverQuery): void {
  q.actionTerm = index.termNum(q.action);
  q.typeTerm = q.type === null ? ALL_TYPES : q.type === undefined ? NO_TYPE : index.termNum(q.type);
}

/** `typeTerm` of a resource whose type is unknown: only type `*` is accepted. */
const NO_TYPE = -4;

/** The permission-cover rule of contract §5 on one permission row. */
export function permissionCovers(p: Permission, q: CoverQuery): boolean {
  if (p.action !== q.action && p.action !== '*') return false;
  if (q.type !== null && p.resourceType !== '*' && p.resourceType !== q.type) return false;
  const pattern = p.resourcePattern;
  return pattern === q.p0 || pattern === q.p1 || pattern === q.p2;
}

/**
 * A permission of role R (overrides applied) that covers the query, or null. Pattern `*` is a
 * scan of the role's {@link StarCover}; any other pattern looks up the role's cover index by
 * the pattern, then the action and `*`. Every hit is re-checked against the permission row.
 */
export function roleCovers(
  index: TenantIndex,
  roleId: string,
  q: CoverQuery,
  decisions: OverrideDecisions | null,
): Permission | null {
  return coversWith(index, index.roleInfo(roleId), q, decisions);
}

/**
 * For an explanation: of role R's permissions (overrides applied) that cover the query, the one
 * with the smallest id. The decision path stops at the first it finds, which depends on the order
 * the index received its rows in; an explanation names the same permission in every process.
 */
export function namedCover(index: TenantIndex, roleId: string, q: CoverQuery, decisions: OverrideDecisions | null, found: Permission): Permission {
  let named = found;
  for (const id of rolePermissionIdsAt(index, roleId, decisions)) {
    if (id >= named.id) continue;
    const p = index.permission(id);
    if (p !== undefined && permissionCovers(p, q)) named = p;
  }
  return named;
}

/** {@link roleCovers} given the role's RoleInfo (no lookup by id). */
export function coversWith(index: TenantIndex, info: RoleInfo | undefined, q: CoverQuery, decisions: OverrideDecisions | null): Permission | null {
  if (info !== undefined) {
    const p =
      (q.p0 !== undefined ? patternCover(info, q.p0, q, decisions) : null) ??
      (q.p1 !== undefined ? patternCover(info, q.p1, q, decisions) : null) ??
      (q.p2 !== undefined ? patternCover(info, q.p2, q, decisions) : null);
    if (p) return p;
  }
  if (decisions) {
    for (const [pId, d] of decisions) {
      if (d !== 'add') continue;
      const p = index.permission(pId);
      if (p && permissionCovers(p, q)) return p;
    }
  }
  return null;
}

function patternCover(info: RoleInfo, pattern: string, q: CoverQuery, decisions: OverrideDecisions | null): Permission | null {
  if (pattern === '*') return info.star === undefined ? null : starCover(info.star, q, decisions);
  return info.cover === undefined ? null : coverAt(info.cover, pattern, q, decisions);
}

/** The first permission of a {@link StarCover} whose action and type cover the query (pattern `*`). */
function starCover(star: StarCover, q: CoverQuery, decisions: OverrideDecisions | null): Permission | null {
  const qa = q.actionTerm;
  const qt = q.typeTerm;
  for (let k = 0; k < star.length; k += STAR_STRIDE) {
    const a = star[k] as number;
    const t = star[k + 1] as number;
    if ((a === qa || a === ANY_TERM) && (t === ANY_TERM || t === qt || qt === ALL_TYPES)) {
      const p = accept(star[k + 2] as Permission, q, decisions);
      if (p) return p;
    }
  }
  return null;
}

/** A permission filed under `pattern` in a role's cover index that covers the query. */
function coverAt(
  byPattern: CoverIndex,
  pattern: string,
  q: CoverQuery,
  decisions: OverrideDecisions | null,
): Permission | null {
  const byAction = byPattern.get(pattern);
  if (byAction === undefined) return null;
  const p = firstCovering(byAction.get(q.action), q, decisions);
  if (p || q.action === '*') return p;
  return firstCovering(byAction.get('*'), q, decisions);
}

function firstCovering(bag: RowBag<CoverEntry> | undefined, q: CoverQuery, decisions: OverrideDecisions | null): Permission | null {
  if (bag === undefined) return null;
  if (!(bag instanceof Map)) return accept((bag as CoverEntry).permission, q, decisions);
  for (const e of bag.values()) {
    const p = accept(e.permission, q, decisions);
    if (p) return p;
  }
  return null;
}

function accept(p: Permission, q: CoverQuery, decisions: OverrideDecisions | null): Permission | null {
  if (!permissionCovers(p, q)) return null;
  if (decisions && decisions.get(p.id) === 'remove') return null;
  return p;
}
