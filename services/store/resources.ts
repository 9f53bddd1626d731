/**
 * Resources and their hierarchy as the handlers check and list them: external ids taken, the
 * edges around the resources a batch names, the type pairs allowed, ancestors and descendants
 * (keyset-paged), and a resource's delete with everything that points at it.
 */
import { invalid } from '../common/errors.js';
import type { Database } from './db.js';
import { rowToMessage, type MessageOf } from './kinds.js';
import { loadByIds, pageLimit, query, type Page } from './read.js';
import { MAX_DEPTH } from './scopes.js';
import { entityManagerOf, type StoreSource } from './source.js';
import type { WriteTx } from './write.js';

/** A resource's identity within its tenant: its type and external id. */
export interface ExternalKey {
  tenantId: string;
  typeId: string;
  externalId: string;
}

export interface ResourceReads {
  /** The keys among `keys` that a stored resource already holds (one index probe each). */
  takenExternalKeys(keys: ExternalKey[]): Promise<{ typeId: string; externalId: string }[]>;
  /** Every stored edge within MAX_DEPTH levels above or below any of the resources. */
  edgesAround(resourceIds: string[]): Promise<{ parent: string; child: string }[]>;
  /** The (parent type, child type) pairs the type hierarchy allows under the types of the resources. */
  typePairsUnder(resourceIds: string[]): Promise<{ parentTypeId: string; childTypeId: string }[]>;
  /** The stored scope links of the resources. */
  scopeLinksOf(resourceIds: string[]): Promise<{ resourceId: string; scopeId: string; linkType: string }[]>;
  /** The id of the resource's parent; undefined for a root or an unknown resource. */
  parentOf(resourceId: string): Promise<string | undefined>;
  /** The id of the edge from `parentId` to `childId`; undefined when there is none. */
  edgeBetween(parentId: string, childId: string): Promise<string | undefined>;
  /** Resources by id as messages, in the order given; ids without a resource are left out. */
  inOrder(ids: string[]): Promise<MessageOf<'resource'>[]>;
}

export function resourceReads(source: StoreSource): ResourceReads {
  const em = entityManagerOf(source);
  return {
    async takenExternalKeys(keys) {
      if (keys.length === 0) return [];
      // One index probe per (tenant, type, external id), whatever the table's size or statistics
      // (a plain `in (…)` list may degrade into scanning the tenant's resources).
      return query<{ typeId: string; externalId: string }>(em, `
        select k.t as "typeId", k.x as "externalId" from json_to_recordset(?::json) as k(n text, t text, x text)
        cross join lateral (
          select 1 from resources r where r.tenant_id = k.n and r.resource_type_id = k.t and r.external_resource_id = k.x limit 1
        ) hit`, [JSON.stringify(keys.map((k) => ({ n: k.tenantId, t: k.typeId, x: k.externalId })))]);
    },
    async edgesAround(ids) {
      if (ids.length === 0) return [];
      return query<{ parent: string; child: string }>(em, `
        with recursive up(parent, child, depth) as (
          select parent_resource_id, child_resource_id, 1 from resource_edges where child_resource_id in (?)
          union all
          select e.parent_resource_id, e.child_resource_id, u.depth + 1 from resource_edges e join up u on e.child_resource_id = u.parent where u.depth <= ?
        ), down(parent, child, depth) as (
          select parent_resource_id, child_resource_id, 1 from resource_edges where parent_resource_id in (?)
          union all
          select e.parent_resource_id, e.child_resource_id, d.depth + 1 from resource_edges e join down d on e.parent_resource_id = d.child where d.depth <= ?
        ) select parent, child from up union select parent, child from down`, [ids, MAX_DEPTH, ids, MAX_DEPTH]);
    },
    async typePairsUnder(ids) {
      if (ids.length === 0) return [];
      return query<{ parentTypeId: string; childTypeId: string }>(em, `
        select parent_type_id as "parentTypeId", child_type_id as "childTypeId" from resource_type_edges
        where parent_type_id in (select resource_type_id from resources where id in (?))`, [ids]);
    },
    async scopeLinksOf(ids) {
      if (ids.length === 0) return [];
      return query<{ resourceId: string; scopeId: string; linkType: string }>(em,
        'select resource_id as "resourceId", scope_id as "scopeId", link_type as "linkType" from resource_scope_links where resource_id in (?)', [ids]);
    },
    async parentOf(id) {
      const [edge] = await query<{ parent: string }>(em, 'select parent_resource_id as parent from resource_edges where child_resource_id = ?', [id]);
      return edge?.parent;
    },
    async edgeBetween(parentId, childId) {
      const [edge] = await query<{ id: string }>(em, 'select id from resource_edges where parent_resource_id = ? and child_resource_id = ?', [parentId, childId]);
      return edge?.id;
    },
    async inOrder(ids) {
      const rows = await loadByIds(em, 'resource', ids);
      return ids.flatMap((id) => (rows.has(id) ? [rowToMessage('resource', rows.get(id)!)] : []));
    },
  };
}

/**
 * A page of a resource's descendants, breadth first (by depth, then id), at most MAX_DEPTH
 * levels down. `invalid_argument` for a limit outside 1..MAX_PAGE or a cursor this listing did
 * not issue.
 */
export async function listDescendants(db: Database, resourceId: string, page: Page): Promise<{ resources: MessageOf<'resource'>[]; nextCursor: string }> {
  const limit = pageLimit(page);
  const listing = `descendants ${resourceId}`;
  let after: [number, string] = [0, ''];
  if (page.cursor) {
    const raw = db.cursors.decode(listing, page.cursor);
    const at = raw.indexOf(':');
    const depth = Number(raw.slice(0, at));
    if (at < 1 || !Number.isInteger(depth)) throw invalid('cursor', 'is not a cursor this service issued');
    after = [depth, raw.slice(at + 1)];
  }
  const em = db.orm.em.fork();
  const rows = await query<{ id: string; depth: number }>(em, `
    with recursive d(id, depth) as (
      select child_resource_id, 1 from resource_edges where parent_resource_id = ?
      union all
      select e.child_resource_id, d.depth + 1 from resource_edges e join d on e.parent_resource_id = d.id where d.depth < ?
    ) select id, depth from d where (depth, id) > (?, ?) order by depth, id limit ?`,
  [resourceId, MAX_DEPTH, after[0], after[1], limit + 1]);
  const more = rows.length > limit;
  if (more) rows.length = limit;
  const last = rows[rows.length - 1];
  return {
    resources: await resourceReads(db).inOrder(rows.map((r) => r.id)),
    nextCursor: more ? db.cursors.encode(listing, `${last.depth}:${last.id}`) : '',
  };
}

/** An ancestor of a resource, with the cascade of the edge leading down from it. */
export interface ResourceAncestor {
  id: string;
  displayName?: string;
  cascade: string;
  resourceTypeId: string;
  depth: number;
}

/**
 * A page of a resource's ancestors, nearest first, at most MAX_DEPTH. `invalid_argument` for a
 * limit outside 1..MAX_PAGE or a cursor this listing did not issue.
 */
export async function listAncestors(db: Database, resourceId: string, page: Page): Promise<{ resourceAncestors: ResourceAncestor[]; nextCursor: string }> {
  const limit = pageLimit(page);
  const listing = `ancestors ${resourceId}`;
  let after = 0;
  if (page.cursor) {
    after = Number(db.cursors.decode(listing, page.cursor));
    if (!Number.isInteger(after) || after < 1) throw invalid('cursor', 'is not a cursor this service issued');
  }
  const rows = await query<{ id: string; cascade: string; depth: number; display_name: string | null; resource_type_id: string }>(db.orm.em.fork(), `
    with recursive a(id, cascade, depth) as (
      select parent_resource_id, cascade, 1 from resource_edges where child_resource_id = ?
      union all
      select e.parent_resource_id, e.cascade, a.depth + 1 from resource_edges e join a on e.child_resource_id = a.id where a.depth < ?
    ) select a.id, a.cascade, a.depth, r.display_name, r.resource_type_id from a join resources r on r.id = a.id
      where a.depth > ? order by a.depth limit ?`,
  [resourceId, MAX_DEPTH, after, limit + 1]);
  const more = rows.length > limit;
  if (more) rows.length = limit;
  return {
    resourceAncestors: rows.map((r) => ({
      id: r.id, displayName: r.display_name ?? undefined, cascade: r.cascade, resourceTypeId: r.resource_type_id, depth: Number(r.depth),
    })),
    nextCursor: more ? db.cursors.encode(listing, String(rows[rows.length - 1].depth)) : '',
  };
}

/**
 * Deletes a resource and everything that points at it (its edges, scope links, ownership grants,
 * tag assignments and the policies that target it), row by row so the change log sees each.
 * The transaction must have entered the resource's tenant.
 */
export async function deleteResourceWithDependents(tx: WriteTx, id: string): Promise<void> {
  const ids = async (sql: string, params: unknown[]) => (await query<{ id: string }>(tx.em, sql, params)).map((r) => r.id);
  await tx.delete('resourceEdge', await ids('select id from resource_edges where parent_resource_id = ? or child_resource_id = ?', [id, id]));
  await tx.delete('resourceScopeLink', await ids('select id from resource_scope_links where resource_id = ?', [id]));
  await tx.delete('ownershipGrant', await ids('select id from ownership_grants where resource_id = ?', [id]));
  await tx.delete('tagAssignment', await ids(`select id from tag_assignments where target_type = 'resource' and target_id = ?`, [id]));
  await tx.delete('policy', await ids(`select id from resource_policies where target_id = ? and target->>'kind' = 'resource'`, [id]));
  await tx.delete('resource', [id]);
}
