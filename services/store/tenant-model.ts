/**
 * A tenant's rows as a model file is made of them (every kind a model names, the global scope
 * types, the subjects of the tenant's API keys), read in one transaction: the apply's own (under
 * its tenant lock), or a read-only snapshot for plan and export, so that every kind is read at
 * the same revision.
 */
import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../common/errors.js';
import type { Database } from './db.js';
import type { KindName, Row } from './kinds.js';
import { query } from './read.js';
import { rowReads } from './rows.js';
import { WriteTx } from './write.js';

/** The store kind of each kind a model names (the model calls resource scope links `scopeLink`). */
export const MODEL_STORE_KINDS = {
  scope: 'scope', resourceType: 'resourceType', resourceTypeEdge: 'resourceTypeEdge', permission: 'permission', role: 'role',
  rolePermission: 'rolePermission', scopeOverride: 'scopeOverride', tagGroup: 'tagGroup', tag: 'tag', tagBinding: 'tagBinding',
  subject: 'subject', membership: 'membership', roleAssignment: 'roleAssignment', resource: 'resource', resourceEdge: 'resourceEdge',
  scopeLink: 'resourceScopeLink', ownershipGrant: 'ownershipGrant', tagAssignment: 'tagAssignment', collection: 'collection', policy: 'policy',
} as const satisfies Record<string, KindName>;

export type ModelStoreKind = keyof typeof MODEL_STORE_KINDS;

export interface TenantModelRows {
  tenantId: string;
  revision: number;
  rootScopeId: string;
  scopeTypes: { id: string; name: string; description: string }[];
  rows: Record<ModelStoreKind, Row[]>;
  apiKeySubjectIds: string[];
}

/**
 * Every row of the tenant's model kinds, read in `tx`. `not_found` for an unknown tenant; the
 * revision is the tenant's committed one (for a transaction that has entered the tenant, the
 * revision it entered at).
 */
export async function readTenantModelRows(tx: WriteTx, tenantId: string): Promise<TenantModelRows> {
  const reads = rowReads(tx);
  const tenant = await reads.byId('tenant', tenantId);
  if (!tenant) throw notFound('tenant', tenantId, 'tenantId');
  const rows = {} as Record<ModelStoreKind, Row[]>;
  for (const [kind, storeKind] of Object.entries(MODEL_STORE_KINDS) as [ModelStoreKind, KindName][]) {
    rows[kind] = await reads.where(storeKind, { tenantId });
  }
  const scopeTypes = (await reads.where('scopeType', {})).map((t) => ({ id: t.id as string, name: t.name as string, description: t.description as string }));
  const keys = await query<{ subject_id: string }>(tx.em, 'select subject_id from api_keys where tenant_id = ?', [tenantId]);
  return {
    tenantId, revision: Number(tenant.revision), rootScopeId: tenant.scopeId as string, scopeTypes, rows,
    apiKeySubjectIds: keys.map((k) => k.subject_id),
  };
}

/**
 * Sibling scopes that share a name (each clash with its count and its first two ids), found by an index-backed query before the whole tenant is
 * read: a tenant a model cannot name is refused for the cost of one query, not of reading every
 * row (the full read finds the same problem, with the paths, when there is none of these).
 */
export async function nameClashes(tx: WriteTx, tenantId: string, limit: number): Promise<{ kind: 'scope' | 'collection'; parentId?: string; name: string; count: number; ids: string[] }[]> {
  const rows = await query<{ kind: 'scope' | 'collection'; parent_id: string | null; name: string; count: string | number; ids: string[] }>(tx.em,
    `(select 'scope' as kind, parent_id, name, count(*) as count, (array_agg(id order by id))[1:2] as ids from scopes
       where tenant_id = ? and parent_id is not null group by parent_id, name having count(*) > 1 order by parent_id, name limit ?)
     union all
     (select 'collection' as kind, null as parent_id, name, count(*) as count, (array_agg(id order by id))[1:2] as ids from resource_collections
       where tenant_id = ? group by name having count(*) > 1 order by name limit ?)`, [tenantId, limit, tenantId, limit]);
  return rows.slice(0, limit).map((r) => ({ kind: r.kind, ...(r.parent_id ? { parentId: r.parent_id } : {}), name: r.name, count: Number(r.count), ids: r.ids }));
}

/**
 * Runs `fn` in a read-only, repeatable-read transaction: every read sees one committed state.
 * The transaction it gets writes nothing (PostgreSQL refuses a write in it).
 */
export async function inReadSnapshot<T>(db: Database, fn: (tx: WriteTx) => Promise<T>): Promise<T> {
  return db.orm.em.fork().transactional(async (em) => fn(new WriteTx(em as EntityManager)), {
    isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true,
  });
}
