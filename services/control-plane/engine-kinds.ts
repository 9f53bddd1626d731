/** How the engine's entity kinds are stored: what a tenant index and a Watch snapshot are read from. */
import { ENTITY_KINDS, type EntityKind } from '../engine/mod.js';
import type { KindName } from '../store/kinds.js';

/** The store kind (KINDS key) of each engine kind. */
export const STORE_KIND: Record<EntityKind, KindName> = {
  scope: 'scope', subject: 'subject', role: 'role', permission: 'permission', role_permission: 'rolePermission',
  membership: 'membership', role_assignment: 'roleAssignment', scope_override: 'scopeOverride',
  ownership_grant: 'ownershipGrant', resource_type: 'resourceType', resource: 'resource',
  resource_scope_link: 'resourceScopeLink', resource_edge: 'resourceEdge', collection: 'collection',
  policy: 'policy', tag_group: 'tagGroup', tag: 'tag', tag_assignment: 'tagAssignment', tag_binding: 'tagBinding',
};

/** Every engine kind in the engine's order, with its store kind (tenantRows reads them so). */
export const ENGINE_STORE_KINDS: readonly (readonly [EntityKind, KindName])[] = ENTITY_KINDS.map((k) => [k, STORE_KIND[k]] as const);
