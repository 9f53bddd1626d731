import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, userOf, type TestApp, expectCode, seedRows } from '../../../test/harness.js';

describeEachBackend('ResourceTypeService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof ResourceTypeService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seedRows(app.db, 'tenant_a', 'scope', [{ id: 'scope_a1', name: 'a1', typeId: 'scope_type_project', parentId: 'scope_tenant_a' }]);
    c = app.client(ResourceTypeService);
  });
  afterAll(() => app?.close());

  it('creates a resource type, reads it back, sets x-revision', async () => {
    let revision = '';
    const before = new Date();
    const res = await c.createResourceType(
      { id: 'resource_type_doc', name: 'Document', key: 'doc', scopeId: 'scope_tenant_a' },
      { onHeader: (h) => (revision = h.get('x-revision') ?? '') },
    );
    expect(res.resourceType).toMatchObject({ id: 'resource_type_doc', tenantId: 'tenant_a', key: 'doc', name: 'Document', scopeId: 'scope_tenant_a' });
    const after = new Date();
    // Stamped by the handler's clock while the call ran, and read back as written.
    const createdAt = timestampDate(res.resourceType!.createdAt!);
    expect(createdAt >= before && createdAt <= after, `${createdAt.toISOString()} in [${before.toISOString()}, ${after.toISOString()}]`).toBe(true);
    expect(Number(revision)).toBeGreaterThan(0);
    const read = (await c.getResourceType({ id: 'resource_type_doc' })).resourceType;
    expect([read?.name, read?.createdAt]).toEqual(['Document', res.resourceType!.createdAt]);
    await expectCode(c.getResourceType({ id: 'resource_type_nope' }), Code.NotFound);
  });

  it('creates a batch whose items are assigned ids in order', async () => {
    const res = await c.batchCreateResourceTypes({ items: [
      { name: 'Folder', key: 'folder', scopeId: 'scope_tenant_a' },
      { name: 'Sheet', key: 'sheet_v-2', scopeId: 'scope_a1' },
    ] });
    expect(res.resourceTypes.map((t) => t.key)).toEqual(['folder', 'sheet_v-2']);
    expect(res.resourceTypes[0].id).toMatch(/^resource_type_/);
  });

  it('validates fields, naming them', async () => {
    await expectCode(c.createResourceType({ name: 'X', key: 'Doc', scopeId: 'scope_tenant_a' }), Code.InvalidArgument, 'key');
    await expectCode(c.createResourceType({ name: 'X', key: 'a b', scopeId: 'scope_tenant_a' }), Code.InvalidArgument, 'key');
    await expectCode(c.createResourceType({ name: '', key: 'x', scopeId: 'scope_tenant_a' }), Code.InvalidArgument, 'name: is required');
    await expectCode(c.createResourceType({ name: 'x'.repeat(257), key: 'x', scopeId: 'scope_tenant_a' }), Code.InvalidArgument, 'name');
    await expectCode(c.batchCreateResourceTypes({ items: [
      { name: 'X', key: 'x1', scopeId: 'scope_tenant_a' }, { name: 'Y', key: 'x2' },
    ] }), Code.InvalidArgument, 'items[1].scopeId: is required');
    await expectCode(c.createResourceType({ name: 'X', key: 'x', scopeId: 'scope_nope' }), Code.FailedPrecondition, 'scopeId');
    await expectCode(c.createResourceType({ id: 'resource_x', name: 'X', key: 'x', scopeId: 'scope_tenant_a' }), Code.InvalidArgument, 'id');
    await expectCode(c.batchCreateResourceTypes({ items: Array.from({ length: 1001 }, (_, i) => ({ name: 'X', key: `k${i}`, scopeId: 'scope_tenant_a' })) }), Code.InvalidArgument);
  });

  it('keeps keys unique per tenant, in the store and within a batch', async () => {
    await expectCode(c.createResourceType({ name: 'Doc again', key: 'doc', scopeId: 'scope_a1' }), Code.AlreadyExists, 'key');
    await expectCode(c.batchCreateResourceTypes({ items: [
      { name: 'A', key: 'twin', scopeId: 'scope_tenant_a' }, { name: 'B', key: 'twin', scopeId: 'scope_tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].key');
    await expectCode(c.batchCreateResourceTypes({ items: [
      { id: 'resource_type_same', name: 'A', key: 'one', scopeId: 'scope_tenant_a' }, { id: 'resource_type_same', name: 'B', key: 'two', scopeId: 'scope_tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.createResourceType({ id: 'resource_type_doc', name: 'A', key: 'fresh', scopeId: 'scope_tenant_a' }), Code.AlreadyExists);
    // Another tenant may use the same key.
    await c.createResourceType({ id: 'resource_type_b_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_b' });
    expect((await c.listResourceTypes({ scopeId: 'scope_a1' })).resourceTypes.map((t) => t.key)).toEqual(['sheet_v-2']);
  });

  it('lists by scope with paging; scopeId is required and must exist', async () => {
    const p1 = await c.listResourceTypes({ scopeId: 'scope_tenant_a', limit: 1 });
    expect(p1.resourceTypes).toHaveLength(1);
    const p2 = await c.listResourceTypes({ scopeId: 'scope_tenant_a', limit: 1, cursor: p1.nextCursor });
    expect(p2.resourceTypes[0].id).not.toBe(p1.resourceTypes[0].id);
    await expectCode(c.listResourceTypes({}), Code.InvalidArgument, 'scopeId');
    await expectCode(c.listResourceTypes({ scopeId: 'scope_nope' }), Code.NotFound);
    await expectCode(c.listResourceTypes({ scopeId: 'scope_tenant_a', limit: 1001 }), Code.InvalidArgument, 'limit');
  });

  it('refuses callers of another tenant', async () => {
    const other = app.client(ResourceTypeService, userOf('tenant_b'));
    await expectCode(other.getResourceType({ id: 'resource_type_doc' }), Code.PermissionDenied);
    await expectCode(other.createResourceType({ name: 'X', key: 'x', scopeId: 'scope_tenant_a' }), Code.PermissionDenied);
  });

  it('renames a type', async () => {
    const res = await c.updateResourceType({ id: 'resource_type_doc', name: 'Doc' });
    expect(res.resourceType).toMatchObject({ name: 'Doc', key: 'doc' });
    await expectCode(c.updateResourceType({ id: 'resource_type_doc', name: '' }), Code.InvalidArgument, 'name');
    await expectCode(c.updateResourceType({ id: 'resource_type_nope', name: 'X' }), Code.NotFound);
  });

  describe('type hierarchy', () => {
    it('creates edges, including a type containing itself, and lists them by type', async () => {
      const res = await c.batchCreateResourceTypeEdges({ items: [
        { id: 'resource_type_edge_fd', parentTypeId: 'resource_type_doc', childTypeId: 'resource_type_doc' },
        { parentTypeId: 'resource_type_doc', childTypeId: (await c.listResourceTypes({ scopeId: 'scope_a1' })).resourceTypes[0].id },
      ] });
      expect(res.resourceTypeEdges[0]).toMatchObject({ id: 'resource_type_edge_fd', tenantId: 'tenant_a', parentTypeId: 'resource_type_doc', childTypeId: 'resource_type_doc' });
      expect(res.resourceTypeEdges[1].id).toMatch(/^resource_type_edge_/);
      expect((await c.listResourceTypeEdges({ typeId: 'resource_type_doc' })).resourceTypeEdges).toHaveLength(2);
      await expectCode(c.listResourceTypeEdges({}), Code.InvalidArgument, 'typeId');
    });

    it('refuses duplicates, missing types and other tenants', async () => {
      await expectCode(c.createResourceTypeEdge({ parentTypeId: 'resource_type_doc', childTypeId: 'resource_type_doc' }), Code.AlreadyExists);
      await expectCode(c.batchCreateResourceTypeEdges({ items: [
        { parentTypeId: 'resource_type_b_doc', childTypeId: 'resource_type_b_doc' },
        { parentTypeId: 'resource_type_b_doc', childTypeId: 'resource_type_b_doc' },
      ] }), Code.InvalidArgument, 'items[1]');
      await expectCode(c.createResourceTypeEdge({ parentTypeId: 'resource_type_doc', childTypeId: 'resource_type_nope' }), Code.FailedPrecondition, 'childTypeId');
      await expectCode(c.createResourceTypeEdge({ parentTypeId: 'resource_type_doc', childTypeId: 'resource_type_b_doc' }), Code.FailedPrecondition, 'childTypeId');
      await expectCode(c.createResourceTypeEdge({ parentTypeId: '', childTypeId: 'resource_type_doc' }), Code.InvalidArgument, 'parentTypeId');
      expect((await c.listResourceTypeEdges({ typeId: 'resource_type_b_doc' })).resourceTypeEdges).toEqual([]);
    });
  });

  describe('delete', () => {
    it('is refused while resources or collections of the type exist', async () => {
      await c.createResourceType({ id: 'resource_type_used', name: 'Used', key: 'used', scopeId: 'scope_tenant_a' });
      await app.client(ResourceService).createResource({ id: 'resource_u', resourceTypeId: 'resource_type_used', ownerScopeId: 'scope_tenant_a', externalResourceId: 'u' });
      await expectCode(c.deleteResourceType({ id: 'resource_type_used' }), Code.FailedPrecondition, 'resources');
      await app.client(ResourceService).deleteResource({ id: 'resource_u' });
      await app.client(PolicyService).createResourceCollection({ id: 'collection_u', scopeId: 'scope_tenant_a', resourceTypeId: 'resource_type_used', name: 'All', match: {} });
      await expectCode(c.deleteResourceType({ id: 'resource_type_used' }), Code.FailedPrecondition, 'collections');
      await app.client(PolicyService).deleteResourceCollection({ id: 'collection_u' });
      await c.deleteResourceType({ id: 'resource_type_used' });
      await expectCode(c.getResourceType({ id: 'resource_type_used' }), Code.NotFound);
    });

    it('removes the type edges with the type, each reaching the change log', async () => {
      await c.deleteResourceType({ id: 'resource_type_doc' });
      expect((await c.listResourceTypes({ scopeId: 'scope_tenant_a' })).resourceTypes.map((t) => t.id)).not.toContain('resource_type_doc');
      const log = (await app.db.orm.em.fork().execute(
        `select entity_id from change_log where op = 'delete' and kind in ('resource_type', 'resource_type_edge')`,
      )) as { entity_id: string }[];
      expect(log.map((r) => r.entity_id)).toEqual(expect.arrayContaining(['resource_type_edge_fd', 'resource_type_doc']));
      await expectCode(c.deleteResourceType({ id: 'resource_type_doc' }), Code.NotFound);
    });
  });
});
