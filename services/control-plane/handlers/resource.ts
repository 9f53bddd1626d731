import type { ServiceImpl } from '@connectrpc/connect';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import type {
  CreateResourceEdgeRequest, CreateResourceRequest, CreateResourceScopeLinkRequest,
} from '../../../gen/authz/v1/resource_service_pb.js';
import { constraint, invalid, missingReference, notFound } from '../../common/errors.js';
import { rowToMessage, type Row } from '../../store/kinds.js';
import { deleteResourceWithDependents, listAncestors, listDescendants, resourceReads } from '../../store/resources.js';
import { listRows } from '../../store/rows.js';
import { MAX_DEPTH, scopeReads } from '../../store/scopes.js';
import { CASCADES, LINK_TYPES } from '../../common/vocabulary.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { getOne, listMany, tenantOfRef } from './reads.js';
import { deleteOne, loadForWrite, writeOne } from './writes.js';


// --- resources ------------------------------------------------------------------------------------

/**
 * Resources are the bulk entity (contract target: 10,000 through the batch endpoint within 3× raw
 * INSERTs), so everything an item needs is loaded before the item loop in a fixed number of
 * queries: types, owner scopes with their ancestors, and the (type, external id) pairs taken.
 */
export function resources(): CreateSpec<CreateResourceRequest, 'resource'> {
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
      types = await b.rows.byIds('resourceType', typeIds);
      for (const [start, chain] of await scopeReads(b.tx).chains(scopeIds)) {
        chains.set(start, { tenantId: chain.tenantId, scopes: new Set(chain.ids) });
      }
      const keys = items.flatMap((i) => {
        const tenantId = chains.get(i.ownerScopeId)?.tenantId;
        return tenantId && i.resourceTypeId && i.externalResourceId ? [{ tenantId, typeId: i.resourceTypeId, externalId: i.externalResourceId }] : [];
      });
      for (const k of await resourceReads(b.tx).takenExternalKeys(keys)) unique.held([k.typeId, k.externalId]);
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
      // b.base's fields written out: a spread costs more than the rest of the item's checks.
      return { id, tenantId: chain.tenantId, createdAt: b.now, createdBy: b.principal.subjectId, resourceTypeId, ownerScopeId, externalResourceId, displayName, attributes };
    },
  };
}

// --- resource hierarchy -------------------------------------------------------------------------

/**
 * Edges are checked against the store's hierarchy around every resource the batch names (loaded
 * up front: the chains above them and the subtrees below them) plus the edges created earlier in
 * the batch, so the one-parent, cycle and depth rules see the batch as if it were already written.
 */
export function resourceEdges(): CreateSpec<CreateResourceEdgeRequest, 'resourceEdge'> {
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
      const resources = resourceReads(b.tx);
      for (const e of await resources.edgesAround(ids)) link(e.parent, e.child);
      for (const t of await resources.typePairsUnder(ids)) allowed.add(`${t.parentTypeId}\0${t.childTypeId}`);
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

// --- resource scope links -------------------------------------------------------------------------

export function scopeLinks(): CreateSpec<CreateResourceScopeLinkRequest, 'resourceScopeLink'> {
  const unique = new Uniques(); // (resourceId, scopeId, linkType)
  return {
    kind: 'resourceScopeLink',
    tenantRef: (item) => ['resource', item.resourceId, 'resourceId'],
    async preload(b, items) {
      const resourceIds = distinct(items.map((i) => i.resourceId));
      await b.preload('resource', resourceIds);
      await b.preload('scope', items.map((i) => i.scopeId));
      for (const l of await resourceReads(b.tx).scopeLinksOf(resourceIds)) unique.held([l.resourceId, l.scopeId, l.linkType]);
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
      return deleteOne(deps, ctx, 'resource', req.id, deleteResourceWithDependents);
    },
    async listResourceChildren(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'resource', id, 'id');
      const { rows, nextCursor } = await listRows(deps.db, 'resourceEdge', { parentResourceId: id }, req);
      return { resources: await resourceReads(deps.db).inOrder(rows.map((e) => e.childResourceId as string)), nextCursor };
    },
    async getResourceParent(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'resource', id, 'id');
      const resources = resourceReads(deps.db);
      const parentId = await resources.parentOf(id);
      const [parent] = parentId === undefined ? [] : await resources.inOrder([parentId]);
      if (!parent) throw notFound('parent of resource', id, 'id');
      return { resource: parent };
    },
    async listResourceDescendants(req, ctx) {
      const id = requireString(req.id, 'id');
      await tenantOfRef(deps, ctx, 'resource', id, 'id');
      return listDescendants(deps.db, id, req);
    },
    async createResourceEdge(req, ctx) {
      return { resourceEdge: (await createMany(deps, ctx, resourceEdges(), [req], false))[0] };
    },
    async batchCreateResourceEdges(req, ctx) {
      return { resourceEdges: await createMany(deps, ctx, resourceEdges(), req.items, true) };
    },
    async listResourceAncestors(req, ctx) {
      const id = requireString(req.resourceId, 'resourceId');
      await tenantOfRef(deps, ctx, 'resource', id, 'resourceId');
      return listAncestors(deps.db, id, req);
    },
    async deleteResourceEdge(req, ctx) {
      const parentId = requireString(req.parentResourceId, 'parentResourceId');
      const childId = requireString(req.childResourceId, 'childResourceId');
      await writeOne(deps, ctx, async (tx, principal) => {
        const edgeId = await resourceReads(tx).edgeBetween(parentId, childId);
        if (edgeId === undefined) throw notFound('resource edge', `${parentId} -> ${childId}`, 'childResourceId');
        await loadForWrite(tx, principal, 'resourceEdge', edgeId, 'childResourceId');
        await tx.delete('resourceEdge', [edgeId]);
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
      const where: Record<string, string> = {};
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
