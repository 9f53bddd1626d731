import type { ServiceImpl } from '@connectrpc/connect';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import type { CreateResourceTypeEdgeRequest, CreateResourceTypeRequest } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { constraint, invalid } from '../../common/errors.js';
import { rowToMessage } from '../../store/kinds.js';
import { deleteResourceTypeWithEdges, listResourceTypeEdges, resourceTypeReads } from '../../store/resource-types.js';
import { RESOURCE_TYPE_KEY as KEY } from '../../common/vocabulary.js';
import { requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, enterScope, refIn, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { getOne, listMany, tenantOfRef } from './reads.js';
import { loadForWrite, writeOne } from './writes.js';

// --- resource types -----------------------------------------------------------------------------


export function resourceTypes(): CreateSpec<CreateResourceTypeRequest, 'resourceType'> {
  const unique = new Uniques(); // (tenantId, key)
  return {
    kind: 'resourceType',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      for (const t of await resourceTypeReads(b.tx).resourceTypesWithKeys(distinct(items.map((i) => i.key)))) unique.held([t.tenantId, t.key], t.id);
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

export function resourceTypeEdges(): CreateSpec<CreateResourceTypeEdgeRequest, 'resourceTypeEdge'> {
  const unique = new Uniques(); // (parentTypeId, childTypeId)
  return {
    kind: 'resourceTypeEdge',
    tenantRef: (item) => ['resourceType', item.parentTypeId, 'parentTypeId'],
    async preload(b, items) {
      await b.preload('resourceType', items.flatMap((i) => [i.parentTypeId, i.childTypeId]));
      for (const e of await resourceTypeReads(b.tx).typeEdgesFrom(distinct(items.map((i) => i.parentTypeId)))) unique.held([e.parentTypeId, e.childTypeId]);
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
        const inUse = await resourceTypeReads(tx).usesOfType(id);
        if (inUse) throw constraint(`resource type ${id} is still used by ${inUse}; delete them first`, 'id');
        await deleteResourceTypeWithEdges(tx, id);
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
      const { rows, nextCursor } = await listResourceTypeEdges(deps.db, typeId, req);
      return { resourceTypeEdges: rows.map((r) => rowToMessage('resourceTypeEdge', r)), nextCursor };
    },
  };
}
