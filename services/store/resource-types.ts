/**
 * Resource types and collections beyond single rows: uniqueness reads, what still uses a type,
 * the listing of a type's edges, and the deletes that take dependent rows along.
 */
import type { Database } from './db.js';
import { listPage, query, type Page, type PageResult } from './read.js';
import { entityManagerOf, type StoreSource } from './source.js';
import type { WriteTx } from './write.js';

export interface ResourceTypeReads {
  /** The resource types with any of the keys, in any tenant. */
  resourceTypesWithKeys(keys: string[]): Promise<{ id: string; tenantId: string; key: string }[]>;
  /** The stored edges from any of the parent types. */
  typeEdgesFrom(parentTypeIds: string[]): Promise<{ parentTypeId: string; childTypeId: string }[]>;
  /** What still uses the type (resources first, then collections); undefined when nothing does. */
  usesOfType(typeId: string): Promise<'resources' | 'collections' | undefined>;
}

export function resourceTypeReads(source: StoreSource): ResourceTypeReads {
  const em = entityManagerOf(source);
  return {
    async resourceTypesWithKeys(keys) {
      if (keys.length === 0) return [];
      return query(em, 'select id, tenant_id as "tenantId", key from resource_types where key in (?)', [keys]);
    },
    async typeEdgesFrom(parentTypeIds) {
      if (parentTypeIds.length === 0) return [];
      return query(em, 'select parent_type_id as "parentTypeId", child_type_id as "childTypeId" from resource_type_edges where parent_type_id in (?)', [parentTypeIds]);
    },
    async usesOfType(typeId) {
      const [use] = await query<{ what: 'resources' | 'collections' }>(em, `
        select 'resources' as what from resources where resource_type_id = ?
        union all select 'collections' from resource_collections where resource_type_id = ? limit 1`, [typeId, typeId]);
      return use?.what;
    },
  };
}

/** A page of the edges from or to a resource type, in id order (see rows.ts listRows). */
export function listResourceTypeEdges(db: Database, typeId: string, page: Page): Promise<PageResult> {
  return listPage(db.orm.em.fork(), db.cursors, 'resourceTypeEdge', { $or: [{ parentTypeId: typeId }, { childTypeId: typeId }] }, page);
}

/** Deletes a resource type and its edges; the caller has checked that nothing uses it. */
export async function deleteResourceTypeWithEdges(tx: WriteTx, typeId: string): Promise<void> {
  const edges = await query<{ id: string }>(tx.em, 'select id from resource_type_edges where parent_type_id = ? or child_type_id = ?', [typeId, typeId]);
  await tx.delete('resourceTypeEdge', edges.map((e) => e.id));
  await tx.delete('resourceType', [typeId]);
}

/** Deletes a collection and the policies that target it. */
export async function deleteCollectionWithPolicies(tx: WriteTx, collectionId: string): Promise<void> {
  const targeting = await query<{ id: string }>(tx.em, `select id from resource_policies where target_id = ? and target->>'kind' = 'collection'`, [collectionId]);
  await tx.delete('policy', targeting.map((r) => r.id));
  await tx.delete('collection', [collectionId]);
}
