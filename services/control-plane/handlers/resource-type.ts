import type { ServiceImpl } from '@connectrpc/connect';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import type { CreateResourceTypeEdgeRequest, CreateResourceTypeRequest } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { constraint, invalid } from '../../common/errors.js';
import { rowToMessage } from '../../store/kinds.js';
import { requireString } from '../../common/validate.js';
import {
  Uniques, createMany, distinct, enterScope, getOne, listMany, loadForWrite, refIn, tenantOfRef, writeOne, type CreateSpec, type Deps,
} from './kit.js';
import { query } from '../../store/read.js';

// --- resource types -----------------------------------------------------------------------------

/** A resource type key: lowercase letters, digits, `_` and `-`. */
const KEY = /^[a-z0-9_-]+$/;

function resourceTypes(): CreateSpec<CreateResourceTypeRequest, 'resourceType'> {
  const unique = new Uniques(); // (tenantId, key)
  return {
    kind: 'resourceType',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      const keys = distinct(items.map((i) => i.key));
      if (keys.length === 0) return;
      const rows = await query<{ id: string; tenant_id: string; key: string }>(b.em, 'select id, tenant_id, key from resource_types where key in (?)', [keys]);
      for (const r of rows) unique.held([r.tenant_id, r.key], r.id);
    },
    async build(b, item, p) {
      const id = b.id('resourceType', item.id, `${p}id`);
      const name = requireString(item.name, `${p}name`);
      const key = requireString(item.key, `${p}key`);
      if (!KEY.test(key)) throw invalid(`${p}key`, 'must be lowercase letters, digits, "_" or "-"');
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
      unique.claim([tenantId, key], `${p}key`, `a resource type with key "${key}"`);
      return { ...b.base(id, tenantId), name, key, scopeId };
    },
  };
}

function resourceTypeEdges(): CreateSpec<CreateResourceTypeEdgeRequest, 'resourceTypeEdge'> {
  const unique = new Uniques(); // (parentTypeId, childTypeId)
  return {
    kind: 'resourceTypeEdge',
    tenantRef: (item) => ['resourceType', item.parentTypeId, 'parentTypeId'],
    async preload(b, items) {
      await b.preload('resourceType', items.flatMap((i) => [i.parentTypeId, i.childTypeId]));
      const parents = distinct(items.map((i) => i.parentTypeId));
      if (parents.length === 0) return;
      const rows = await query<{ parent_type_id: string; child_type_id: string }>(
        b.em, 'select parent_type_id, child_type_id from resource_type_edges where parent_type_id in (?)', [parents],
      );
      for (const r of rows) unique.held([r.parent_type_id, r.child_type_id]);
    },
    async build(b, item, p) {
      const id = b.id('resourceTypeEdge', item.id, `${p}id`);
      const parentTypeId = requireString(item.parentTypeId, `${p}parentTypeId`);
      const childTypeId = requireString(item.childTypeId, `${p}childTypeId`);
      const parent = await b.ref('resourceType', parentTypeId, `${p}parentTypeId`);
      const tenantId = parent.tenantId as string;
      await b.tenant(tenantId, `${p}parentTypeId`);
      await refIn(b, 'resourceType', childTypeId, `${p}childTypeId`, tenantId);
      unique.claim([parentTypeId, childTypeId], `${p}childTypeId`, `an edge from resource type ${parentTypeId} to ${childTypeId}`);
      return { ...b.base(id, tenantId), parentTypeId, childTypeId };
    },
  };
}

export function resourceTypeService(deps: Deps): ServiceImpl<typeof ResourceTypeService> {
  return {
    async createResourceType(req, ctx) {
      return { resourceType: (await createMany(deps, ctx, resourceTypes(), [req], false))[0] };
    },
    async batchCreateResourceTypes(req, ctx) {
      return { resourceTypes: await createMany(deps, ctx, resourceTypes(), req.items, true) };
    },
    async getResourceType(req, ctx) {
      return { resourceType: await getOne(deps, ctx, 'resourceType', requireString(req.id, 'id')) };
    },
    async listResourceTypes(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'resourceType', { scopeId }, req);
      return { resourceTypes: items, nextCursor };
    },
    async updateResourceType(req, ctx) {
      const id = requireString(req.id, 'id');
      const name = requireString(req.name, 'name');
      const row = await writeOne(deps, ctx, async (tx, principal) => {
        const cur = await loadForWrite(tx, principal, 'resourceType', id);
        await tx.update('resourceType', cur, { name });
        return { ...cur, name };
      });
      return { resourceType: rowToMessage('resourceType', row) };
    },
    async deleteResourceType(req, ctx) {
      const id = requireString(req.id, 'id');
      await writeOne(deps, ctx, async (tx, principal) => {
        await loadForWrite(tx, principal, 'resourceType', id);
        const [inUse] = await query<{ what: string }>(
          tx.em,
          `select 'resources' as what from resources where resource_type_id = ?
           union all select 'collections' from resource_collections where resource_type_id = ? limit 1`,
          [id, id],
        );
        if (inUse) throw constraint(`resource type ${id} is still used by ${inUse.what}; delete them first`, 'id');
        const edges = await query<{ id: string }>(
          tx.em, 'select id from resource_type_edges where parent_type_id = ? or child_type_id = ?', [id, id],
        );
        await tx.delete('resourceTypeEdge', edges.map((e) => e.id));
        await tx.delete('resourceType', [id]);
      });
      return {};
    },
    async createResourceTypeEdge(req, ctx) {
      return { resourceTypeEdge: (await createMany(deps, ctx, resourceTypeEdges(), [req], false))[0] };
    },
    async batchCreateResourceTypeEdges(req, ctx) {
      return { resourceTypeEdges: await createMany(deps, ctx, resourceTypeEdges(), req.items, true) };
    },
    async listResourceTypeEdges(req, ctx) {
      const typeId = requireString(req.typeId, 'typeId');
      await tenantOfRef(deps, ctx, 'resourceType', typeId, 'typeId');
      const where = { $or: [{ parentTypeId: typeId }, { childTypeId: typeId }] };
      const { items, nextCursor } = await listMany(deps, 'resourceTypeEdge', where, req);
      return { resourceTypeEdges: items, nextCursor };
    },
  };
}
