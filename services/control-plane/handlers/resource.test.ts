import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { fromJson, toJson } from '@bufbuild/protobuf';
import { KINDS, messageToChangeData, rowToJson, rowToMessage, rowsToJsonText, type KindDef, type KindName, type Row } from '../../store/kinds.js';
import { JSON_OPTIONS } from '../../transport/json-options.js';
import type { Database } from '../../store/db.js';
import { describeEachBackend, createTestApp, seedTenant, type TestApp, expectCode, seedRows } from '../../../test/harness.js';

/** Writes rows of a tenant straight to the store. */
async function changeLog(db: Database, ids: string[]): Promise<string[]> {
  const rows = (await db.orm.em.fork().execute(
    'select op, entity_id from change_log where entity_id in (?) order by revision, seq', [ids],
  )) as { op: string; entity_id: string }[];
  return rows.map((r) => `${r.op}:${r.entity_id}`);
}

describeEachBackend('ResourceService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof ResourceService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seedRows(app.db, 'tenant_a', 'scope', [
      { id: 'scope_a1', name: 'a1', typeId: 'scope_type_project', parentId: 'scope_tenant_a' },
      { id: 'scope_a2', name: 'a2', typeId: 'scope_type_project', parentId: 'scope_a1' },
    ]);
    const types = app.client(ResourceTypeService);
    await types.batchCreateResourceTypes({ items: [
      { id: 'resource_type_folder', name: 'Folder', key: 'folder', scopeId: 'scope_tenant_a' },
      { id: 'resource_type_doc', name: 'Document', key: 'doc', scopeId: 'scope_tenant_a' },
      { id: 'resource_type_local', name: 'Local', key: 'local', scopeId: 'scope_a1' },
    ] });
    await types.batchCreateResourceTypeEdges({ items: [
      { parentTypeId: 'resource_type_folder', childTypeId: 'resource_type_folder' },
      { parentTypeId: 'resource_type_folder', childTypeId: 'resource_type_doc' },
    ] });
    await types.createResourceType({ id: 'resource_type_b', name: 'B', key: 'b', scopeId: 'scope_tenant_b' });
    c = app.client(ResourceService);
  });
  afterAll(() => app?.close());

  const folder = (id: string, scope = 'scope_tenant_a') =>
    ({ id, resourceTypeId: 'resource_type_folder', ownerScopeId: scope, externalResourceId: `ext-${id}` });

  describe('resources', () => {
    it('creates a resource, answers scopeId beside ownerScopeId and sets x-revision', async () => {
      let revision = '';
      const res = await c.createResource(
        { ...folder('resource_r1'), displayName: 'R1', attributes: { size: 3, tags: ['x'] } },
        { onHeader: (h) => (revision = h.get('x-revision') ?? '') },
      );
      expect(res.resource).toMatchObject({
        id: 'resource_r1', tenantId: 'tenant_a', ownerScopeId: 'scope_tenant_a', scopeId: 'scope_tenant_a',
        displayName: 'R1', attributes: { size: 3, tags: ['x'] }, createdBy: 'subject_test_platform',
      });
      expect(Number(revision)).toBeGreaterThan(0);
      const got = await c.getResource({ id: 'resource_r1' });
      expect(got.resource?.scopeId).toBe('scope_tenant_a');
      expect(got.resource?.externalResourceId).toBe('ext-resource_r1');
    });

    it('assigns a uuidv7 id in the resource namespace when none is given', async () => {
      const res = await c.createResource({ resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_a2', externalResourceId: 'auto' });
      expect(res.resource?.id).toMatch(/^resource_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it('accepts a type defined at an ancestor of the owner scope, refuses one defined below it', async () => {
      await c.createResource({ id: 'resource_local_ok', resourceTypeId: 'resource_type_local', ownerScopeId: 'scope_a2', externalResourceId: 'l1' });
      await expectCode(
        c.createResource({ resourceTypeId: 'resource_type_local', ownerScopeId: 'scope_tenant_a', externalResourceId: 'l2' }),
        Code.FailedPrecondition, 'resourceTypeId',
      );
    });

    it('names the missing field with its batch index and writes nothing', async () => {
      const err = await expectCode(c.batchCreateResources({ items: [
        folder('resource_bad0'), folder('resource_bad1'), { ...folder('resource_bad2'), ownerScopeId: '' },
      ] }), Code.InvalidArgument, 'items[2].ownerScopeId: is required');
      expect(err.rawMessage).not.toContain('items[1]');
      await expectCode(c.getResource({ id: 'resource_bad0' }), Code.NotFound);
    });

    it('refuses missing references with failed_precondition', async () => {
      await expectCode(c.createResource({ ...folder('resource_x'), ownerScopeId: 'scope_nope' }), Code.FailedPrecondition, 'ownerScopeId');
      await expectCode(c.createResource({ ...folder('resource_x'), resourceTypeId: 'resource_type_nope' }), Code.FailedPrecondition, 'resourceTypeId');
      await expectCode(c.createResource({ ...folder('resource_x'), resourceTypeId: 'resource_type_b' }), Code.FailedPrecondition, 'resourceTypeId');
    });

    it('keeps external ids unique per type, in the store and within a batch', async () => {
      await expectCode(c.createResource({ ...folder('resource_dup'), externalResourceId: 'ext-resource_r1' }), Code.AlreadyExists, 'externalResourceId');
      await expectCode(c.batchCreateResources({ items: [
        { ...folder('resource_e1'), externalResourceId: 'same' }, { ...folder('resource_e2'), externalResourceId: 'same' },
      ] }), Code.InvalidArgument, 'items[1].externalResourceId');
      const odd = `it's "odd" \\ ? $1 \u00e9`;
      await c.createResource({ ...folder('resource_odd'), externalResourceId: odd });
      await expectCode(c.createResource({ ...folder('resource_odd2'), externalResourceId: odd }), Code.AlreadyExists, 'externalResourceId');
      // The same external id under another type is a different resource.
      await c.createResource({ id: 'resource_doc_same', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'ext-resource_r1' });
    });

    it('refuses duplicate ids in a batch, existing ids and foreign namespaces', async () => {
      await expectCode(c.batchCreateResources({ items: [folder('resource_d'), folder('resource_d')] }), Code.InvalidArgument, 'items[1].id');
      await expectCode(c.createResource({ ...folder('resource_r1'), externalResourceId: 'other' }), Code.AlreadyExists, 'resource_r1');
      await expectCode(c.createResource(folder('scope_wrong')), Code.InvalidArgument, 'id');
      await expectCode(c.createResource(folder('resource_bad id!')), Code.InvalidArgument, 'id');
    });

    it('enforces the limits: 1,000 items, 256-character strings, 16 KiB of attributes', async () => {
      const items = Array.from({ length: 1001 }, (_, i) => folder(`resource_big${i}`));
      await expectCode(c.batchCreateResources({ items }), Code.InvalidArgument, '1000');
      await expectCode(c.createResource({ ...folder('resource_long'), displayName: 'x'.repeat(257) }), Code.InvalidArgument, 'displayName');
      await expectCode(c.createResource({ ...folder('resource_long'), externalResourceId: 'x'.repeat(257) }), Code.InvalidArgument, 'externalResourceId');
      await expectCode(c.createResource({ ...folder('resource_long'), attributes: { blob: 'x'.repeat(17 * 1024) } }), Code.InvalidArgument, 'attributes');
      await expectCode(c.getResource({ id: 'resource_big0' }), Code.NotFound);
    });

    it('creates 1,000 resources in one batch', async () => {
      const items = Array.from({ length: 1000 }, (_, i) => ({ ...folder(`resource_k${i}`, 'scope_a1'), attributes: { i } }));
      const res = await c.batchCreateResources({ items });
      expect(res.resources).toHaveLength(1000);
      expect(res.resources[999].id).toBe('resource_k999');
      const page1 = await c.listResources({ scopeId: 'scope_a1', limit: 600 });
      expect(page1.resources).toHaveLength(600);
      expect(page1.nextCursor).not.toBe('');
      const page2 = await c.listResources({ scopeId: 'scope_a1', limit: 600, cursor: page1.nextCursor });
      expect(page2.resources).toHaveLength(400);
      expect(page2.nextCursor).toBe('');
    });

    it('lists by owner scope; an unknown scope is not_found; scopeId is required', async () => {
      const res = await c.listResources({ scopeId: 'scope_a2' });
      expect(res.resources.map((r) => r.ownerScopeId)).toEqual(res.resources.map(() => 'scope_a2'));
      await expectCode(c.listResources({ scopeId: 'scope_nope' }), Code.NotFound);
      await expectCode(c.listResources({}), Code.InvalidArgument, 'scopeId');
    });

    it('updates displayName and attributes; get of a missing id is not_found', async () => {
      const res = await c.updateResource({ id: 'resource_r1', displayName: 'Renamed' });
      expect(res.resource).toMatchObject({ displayName: 'Renamed', attributes: { size: 3, tags: ['x'] } });
      const res2 = await c.updateResource({ id: 'resource_r1', attributes: { size: 4 } });
      expect(res2.resource).toMatchObject({ displayName: 'Renamed', attributes: { size: 4 } });
      expect((await c.getResource({ id: 'resource_r1' })).resource?.attributes).toEqual({ size: 4 });
      await expectCode(c.updateResource({ id: 'resource_nope', displayName: 'x' }), Code.NotFound);
      await expectCode(c.updateResource({ id: 'resource_r1', attributes: { blob: 'x'.repeat(17 * 1024) } }), Code.InvalidArgument, 'attributes');
      await expectCode(c.getResource({ id: 'resource_nope' }), Code.NotFound);
    });
  });

  describe('hierarchy', () => {
    beforeAll(async () => {
      await c.batchCreateResources({ items: [
        folder('resource_h_root'), folder('resource_h_mid'), folder('resource_h_leaf'), folder('resource_h_other'),
        { id: 'resource_h_doc', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'hdoc', displayName: 'Doc' },
      ] });
      await c.createResource({ id: 'resource_h_b', resourceTypeId: 'resource_type_b', ownerScopeId: 'scope_tenant_b', externalResourceId: 'hb' });
    });

    it('creates edges in a batch where later items build on earlier ones; cascade defaults to none', async () => {
      const res = await c.batchCreateResourceEdges({ items: [
        { parentResourceId: 'resource_h_root', childResourceId: 'resource_h_mid', cascade: 'inherit', relationshipType: 'contains' },
        { parentResourceId: 'resource_h_mid', childResourceId: 'resource_h_leaf' },
        { parentResourceId: 'resource_h_leaf', childResourceId: 'resource_h_doc', cascade: 'inherit' },
      ] });
      expect(res.resourceEdges.map((e) => [e.cascade, e.relationshipType])).toEqual([
        ['inherit', 'contains'], ['none', undefined], ['inherit', undefined],
      ]);
      expect(res.resourceEdges[0].id).toMatch(/^resource_edge_/);
    });

    it('answers ancestors nearest first with the cascade of the edge leading down', async () => {
      const res = await c.listResourceAncestors({ resourceId: 'resource_h_doc' });
      expect(res.resourceAncestors.map((a) => [a.id, a.cascade, a.depth, a.resourceTypeId])).toEqual([
        ['resource_h_leaf', 'inherit', 1, 'resource_type_folder'],
        ['resource_h_mid', 'none', 2, 'resource_type_folder'],
        ['resource_h_root', 'inherit', 3, 'resource_type_folder'],
      ]);
      const paged = await c.listResourceAncestors({ resourceId: 'resource_h_doc', limit: 2 });
      expect(paged.resourceAncestors).toHaveLength(2);
      const rest = await c.listResourceAncestors({ resourceId: 'resource_h_doc', limit: 2, cursor: paged.nextCursor });
      expect(rest.resourceAncestors.map((a) => a.id)).toEqual(['resource_h_root']);
      expect(rest.nextCursor).toBe('');
      expect((await c.listResourceAncestors({ resourceId: 'resource_h_root' })).resourceAncestors).toEqual([]);
      await expectCode(c.listResourceAncestors({ resourceId: 'resource_nope' }), Code.NotFound);
    });

    it('answers children, parent and descendants (breadth first, paged)', async () => {
      expect((await c.listResourceChildren({ id: 'resource_h_root' })).resources.map((r) => r.id)).toEqual(['resource_h_mid']);
      expect((await c.getResourceParent({ id: 'resource_h_mid' })).resource?.id).toBe('resource_h_root');
      await expectCode(c.getResourceParent({ id: 'resource_h_root' }), Code.NotFound);
      await expectCode(c.getResourceParent({ id: 'resource_nope' }), Code.NotFound);
      const all = await c.listResourceDescendants({ id: 'resource_h_root' });
      expect(all.resources.map((r) => r.id)).toEqual(['resource_h_mid', 'resource_h_leaf', 'resource_h_doc']);
      const p1 = await c.listResourceDescendants({ id: 'resource_h_root', limit: 2 });
      const p2 = await c.listResourceDescendants({ id: 'resource_h_root', limit: 2, cursor: p1.nextCursor });
      expect([...p1.resources, ...p2.resources].map((r) => r.id)).toEqual(all.resources.map((r) => r.id));
      expect(p2.nextCursor).toBe('');
      await expectCode(c.listResourceDescendants({ id: 'resource_h_root', cursor: 'garbage!' }), Code.InvalidArgument, 'cursor');
    });

    it('refuses a second parent, also when the first comes earlier in the same batch', async () => {
      await expectCode(
        c.createResourceEdge({ parentResourceId: 'resource_h_other', childResourceId: 'resource_h_mid' }),
        Code.FailedPrecondition, 'at most one parent',
      );
      await expectCode(c.batchCreateResourceEdges({ items: [
        { parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other' },
        { parentResourceId: 'resource_h_mid', childResourceId: 'resource_h_other' },
      ] }), Code.FailedPrecondition, 'items[1].childResourceId');
      expect((await c.listResourceChildren({ id: 'resource_h_root' })).resources).toHaveLength(1);
    });

    it('refuses cycles: self, through the store and through the batch', async () => {
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_other', childResourceId: 'resource_h_other' }), Code.FailedPrecondition);
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_leaf', childResourceId: 'resource_h_root' }), Code.FailedPrecondition, 'cycle');
      await c.batchCreateResources({ items: [folder('resource_cy1'), folder('resource_cy2')] });
      await expectCode(c.batchCreateResourceEdges({ items: [
        { parentResourceId: 'resource_cy1', childResourceId: 'resource_cy2' },
        { parentResourceId: 'resource_cy2', childResourceId: 'resource_cy1' },
      ] }), Code.FailedPrecondition, 'cycle');
    });

    it('refuses pairs the type hierarchy does not allow, naming both types', async () => {
      await c.createResource({ id: 'resource_h_doc2', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'hdoc2' });
      const err = await expectCode(
        c.createResourceEdge({ parentResourceId: 'resource_h_doc2', childResourceId: 'resource_h_other' }), Code.FailedPrecondition,
      );
      expect(err.rawMessage).toContain('"doc"');
      expect(err.rawMessage).toContain('"folder"');
    });

    it('refuses other tenants, missing resources, bad cascades and long relationship types', async () => {
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_other', childResourceId: 'resource_h_b' }), Code.FailedPrecondition, 'childResourceId');
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_nope', childResourceId: 'resource_h_other' }), Code.FailedPrecondition, 'parentResourceId');
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other', cascade: 'CASCADE_INHERIT' }), Code.InvalidArgument, 'cascade');
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other', relationshipType: 'x'.repeat(257) }), Code.InvalidArgument, 'relationshipType');
      await expectCode(c.createResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: '' }), Code.InvalidArgument, 'childResourceId: is required');
    });

    it('allows 64 levels and refuses the 65th, in a batch and across batches', async () => {
      const ids = Array.from({ length: 66 }, (_, i) => `resource_deep${i}`);
      await c.batchCreateResources({ items: ids.map((id) => folder(id)) });
      const chain = (from: number, to: number) =>
        Array.from({ length: to - from }, (_, i) => ({ parentResourceId: ids[from + i], childResourceId: ids[from + i + 1] }));
      // 0..64 is 65 levels: the last item is refused and nothing of the batch is written.
      await expectCode(c.batchCreateResourceEdges({ items: chain(0, 64) }), Code.FailedPrecondition, 'items[63].childResourceId');
      expect((await c.listResourceChildren({ id: ids[0] })).resources).toHaveLength(0);
      await c.batchCreateResourceEdges({ items: chain(0, 40) });
      await c.batchCreateResourceEdges({ items: chain(41, 63) }); // a separate subtree of 23 levels: 41..63
      // 41 levels above + 23 below = 64: allowed.
      await c.createResourceEdge({ parentResourceId: ids[40], childResourceId: ids[41] });
      const anc = await c.listResourceAncestors({ resourceId: ids[63] });
      expect(anc.resourceAncestors).toHaveLength(63);
      await expectCode(c.createResourceEdge({ parentResourceId: ids[63], childResourceId: ids[64] }), Code.FailedPrecondition, '65 levels');
    });

    it('deletes an edge by parent and child; a missing edge is not_found', async () => {
      await c.createResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other' });
      await c.deleteResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other' });
      await expectCode(c.getResourceParent({ id: 'resource_h_other' }), Code.NotFound);
      await expectCode(c.deleteResourceEdge({ parentResourceId: 'resource_h_root', childResourceId: 'resource_h_other' }), Code.NotFound);
    });
  });

  describe('scope links', () => {
    it('creates, lists, updates and deletes links', async () => {
      const res = await c.batchCreateResourceScopeLinks({ items: [
        { id: 'rsl_one', resourceId: 'resource_r1', scopeId: 'scope_a1', linkType: 'share', metadata: { why: 'team' } },
        { resourceId: 'resource_r1', scopeId: 'scope_a2', linkType: 'mirror' },
      ] });
      expect(res.resourceScopeLinks.map((l) => l.linkType)).toEqual(['share', 'mirror']);
      expect(res.resourceScopeLinks[1].id).toMatch(/^rsl_/);
      expect((await c.listResourceScopeLinks({ resourceId: 'resource_r1' })).resourceScopeLinks).toHaveLength(2);
      expect((await c.listResourceScopeLinks({ scopeId: 'scope_a1' })).resourceScopeLinks.map((l) => l.id)).toEqual(['rsl_one']);
      await expectCode(c.listResourceScopeLinks({}), Code.InvalidArgument, 'resourceId');
      const upd = await c.updateResourceScopeLink({ id: 'rsl_one', metadata: { why: 'audit' } });
      expect(upd.resourceScopeLink?.metadata).toEqual({ why: 'audit' });
      await c.deleteResourceScopeLink({ id: 'rsl_one' });
      await expectCode(c.deleteResourceScopeLink({ id: 'rsl_one' }), Code.NotFound);
      await expectCode(c.updateResourceScopeLink({ id: 'rsl_one', metadata: {} }), Code.NotFound);
    });

    it('validates link type, tenant, duplicates and metadata size', async () => {
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_r1', scopeId: 'scope_a1', linkType: 'copy' }), Code.InvalidArgument, 'linkType');
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_r1', scopeId: 'scope_a1' }), Code.InvalidArgument, 'linkType');
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_r1', scopeId: 'scope_tenant_b', linkType: 'share' }), Code.FailedPrecondition, 'scopeId');
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_nope', scopeId: 'scope_a1', linkType: 'share' }), Code.FailedPrecondition, 'resourceId');
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_r1', scopeId: 'scope_a2', linkType: 'mirror' }), Code.AlreadyExists);
      await expectCode(c.createResourceScopeLink({ resourceId: 'resource_r1', scopeId: 'scope_a1', linkType: 'alias', metadata: { b: 'x'.repeat(17 * 1024) } }), Code.InvalidArgument, 'metadata');
    });
  });

  describe('delete', () => {
    it('removes edges both ways, links, grants, tag assignments and policies, each reaching the change log', async () => {
      await c.batchCreateResources({ items: [folder('resource_del_p'), folder('resource_del'), folder('resource_del_c')] });
      await c.batchCreateResourceEdges({ items: [
        { id: 'resource_edge_up', parentResourceId: 'resource_del_p', childResourceId: 'resource_del' },
        { id: 'resource_edge_down', parentResourceId: 'resource_del', childResourceId: 'resource_del_c' },
      ] });
      await c.createResourceScopeLink({ id: 'rsl_del', resourceId: 'resource_del', scopeId: 'scope_a1', linkType: 'share' });
      await seedRows(app.db, 'tenant_a', 'subject', [{ id: 'subject_owner', type: 'user', externalId: 'owner' }]);
      await seedRows(app.db, 'tenant_a', 'role', [{ id: 'role_owner', scopeId: 'scope_tenant_a', key: 'owner', name: 'Owner', description: '' }]);
      await app.client(OwnershipGrantService).createOwnershipGrant({ id: 'ownership_grant_del', subjectId: 'subject_owner', resourceId: 'resource_del', roleId: 'role_owner' });
      const tags = app.client(TagService);
      await tags.createTagGroup({ id: 'tag_group_del', scopeId: 'scope_tenant_a', name: 'Env', key: 'env' });
      await tags.createTag({ id: 'tag_del', tagGroupId: 'tag_group_del', identifier: 'prod' });
      await tags.createTagAssignment({ id: 'tag_assignment_del', tagId: 'tag_del', targetType: 'resource', targetId: 'resource_del' });
      await app.client(PolicyService).createResourcePolicy({
        id: 'policy_del', scopeId: 'scope_tenant_a', target: { kind: 'resource', resourceId: 'resource_del' }, actions: ['read'], effect: 'deny',
      });

      await c.deleteResource({ id: 'resource_del' });

      await expectCode(c.getResource({ id: 'resource_del' }), Code.NotFound);
      await expectCode(app.client(PolicyService).getResourcePolicy({ id: 'policy_del' }), Code.NotFound);
      expect((await tags.listTagAssignments({ targetId: 'resource_del' })).tagAssignments).toEqual([]);
      expect((await c.listResourceChildren({ id: 'resource_del_p' })).resources).toEqual([]);
      await expectCode(c.getResourceParent({ id: 'resource_del_c' }), Code.NotFound);
      const removed = ['resource_edge_up', 'resource_edge_down', 'rsl_del', 'ownership_grant_del', 'tag_assignment_del', 'policy_del', 'resource_del'];
      const log = await changeLog(app.db, removed);
      for (const id of removed) expect(log).toContain(`delete:${id}`);
      await expectCode(c.deleteResource({ id: 'resource_del' }), Code.NotFound);
    });
  });
});

describe('store row conversions (direct conversions of rowToMessage and messageToChangeData)', () => {
  const reference = (d: KindDef, row: Row) => fromJson(d.message, rowToJson(d, row), { ignoreUnknownFields: true });
  const at = (iso: string) => new Date(iso);
  const base = { id: 'x_1', tenantId: 'tenant_a', createdBy: 'subject_a' };
  const samples: [KindName, Row][] = [
    ['resource', { ...base, createdAt: at('2025-01-02T03:04:05.000Z'), resourceTypeId: 't', ownerScopeId: 's', externalResourceId: 'e', displayName: 'D', attributes: { a: [1, { b: null }], c: 'x' } }],
    ['resource', { ...base, createdAt: at('2025-01-02T03:04:05.120Z'), resourceTypeId: 't', ownerScopeId: 's', externalResourceId: 'e', displayName: null, attributes: null }],
    ['resource', { ...base, createdAt: at('2025-01-02T03:04:05.007Z'), resourceTypeId: 't', ownerScopeId: 's', externalResourceId: '', displayName: '' }],
    ['resourceEdge', { ...base, createdAt: at('2025-01-02T03:04:05.999Z'), parentResourceId: 'p', childResourceId: 'c', relationshipType: null, cascade: 'none' }],
    ['resourceScopeLink', { ...base, createdAt: at('2025-01-02T03:04:05Z'), resourceId: 'r', scopeId: 's', linkType: 'share', metadata: null }],
    ['scopeOverride', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', roleId: 'r', mode: 'block', permissionIds: [] }],
    ['scopeOverride', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', roleId: 'r', mode: 'add', permissionIds: ['p1', 'p2'] }],
    ['scopeOverride', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', roleId: 'r', mode: 'block', permissionIds: null }],
    ['tagGroup', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', name: 'n', key: 'k', description: '', origin: 'user', maxAppliedPerTarget: 0, isLocked: false }],
    ['tagGroup', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', name: 'n', key: 'k', description: 'd', origin: 'user', maxAppliedPerTarget: 3, isLocked: true }],
    ['collection', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', resourceTypeId: 't', name: 'n', description: '', matchDefinition: { fields: { x: { gt: 1 } } } }],
    ['policy', { ...base, createdAt: at('2025-01-02T03:04:05Z'), scopeId: 's', target: { kind: 'resource', resourceId: 'r' }, targetId: 'r', actions: ['*'], effect: 'allow', priority: 0, subjectCondition: null, contextCondition: { '==': [1, 1] }, validFrom: at('2025-01-01T00:00:00Z'), validUntil: null }],
    ['subject', { ...base, tenantId: null, createdAt: at('2025-01-02T03:04:05Z'), type: 'user', externalId: 'e', metadata: { name: 'A' } }],
    ['tenant', { id: 'tenant_a', name: 'A', scopeId: 's', revision: 7, createdAt: at('2025-01-02T03:04:05Z'), createdBy: 'x' }],
  ];
  it.each(samples.map((s, i) => [i, ...s] as const))('sample %i (%s) converts exactly as the generic route', (_, kind, row) => {
    const d = KINDS[kind] as KindDef;
    expect(rowToMessage(kind, row)).toEqual(reference(d, row));
    expect(messageToChangeData(d, row)).toEqual(toJson(d.message, reference(d, row), { alwaysEmitImplicit: true }));
    // A batch's REST body, written without messages: the text connect-node would write.
    expect(rowsToJsonText(kind, [row, { ...row, id: 'x_2' }])).toBe(JSON.stringify([row, { ...row, id: 'x_2' }].map((r) => toJson(d.message, reference(d, r), JSON_OPTIONS))));
  });
});
