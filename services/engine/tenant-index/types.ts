/**
 * The shapes a check reads from the tenant index (nodes, role infos, resource facts), the
 * constants that lay them out, and the one interface every kind of row is kept behind.
 */
import type { EntityKind, OwnershipGrant, Permission, Policy, ResourceScopeLink, Role, RowsByKind, Subject, TagAssignment } from '../model.js';
import type { RowBag } from './bags.js';

/** Most ancestors a scope or resource walk visits (contract §6: hierarchy depth 64). */
export const MAX_HIERARCHY_DEPTH = 64;

/** A scope and its ancestors, nearest first (the scope itself at index 0). */
export interface ScopePath {
  readonly ids: readonly string[];
  readonly set: ReadonlySet<string>;
}

/** A cached path also remembers whether it crosses an override, as of an override version. */
export interface CachedPath extends ScopePath {
  overridesVersion: number;
  hasOverrides: boolean;
}

// --- kinds ---------------------------------------------------------------------------------------

/**
 * What the index does with the rows of one kind. The family that owns the kind implements it;
 * the index holds one per kind (see `TenantIndex`) and calls it instead of switching on kinds.
 */
export interface KindStore<K extends EntityKind> {
  /** Fields that must be strings. */
  readonly required: readonly string[];
  /** Why a row whose required fields are strings is still malformed, or null. */
  invalid(row: Record<string, unknown>): string | null;
  /** The row with this id as the index keeps it, or undefined. */
  get(id: string): RowsByKind[K] | undefined;
  /** Indexes a checked row: replaces the row with its id and that row's derived entries. */
  upsert(row: RowsByKind[K]): void;
  /** Removes the row with this id and its derived entries; nothing when absent. */
  remove(id: string): void;
  /** Number of rows. */
  count(): number;
}

// --- subjects ------------------------------------------------------------------------------------

/**
 * Role assignments joined with their memberships, flattened four strings per assignment:
 * `[assignmentId, membershipId, scopeId, roleId, …]` (one array per subject instead of one
 * object per assignment: fewer cache misses). Scope and role ids are the strings of the scope
 * and role rows when those exist, so the few distinct values stay hot in cache.
 */
export type AssignmentList = readonly string[];
/** Stride of an {@link AssignmentList} and the offsets of its fields. */
export const A_STRIDE = 4;
export const A_ID = 0;
export const A_MEMBERSHIP = 1;
export const A_SCOPE = 2;
export const A_ROLE = 3;

/** Above this many assignments a subject node also keeps them by scope. */
export const ASSIGNMENT_SCAN_LIMIT = 16;
/** Up to this many assignments are also copied into the subject node's own fields. */
export const INLINE_ASSIGNMENTS = 4;

/** What a check reads about one subject. */
export interface SubjectNode {
  readonly row: Subject | undefined;
  /** `row.type`, copied so a check that runs no condition never reads the row. */
  readonly type: string | undefined;
  /** Role assignments of the subject's memberships (small: scanned; see `assignmentsByScope`). */
  readonly assignments: AssignmentList;
  /** The same entries by membership scope, kept only when there are many of them. */
  readonly assignmentsByScope: ReadonlyMap<string, AssignmentList> | undefined;
  /**
   * The scope and role of the first {@link INLINE_ASSIGNMENTS} entries of `assignments`,
   * copied into the node itself (`s0`/`r0` … `s3`/`r3`): most subjects hold a few, and a check
   * then reads no array. `inline` is their number, or -1 when there are more (use the list).
   */
  readonly inline: number;
  readonly s0: string | undefined;
  readonly r0: string | undefined;
  readonly s1: string | undefined;
  readonly r1: string | undefined;
  readonly s2: string | undefined;
  readonly r2: string | undefined;
  readonly s3: string | undefined;
  readonly r3: string | undefined;
  /** Ownership grants of the subject, by resource; undefined when none. */
  readonly grantsByResource: GrantSet | undefined;
  /** Tag assignments targeting the subject. */
  readonly tags: RowBag<TagAssignment> | undefined;
}

/**
 * A subject's ownership grants by resource (see `SubjectGrants`). A resource is named by its
 * node ({@link ResourceNode}, a number): every resource a grant names has a node.
 */
export interface GrantSet {
  /** The grants on the resource numbered `resource`; undefined when none. */
  get(resource: number): RowBag<OwnershipGrant> | undefined;
  /**
   * The role ids of the grants on one resource, written to `out` from index 0 (a role once
   * for each grant): their count. What a decision without an explanation reads, with no row made.
   */
  rolesOn(resource: number, out: string[]): number;
  /** Number of grants. */
  readonly size: number;
  /** Calls `visit` with the resource number of every grant (once per grant, in no particular order). */
  forEachResource(visit: (resource: number) => void): void;
}

/** Up to this many grants a subject keeps them in a flat array, scanned; more go in a map. */
export const GRANT_SCAN_LIMIT = 16;

// --- resources -----------------------------------------------------------------------------------

/** The current key of a resource type, shared by every resource of that type id. */
export interface TypeSlot {
  /** The resource type id. */
  readonly id: string;
  /** Its number, stored in the resource table's hot words (see facts ({@link FACT_FLAGS})). */
  readonly num: number;
  readonly key: string | undefined;
  /** Number of collections for this resource type (any scope): 0 lets a check skip them. */
  readonly collections: number;
}

/**
 * A resource node: its number in the index (reused after the node is dropped). What a check
 * reads about the resource is in columns by that number ({@link ResourceNodeReads}); a
 * service-issued id is kept only as four words (`ResourceNodeReads.idOf` makes the string).
 */
export type ResourceNode = number;

/** What a check reads about a resource node (`TenantIndex.resourceNodes`). */
export interface ResourceNodeReads {
  /** The resource id (made from four words when it is the service's own form). */
  idOf(n: ResourceNode): string;
  /** Two nodes by resource id (code units), without making the ids when both are the service's own form. */
  compareIds(a: ResourceNode, b: ResourceNode): number;
  /** Whether the resource row exists (its fields are kept by the node; see TenantIndex.resource). */
  exists(n: ResourceNode): boolean;
  /** Slot of the row's resource type (its key is undefined while the type does not exist). */
  type(n: ResourceNode): TypeSlot | undefined;
  /** The row's external id. */
  ext(n: ResourceNode): string | undefined;
  /** The row's owner scope id (the scope row's own string when it exists), for the gate. */
  owner(n: ResourceNode): string | undefined;
  /**
   * How many permission rows have a `resourcePattern` equal to this id, plus (while the row
   * exists) how many equal its external id. When 0, no permission can name this resource, so
   * a check looks up only the `*` pattern and never reads the id or external id strings.
   */
  patterns(n: ResourceNode): number;
  /** Links to its parent (one, unless the data is bad). */
  parents(n: ResourceNode): RowBag<ParentLink> | undefined;
  /** The parent node of the chosen link (see TenantIndex.parentOf), or -1 without a parent. */
  up(n: ResourceNode): ResourceNode;
  /** Whether the chosen link's edge cascades (`inherit`). */
  upInherit(n: ResourceNode): boolean;
  /** Policies targeting it directly. */
  policies(n: ResourceNode): RowBag<Policy> | undefined;
  links(n: ResourceNode): RowBag<ResourceScopeLink> | undefined;
  /** Tag assignments targeting it. */
  tags(n: ResourceNode): RowBag<TagAssignment> | undefined;
}

/**
 * A parent edge with the parent's node resolved, so a hierarchy step costs no lookup in the
 * big resource map. The parent node stays alive (see `refs`) as long as a link points at it.
 * The index keeps an edge as its link only: no row object and no id strings of its ends.
 */
export interface ParentLink {
  /** The edge id. */
  readonly id: string;
  /** The edge's `cascade` is `inherit` (else `none`). */
  readonly inherit: boolean;
  /** The edge's `relationshipType` as given (undefined: absent). The edge row is made from the link (`TenantIndex.resourceEdge`). */
  readonly relationshipType: unknown;
  readonly parent: ResourceNode;
  /** The child's node: the same link object is filed under the parent too (see `TenantIndex.childLinks`). */
  readonly child: ResourceNode;
}

/**
 * Resource facts: what a check learns about a resource from its slot in the resource table
 * alone, without reading its node: two int32 words kept current by the index (see
 * `IdTable`). On a large tenant the node is one more trip to DRAM, and the common check
 * (a resource without policies, links or permissions naming it, whose parent is plain, absent
 * or not cascading) needs nothing else.
 *
 * Word {@link FACT_FLAGS}: the `F_*` bits, and the number of its type slot plus one from bit
 * {@link F_TYPE_SHIFT} (0: no type slot). Word {@link FACT_UP_NUM}: the node's `upNum`.
 */
export const FACT_FLAGS = 0;
export const FACT_UP_NUM = 1;
/** The resource row exists. */
export const F_EXISTS = 1;
/** Some policy targets it directly. */
export const F_POLICIES = 2;
/** It has scope links. */
export const F_LINKS = 4;
/** Some permission names it by id or external id (`patterns` > 0). */
export const F_NAMED = 8;
/** It has a parent link. */
export const F_UP = 16;
/** Its parent link cascades (`inherit`). */
export const F_UP_INHERIT = 32;
export const F_TYPE_SHIFT = 8;

// --- roles ---------------------------------------------------------------------------------------

/** An entry of a role's cover index: the role-permission id and its permission row. */
export interface CoverEntry {
  readonly id: string;
  readonly permission: Permission;
}

/** A role's cover index: resourcePattern → action → entries (any type). */
export type CoverIndex = ReadonlyMap<string, ReadonlyMap<string, RowBag<CoverEntry>>>;

/**
 * A role's permissions with pattern `*` (the ones most checks use), flattened for a scan:
 * `[action, type, permission, …]`, the action and type as term numbers of the index (see
 * `TenantIndex.termNum`; {@link ANY_TERM} for `*`). Entries with a named action come
 * first, those with action `*` last, so a scan finds the permission the cover index would.
 * A handful of small integers in one array, where the cover index is two maps deep.
 */
export type StarCover = readonly (number | Permission)[];
export const STAR_STRIDE = 3;
/** Term number of `*` in a {@link StarCover}. */
export const ANY_TERM = -1;
/** Term number of a string no `*`-pattern permission uses. */
export const NO_TERM = -2;

/**
 * What a check reads about one role, behind one lookup: its row (undefined while the role does
 * not exist), its cover index (undefined while it has no permission) and its {@link StarCover}
 * (undefined while it has no permission with pattern `*`).
 */
export interface RoleInfo {
  readonly id: string;
  readonly row: Role | undefined;
  /** `row.scopeId` as the scope row's own string when that exists (compared by reference). */
  readonly scope: string | undefined;
  readonly cover: CoverIndex | undefined;
  readonly star: StarCover | undefined;
}
