/**
 * The request's resource as the decision path sees it (resolution and the reachability gate):
 * a resource the tenant holds, an unknown external id, or none. Interpretations (evaluate.ts):
 * an external id and type key naming several resources resolves to the one owned nearest to the
 * scope along its ancestors, else the smallest id; the gate lets a request through when the
 * owner scope or a linked scope is the evaluation scope or an ancestor of it.
 */
import {
  FACT_FLAGS,
  FACT_UP_NUM,
  F_EXISTS,
  F_LINKS,
  F_TYPE_SHIFT,
  bagRows,
  type ResourceNode,
  type ScopePath,
  type TenantIndex,
  type TypeSlot,
} from './tenant-index/mod.js';
import type { Resource, ResourceScopeLink } from './model.js';
import { cmp } from './order.js';

export type GateMode = 'off' | 'links-fallback' | 'strict';

export type ResourceRef = { resourceId: string } | { externalResourceId: string; resourceType: string };

/**
 * A resource the tenant holds, as first resolved: its slot facts (see `FACT_FLAGS` in
 * index.ts), enough for the common check, and its node's number. The node's columns, more
 * trips to DRAM on a large tenant, are read only on a leg that needs more (policies, links, a
 * parent to walk, a permission naming it, an explanation).
 */
export interface KnownTarget {
  kind: 'known';
  /** The resource id. */
  id: string;
  slot: number;
  /** Its node (what grants name it by), read from the slot. */
  num: ResourceNode;
  flags: number;
  upNum: number;
  type: TypeSlot | undefined;
  typeKey: string | undefined;
}

/** How the request's resource resolved. */
export type Target = { kind: 'none' } | KnownTarget | { kind: 'external'; externalResourceId: string; typeKey: string };

/** The row of a known target (it exists: resolution checked). */
export function rowOf(index: TenantIndex, t: KnownTarget): Resource {
  return index.resourceRow(t.num);
}

const NO_RESOURCE: Target = { kind: 'none' };

/** How `ref` resolves at the scope whose path is `path`; null for a `resourceId` the tenant does not hold. */
export function resolveTarget(index: TenantIndex, ref: ResourceRef | undefined, path: ScopePath): Target | null {
  if (!ref) return NO_RESOURCE;
  if ('resourceId' in ref && typeof ref.resourceId === 'string') return knownTarget(index, ref.resourceId, undefined);
  const { externalResourceId, resourceType } = ref as { externalResourceId: string; resourceType: string };
  const candidates = index.resourcesByExternalId(resourceType, externalResourceId);
  if (candidates.length === 0) return { kind: 'external', externalResourceId, typeKey: resourceType };
  return knownTarget(index, pickCandidate(candidates, path).id, resourceType);
}

/** The target of an existing resource from its slot facts (null when its row does not exist). */
function knownTarget(index: TenantIndex, id: string, typeKey: string | undefined): KnownTarget | null {
  const slot = index.resourceSlot(id);
  if (slot < 0) return null;
  const flags = index.resourceFact(slot, FACT_FLAGS);
  if ((flags & F_EXISTS) === 0) return null;
  const type = index.typeSlotAt((flags >>> F_TYPE_SHIFT) - 1);
  return { kind: 'known', id, slot, num: index.resourceNodeAt(slot), flags, upNum: index.resourceFact(slot, FACT_UP_NUM), type, typeKey: typeKey ?? type?.key };
}

/** Several resources under one external id and type key: nearest owner on the path, else smallest id. */
function pickCandidate(candidates: Resource[], path: ScopePath): Resource {
  if (candidates.length === 1) return candidates[0];
  const byId = [...candidates].sort((a, b) => cmp(a.id, b.id));
  for (const s of path.ids) {
    const owned = byId.find((r) => r.ownerScopeId === s);
    if (owned) return owned;
  }
  return byId[0];
}

/** Whether the gate lets the request reach its resource (gate is not `off`). */
export function gateReachable(index: TenantIndex, target: Target, path: ScopePath, gate: GateMode): boolean {
  if (target.kind === 'external') return gate !== 'strict';
  if (target.kind !== 'known') return true;
  if (gate === 'links-fallback' && (target.flags & F_LINKS) === 0) return true;
  const nodes = index.resourceNodes;
  const links = nodes.links(target.num);
  if (path.set.has(nodes.owner(target.num) as string)) return true;
  for (const l of bagRows<ResourceScopeLink>(links)) if (path.set.has(l.scopeId)) return true;
  return false;
}
