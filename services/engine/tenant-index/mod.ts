/**
 * The tenant index: one tenant's rows and the derived maps a decision reads (see
 * tenant-index.ts), and the shapes and constants the decision path reads them with.
 */
export { TenantIndex, type TenantIndexBuilder, type TenantIndexFamilies } from './tenant-index.js';
export { bagRows, type RowBag } from './bags.js';
export { canonicalTime } from './resource-nodes.js';
export { SubjectGrants } from './subject-grants.js';
export {
  MAX_HIERARCHY_DEPTH,
  type ScopePath,
  type AssignmentList,
  A_STRIDE,
  A_ID,
  A_MEMBERSHIP,
  A_SCOPE,
  A_ROLE,
  ASSIGNMENT_SCAN_LIMIT,
  INLINE_ASSIGNMENTS,
  type SubjectNode,
  type GrantSet,
  GRANT_SCAN_LIMIT,
  type TypeSlot,
  type ResourceNode,
  type ResourceNodeReads,
  type ParentLink,
  FACT_FLAGS,
  FACT_UP_NUM,
  F_EXISTS,
  F_POLICIES,
  F_LINKS,
  F_NAMED,
  F_UP,
  F_UP_INHERIT,
  F_TYPE_SHIFT,
  type CoverEntry,
  type CoverIndex,
  type StarCover,
  STAR_STRIDE,
  ANY_TERM,
  NO_TERM,
  type RoleInfo,
} from './types.js';
