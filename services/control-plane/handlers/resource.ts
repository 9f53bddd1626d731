import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import type {
  CreateResourceEdgeRequest, CreateResourceRequest, CreateResourceScopeLinkRequest,
} from '../../../gen/authz/v1/resource_service_pb.js';
import { constraint, invalid, missingReference, notFound } from '../../common/errors.js';
import { rowToMessage, type Row } from '../../store/kinds.js';
import { listPage, loadByIds, pageLimit, type Page, query } from '../../store/read.js';
import type { WriteTx } from '../../store/write.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import {
  Uniques, createMany, deleteOne, getOne, listMany, loadForWrite, tenantOfRef, writeOne, type CreateSpec, type Deps, distinct, refIn } from './kit.js';
import { MAX_DEPTH } from './scope.js';

const CASCADES = ['inherit', 'none'] as const;
const LINK_TYPES = ['share', 'alias', 'mirror'] as const;

// --- resources ------------------------------------------------------------------------------------

/**
 * Resources are the bulk entity (contract target: 10,000 through the batch endpoint within 3× raw
 * INSERTs), so everything an item needs is loaded before the item loop in a fixed number of
 * queries: types, owner scopes with their ancestors, and the (type, external id) pairs taken.
 */
function resources(): CreateSpec<CreateResourceRequest, 'resource'> {
  const chains = new Map<string, { tenantId: string; scopes: Set<string> }>(); // owner scope -> itself + ancestors
  const unique = new Uniques(); // (typeId, externalResourceId)
  let types = new Map<string, Row>();
  let entered: string | undefined; // the tenant b.tenant() has admitted (one per request)
  return {
    kind: 'resource',
    tenantRef: (item) => ['scope', item.ownerScopeId, 'ownerScopeId'],
    async preload(b, items) {
      const typeIds = distinct(items.map((i) => i.resourceTypeId));
      const scopeIds = distinct(items.map((i) => i.ownerScopeId));
      types = await loadByIds(b.em, 'resourceType', typeIds);
      if (scopeIds.length > 0) {
        const rows = await query<{ start: string; id: string; tenant_id: string }>(b.em, `
          with recursive chain(start, id, parent_id, tenant_id, depth) as (
            select id, id, parent_id, tenant_id, 1 from scopes where id in (?)
            union all
            select c.start, s.id, s.parent_id, c.tenant_id, c.depth + 1 from scopes s join chain c on s.id = c.parent_id where c.depth <= ?
          ) select start, id, tenant_id from chain`, [scopeIds, MAX_DEPTH]);
        for (const r of rows) {
          const c = chains.get(r.start) ?? { tenantId: r.tenant_id, scopes: new Set<string>() };
          c.scopes.add(r.id);
          chains.set(r.start, c);
        }
      }
      // One index probe per (tenant, type, external id) of the batch, whatever the table's size
      // or statistics (a plain `in (…)` list may degrade into scanning the tenant's resources).
      const keys = items.flatMap((i) => {
        const tenant = chains.get(i.ownerScopeId)?.tenantId;
        return tenant && i.resourceTypeId && i.externalResourceId ? [{ n: tenant, t: i.resourceTypeId, x: i.externalResourceId }] : [];
      });
      if (keys.length > 0) {
        const rows = await query<{ t: string; x: string }>(b.em, `
          select k.t, k.x from json_to_recordset(?::json) as k(n text, t text, x text)
          cross join lateral (
            select 1 from resources r where r.tenant_id = k.n and r.resource_type_id = k.t and r.external_resource_id = k.x limit 1
          ) hit`, [JSON.stringify(keys)]);
        for (const r of rows) unique.held([r.t, r.x]);
      }
    },
    async build(b, item, p) {
      const id = b.id('resource', item.id, `${p}id`);
      const resourceTypeId = requireString(item.resourceTypeId, `${p}resourceTypeId`);
      const ownerScopeId = requireString(item.ownerScopeId, `${p}ownerScopeId`);
      const externalResourceId = requireString(item.externalResourceId, `${p}externalResourceId`);
      const displayName = optionalString(item.displayName, `${p}displayName`) ?? null;
      const attributes = jsonObject(item.attributes, `${p}attributes`) ?? null;
      const chain = chains.get(ownerScopeId);
      if (!chain) throw missingReference(`${p}ownerScopeId`, 'scope', ownerScopeId);
      if (entered !== chain.tenantId) {
        await b.tenant(chain.tenantId, `${p}ownerScopeId`);
        entered = chain.tenantId;
      }
      // Synchronous from here on: this loop runs 1,000 times per batch.
      const type = types.get(resourceTypeId);
      if (!type) throw missingReference(`${p}resourceTypeId`, 'resource type', resourceTypeId);
      if (type.tenantId !== chain.tenantId) {
        throw constraint(`resource type ${resourceTypeId} belongs to another tenant than the rest of the request`, `${p}resourceTypeId`);
      }
      if (!chain.scopes.has(type.scopeId as string)) {
        throw constraint(
          `resource type "${type.key as string}" is defined at scope ${type.scopeId as string}, which is neither ${ownerScopeId} nor one of its ancestors`,
          `${p}resourceTypeId`,
        );
      }
      unique.claim([resourceTypeId, externalResourceId], `${p}externalResourceId`, `a resource of type ${resourceTypeId} with external id "${externalResourceId}"`);
      return { ...b.base(id, chain.tenantId), resourceTypeId, ownerScopeId, externalResourceId, displayName, attributes };
    },
  };
}

/** Deletes a resource and everything that points at it, row by row so the change log sees each. */
async function deleteResource(tx: WriteTx, id: string) {
  const ids = async (sql: string, params: unknown[]) => (await query<{ id: string }>(tx.em, sql, params)).map((r) => r.id);
  await tx.delete('resourceEdge', await ids('select id from resource_edges where parent_resource_id = ? or child_resource_id = ?', [id, id]));
  await tx.delete('resourceScopeLink', await ids('select id from resource_scope_links where resource_id = ?', [id]));
  await tx.delete('ownershipGrant', await ids('select id from ownership_grants where resource_id = ?', [id]));
  await tx.delete('tagAssignment', await ids(`select id from tag_assignments where target_type = 'resource' and target_id = ?`, [id]));
  await tx.delete('policy', await ids(`select id from resource_policies where target_id = ? and target->>'kind' = 'resource'`, [id]));
  await tx.delete('resource', [id]);
}

// --- resource hierarchy -------------------------------------------------------------------------

/**
 * Edges are checked against the store's hierarchy around every resource the batch names (loaded
 * up front: the chains above them and the subtrees below them) plus the edges created earlier in
 * the batch, so the one-parent, cycle and depth rules see the batch as if it were already written.
 */
function resourceEdges(): CreateSpec<CreateResourceEdgeRequest, 'resourceEdge'> {
  const parentOf = new Map<string, string>();
  const childrenOf = new Map<string, string[]>();
  const allowed = new Set<string>(); // `${parentTypeId}\0${childTypeId}`
  const link = (parent: string, child: string) => {
    if (parentOf.has(child)) return;
    parentOf.set(child, parent);
    const kids = childrenOf.get(parent) ?? [];
    kids.push(child);
    childrenOf.set(parent, kids);
  };
  /** Levels of the subtree under `root` (1 for a leaf), counted up to MAX_DEPTH + 1. */
  const height = (root: string): number => {
    let level = [root];
    let h = 0;
    while (level.length > 0 && h <= MAX_DEPTH) {
      h++;
      level = level.flatMap((n) => childrenOf.get(n) ?? []);
    }
    return h;
  };
  return {
    kind: 'resourceEdge',
    tenantRef: (item) => ['resource', item.parentResourceId, 'parentResourceId'],
    async preload(b, items) {
      const ids = distinct(items.flatMap((i) => [i.parentResourceId, i.childResourceId]));
      if (ids.length === 0) return;
      await b.preload('resource', ids);
      const edges = await query<{ parent: string; child: string }>(b.em, `
        with recursive up(parent, child, depth) as (
          select parent_resource_id, child_resource_id, 1 from resource_edges where child_resource_id in (?)
          union all
          select e.parent_resource_id, e.child_resource_id, u.depth + 1 from resource_edges e join up u on e.child_resource_id = u.parent where u.depth <= ?
        ), down(parent, child, depth) as (
          select parent_resource_id, child_resource_id, 1 from resource_edges where parent_resource_id in (?)
          union all
          select e.parent_resource_id, e.child_resource_id, d.depth + 1 from resource_edges e join down d on e.parent_resource_id = d.child where d.depth <= ?
        ) select parent, child from up union select parent, child from down`, [ids, MAX_DEPTH, ids, MAX_DEPTH]);
      for (const e of edges) link(e.parent, e.child);
      const pairs = await query<{ p: string; c: string }>(b.em, `
        select parent_type_id as p, child_type_id as c from resource_type_edges
        where parent_type_id in (select resource_type_id from resources where id in (?))`, [ids]);
      for (const r of pairs) allowed.add(`${r.p}\0${r.c}`);
    },
    async build(b, item, p) {
      const id = b.id('resourceEdge', item.id, `${p}id`);
      const parentId = requireString(item.parentResourceId, `${p}parentResourceId`);
      const childId = requireString(item.childResourceId, `${p}childResourceId`);
      const relationshipType = optionalString(item.relationshipType, `${p}relationshipType`) ?? null;
      const cascade = oneOf(item.cascade, CASCADES, `${p}cascade`, 'none');
      const parent = await b.ref('resource', parentId, `${p}parentResourceId`);
      const tenantId = parent.tenantId as string;
      await b.tenant(tenantId, `${p}parentResourceId`);
      const child = await refIn(b, 'resource', childId, `${p}childResourceId`, tenantId);
      if (parentId === childId) throw constraint('a resource cannot be its own parent', `${p}childResourceId`);
      const current = parentOf.get(childId);
      if (current !== undefined) {
        throw constraint(`resource ${childId} already has parent ${current}; a resource has at most one parent`, `${p}childResourceId`);
      }
      if (!allowed.has(`${parent.resourceTypeId as string}\0${child.resourceTypeId as string}`)) {
        const pt = await b.ref('resourceType', parent.resourceTypeId as string, `${p}parentResourceId`);
        const ct = await b.ref('resourceType', child.resourceTypeId as string, `${p}childResourceId`);
        throw constraint(
          `the resource type hierarchy does not allow type "${pt.key as string}" (${pt.id as string}) to contain type "${ct.key as string}" (${ct.id as string})`,
          `${p}childResourceId`,
        );
      }
      let above = 0; // resources from the root down to the parent, inclusive
      for (let cur: string | undefined = parentId; cur !== undefined && above <= MAX_DEPTH; cur = parentOf.get(cur)) {
        if (cur === childId) throw constraint(`making ${parentId} the parent of ${childId} would create a cycle`, `${p}childResourceId`);
        above++;
      }
      const depth = above + height(childId);
      if (depth > MAX_DEPTH) {
        throw constraint(`the edge would make the hierarchy ${depth} levels deep; at most ${MAX_DEPTH} are allowed`, `${p}childResourceId`);
      }
      link(parentId, childId);
      return { ...b.base(id, tenantId), parentResourceId: parentId, childResourceId: childId, relationshipType, cascade };
    },
  };
}

/** Resources by id, in the order given (ids that vanished meanwhile are skipped). */
async function resourcesInOrder(em: EntityManager, ids: string[]) {
  const rows = await loadByIds(em, 'resource', ids);
  return ids.flatMap((id) => (rows.has(id) ? [rowToMessage('resource', rows.get(id)!)] : []));
}

/** All descendants, breadth first (by depth, then id), capped at MAX_DEPTH levels; keyset-paged. */
async function descendants(deps: Deps, ctx: HandlerContext, id: string, page: Page) {
  await tenantOfRef(deps, ctx, 'resource', id, 'id');
  const limit = pageLimit(page);
  const listing = `descendants ${id}`;
  let after: [number, string] = [0, ''];
  if (page.cursor) {
    const raw = deps.db.cursors.decode(listing, page.cursor);
    const at = raw.indexOf(':');
    const depth = Number(raw.slice(0, at));
    if (at < 1 || !Number.isInteger(depth)) throw invalid('cursor', 'is not a cursor this service issued');
    after = [depth, raw.slice(at + 1)];
  }
  const em = deps.db.orm.em.fork();
  const rows = await query<{ id: string; depth: number }>(em, `
    with recursive d(id, depth) as (
      select child_resource_id, 1 from resource_edges where parent_resource_id = ?
      union all
      select e.child_resource_id, d.depth + 1 from resource_edges e join d on e.parent_resource_id = d.id where d.depth < ?
    ) select id, depth from d where (depth, id) > (?, ?) order by depth, id limit ?`,
  [id, MAX_DEPTH, after[0], after[1], limit + 1]);
  const more = rows.length > limit;
  if (more) rows.length = limit;
  const last = rows[rows.length - 1];
  return {
    resources: await resourcesInOrder(em, rows.map((r) => r.id)),
    nextCursor: more ? deps.db.cursors.encode(listing, `${last.depth}:${last.id}`) : '',
  };
}

/** Ancestors nearest first, with the cascade of the edge leading down from each. */
async function ancestors(deps: Deps, ctx: HandlerContext, id: string, page: Page) {
  await tenantOfRef(deps, ctx, 'resource', id, 'resourceId');
  const limit = pageLimit(page);
  const listing = `ancestors ${id}`;
  let after = 0;
  if (page.cursor) {
    after = Number(deps.db.cursors.decode(listing, page.cursor));
    if (!Number.isInteger(after) || after < 1) throw invalid('cursor', 'is not a cursor this service issued');
  }
  const rows = await query<{ id: string; cascade: string; depth: number; display_name: string | null; resource_type_id: string }>(
    deps.db.orm.em.fork(), `
    with recursive a(id, cascade, depth) as (
      select parent_resource_id, cascade, 1 from resource_edges where child_resource_id = ?
      union all
      select e.parent_resource_id, e.cascade, a.depth + 1 from resource_edges e join a on e.child_resource_id = a.id where a.depth < ?
    ) select a.id, a.cascade, a.depth, r.display_name, r.resource_type_id from a join resources r on r.id = a.id
      where a.depth > ? order by a.depth limit ?`,
    [id, MAX_DEPTH, after, limit + 1],
  );
  const more = rows.length > limit;
  if (more) rows.length = limit;
  return {
    resourceAncestors: rows.map((r) => ({
      id: r.id, displayName: r.display_name ?? undefined, cascade: r.cascade, resourceTypeId: r.resource_type_id, depth: Number(r.depth),
    })),
    nextCursor: more ? deps.db.cursors.encode(listing, String(rows[rows.length - 1].depth)) : '',
  };
}

// --- resource scope links -------------------------------------------------------------------------

function scopeLinks(): CreateSpec<CreateResourceScopeLinkRequest, 'resourceScopeLink'> {
  const unique = new Uniques(); // (resourceId, scopeId, linkType)
  return {
    kind: 'resourceScopeLink',
    tenantRef: (item) => ['resource', item.resourceId, 'resourceId'],
    async preload(b, items) {
      const resourceIds = distinct(items.map((i) => i.resourceId));
      await b.preload('resource', resourceIds);
      await b.preload('scope', items.map((i) => i.scopeId));
      if (resourceIds.length === 0) return;
      const rows = await query<{ r: string; s: string; t: string }>(
        b.em, 'select resource_id as r, scope_id as s, link_type as t from resource_scope_links where resource_id in (?)', [resourceIds],
      );
      for (const r of rows) unique.held([r.r, r.s, r.t]);
    },
    async build(b, item, p) {
      const id = b.id('resourceScopeLink', item.id, `${p}id`);
      const resourceId = requireString(item.resourceId, `${p}resourceId`);
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const linkType = oneOf(item.linkType, LINK_TYPES, `${p}linkType`);
      const metadata = jsonObject(item.metadata, `${p}metadata`) ?? null;
      const resource = await b.ref('resource', resourceId, `${p}resourceId`);
      const tenantId = resource.tenantId as string;
      await b.tenant(tenantId, `${p}resourceId`);
      await refIn(b, 'scope', scopeId, `${p}scopeId`, tenantId);
      unique.claim([resourceId, scopeId, linkType], `${p}scopeId`, `a ${linkType} link of resource ${resourceId} to scope ${scopeId}`);
      return { ...b.base(id, tenantId), resourceId, scopeId, linkType, metadata };
    },
  };
}

// --- the service ------------------------------------------------------------------------------------

export function resourceService(deps: Deps): ServiceImpl<typeof ResourceService> {
  return {
    async createResource(req, ctx) {
      return { resource: (await createMany(deps, ctx, resources(), [req], false))[0] };
    },
    async batchCreateResources(req, ctx) {
      return { resources: await createMany(deps, ctx, resources(), req.items, true) };
    },
    async getResource(req, ctx) {
      return { resource: await getOne(deps, ctx, 'resource', requireString(req.id, 'id')) };
    },
    async listResources(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'resource', { ownerScopeId: scopeId }, req);
      return { resources: items, nextCursor };
    },
    async updateResource(req, ctx) {
      const id = requireString(req.id, 'id');
      const patch: Row = {};
      if (req.displayName !== undefined) patch.displayName = optionalString(req.displayName, 'displayName') ?? null;
      if (req.attributes !== undefined) patch.attributes = jsonObject(req.attributes, 'attributes');
      const row = await writeOne(deps, ctx, async (tx, principal) => {
        const cur = await loadForWrite(tx, principal, 'resource', id);
        if (Object.keys(patch).length > 0) await tx.update('resource', cur, patch);
        return { ...cur, ...patch };
      });
      return { resource: rowToMessage('resource', row) };
    },
    async deleteResource(req, ctx) {
      return deleteOne(deps, ctx, 'resource', req.id, deleteResource);
    },
    async listResourceChildren(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'resource', id, 'id');
      const em = deps.db.orm.em.fork();
      const { rows, nextCursor } = await listPage(em, deps.db.cursors, 'resourceEdge', { parentResourceId: id }, req);
      return { resources: await resourcesInOrder(em, rows.map((e) => e.childResourceId as string)), nextCursor };
    },
    async getResourceParent(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'resource', id, 'id');
      const em = deps.db.orm.em.fork();
      const [edge] = await query<{ parent: string }>(em, 'select parent_resource_id as parent from resource_edges where child_resource_id = ?', [id]);
      const [parent] = edge ? await resourcesInOrder(em, [edge.parent]) : [];
      if (!parent) throw notFound('parent of resource', id, 'id');
      return { resource: parent };
    },
    async listResourceDescendants(req, ctx) {
      return descendants(deps, ctx, requireString(req.id, 'id'), req);
    },
    async createResourceEdge(req, ctx) {
      return { resourceEdge: (await createMany(deps, ctx, resourceEdges(), [req], false))[0] };
    },
    async batchCreateResourceEdges(req, ctx) {
      return { resourceEdges: await createMany(deps, ctx, resourceEdges(), req.items, true) };
    },
    async listResourceAncestors(req, ctx) {
      return ancestors(deps, ctx, requireString(req.resourceId, 'resourceId'), req);
    },
    async deleteResourceEdge(req, ctx) {
      const parentId = requireString(req.parentResourceId, 'parentResourceId');
      const childId = requireString(req.childResourceId, 'childResourceId');
      await writeOne(deps, ctx, async (tx, principal) => {
        const [edge] = await query<{ id: string }>(
          tx.em, 'select id from resource_edges where parent_resource_id = ? and child_resource_id = ?', [parentId, childId],
        );
        if (!edge) throw notFound('resource edge', `${parentId} -> ${childId}`, 'childResourceId');
        await loadForWrite(tx, principal, 'resourceEdge', edge.id, 'childResourceId');
        await tx.delete('resourceEdge', [edge.id]);
      });
      return {};
    },
    async createResourceScopeLink(req, ctx) {
      return { resourceScopeLink: (await createMany(deps, ctx, scopeLinks(), [req], false))[0] };
    },
    async batchCreateResourceScopeLinks(req, ctx) {
      return { resourceScopeLinks: await createMany(deps, ctx, scopeLinks(), req.items, true) };
    },
    async listResourceScopeLinks(req, ctx) {
      const resourceId = optionalString(req.resourceId, 'resourceId');
      const scopeId = optionalString(req.scopeId, 'scopeId');
      if (!resourceId && !scopeId) throw invalid('resourceId', 'is required (or scopeId)');
      const where: Row = {};
      if (resourceId) {
        await tenantOfRef(deps, ctx, 'resource', resourceId, 'resourceId');
        where.resourceId = resourceId;
      }
      if (scopeId) {
        await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
        where.scopeId = scopeId;
      }
      const { items, nextCursor } = await listMany(deps, 'resourceScopeLink', where, req);
      return { resourceScopeLinks: items, nextCursor };
    },
    async updateResourceScopeLink(req, ctx) {
      const id = requireString(req.id, 'id');
      const patch: Row = req.metadata !== undefined ? { metadata: jsonObject(req.metadata, 'metadata') } : {};
      const row = await writeOne(deps, ctx, async (tx, principal) => {
        const cur = await loadForWrite(tx, principal, 'resourceScopeLink', id);
        if (Object.keys(patch).length > 0) await tx.update('resourceScopeLink', cur, patch);
        return { ...cur, ...patch };
      });
      return { resourceScopeLink: rowToMessage('resourceScopeLink', row) };
    },
    async deleteResourceScopeLink(req, ctx) {
      return deleteOne(deps, ctx, 'resourceScopeLink', req.id);
    },
  };
}
