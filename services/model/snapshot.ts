/**
 * A tenant index straight from a model file, without a server: the rows a checked model makes,
 * with ids of its own, in the engine's snapshot form (engine/model.ts). Decision tests run the
 * engine on it offline; `ids` maps each entity's identity (`<kind> <identity>`) to its id, so a
 * test names subjects, scopes and resources as the file does.
 */
import type { Namespace } from '../common/ids.js';
import type { EntityKind as EngineKind, TenantSnapshot } from '../engine/model.js';
import { ENTITY_KINDS, ROOT, qualified, type Entities, type EntityKind } from './entities.js';
import { apiFields, idsOf } from './rows.js';

const NAMESPACE: Record<EntityKind, Namespace> = {
  scopeType: 'scope_type', scope: 'scope', resourceType: 'resource_type', resourceTypeEdge: 'resource_type_edge', permission: 'permission',
  role: 'role', rolePermission: 'role_permission', scopeOverride: 'scope_override', tagGroup: 'tag_group', tag: 'tag', tagBinding: 'tag_binding',
  subject: 'subject', membership: 'membership', roleAssignment: 'role_assignment', resource: 'resource', resourceEdge: 'resource_edge',
  scopeLink: 'rsl', ownershipGrant: 'ownership_grant', tagAssignment: 'tag_assignment', collection: 'collection', policy: 'policy',
};

/** The engine's name of each kind it holds (scope types and the resource type hierarchy only shape creates). */
const ENGINE_KIND: Partial<Record<EntityKind, EngineKind>> = {
  scope: 'scope', subject: 'subject', role: 'role', permission: 'permission', rolePermission: 'role_permission', membership: 'membership',
  roleAssignment: 'role_assignment', scopeOverride: 'scope_override', ownershipGrant: 'ownership_grant', resourceType: 'resource_type',
  resource: 'resource', scopeLink: 'resource_scope_link', resourceEdge: 'resource_edge', collection: 'collection', policy: 'policy',
  tagGroup: 'tag_group', tag: 'tag', tagAssignment: 'tag_assignment', tagBinding: 'tag_binding',
};

export interface ModelSnapshot {
  tenantId: string;
  rootScopeId: string;
  snapshot: TenantSnapshot;
  /** `<kind> <identity>` -> the id the snapshot gives the entity (the root scope under `/`). */
  ids: Map<string, string>;
}

/** The snapshot of a checked model's entities (a CheckedModel's `entities`), at revision 1. */
export function modelSnapshot(entities: Entities, tenantId = 'tenant_model'): ModelSnapshot {
  const rootScopeId = 'scope_root';
  const ids = new Map<string, string>([[qualified('scope', JSON.stringify([ROOT])), rootScopeId]]);
  for (const kind of ENTITY_KINDS) {
    let n = 0;
    for (const e of entities.get(kind)!.values()) ids.set(qualified(kind, e.key), `${NAMESPACE[kind]}_m${++n}`);
  }
  // Scopes may use scope types the file does not list (built in, or the server's): named by name.
  for (const e of entities.get('scope')!.values()) {
    const type = JSON.stringify([e.fields.type as string]);
    if (!ids.has(qualified('scopeType', type))) ids.set(qualified('scopeType', type), `scope_type_${e.fields.type as string}`);
  }
  const id = idsOf(ids);
  const rows: Record<string, Record<string, unknown>[]> = {
    scope: [{ id: rootScopeId, tenantId, parentId: null, typeId: 'scope_type_tenant', name: 'root' }],
  };
  for (const kind of ENTITY_KINDS) {
    const engineKind = ENGINE_KIND[kind];
    if (!engineKind) continue;
    for (const e of entities.get(kind)!.values()) {
      const row: Record<string, unknown> = { ...apiFields(kind, e, id(kind, e.key), tenantId, id), tenantId };
      if (kind === 'permission') row.key = (JSON.parse(e.key) as string[])[1];
      if (kind === 'collection') row.matchDefinition = row.match;
      if (kind === 'tagGroup') row.isLocked = e.fields.locked;
      if (kind === 'resource') Object.assign(row, { createdAt: new Date(0).toISOString(), createdBy: 'model' });
      (rows[engineKind] ??= []).push(row);
    }
  }
  return { tenantId, rootScopeId, snapshot: { revision: 1, rows: rows as TenantSnapshot['rows'] }, ids };
}
