import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, type TestApp, expectCode, seedRows } from '../../../test/harness.js';

describeEachBackend('TagService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof TagService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seedRows(app.db, 'tenant_a', 'scope', [{ id: 'scope_a1', name: 'a1', typeId: 'scope_type_project', parentId: 'scope_tenant_a' }]);
    await seedRows(app.db, 'tenant_a', 'subject', [
      { id: 'subject_alice', type: 'user', externalId: 'alice' }, { id: 'subject_bob', type: 'user', externalId: 'bob' },
    ]);
    await seedRows(app.db, 'tenant_a', 'role', [{ id: 'role_viewer', scopeId: 'scope_tenant_a', key: 'viewer', name: 'Viewer', description: '' }]);
    await seedRows(app.db, 'tenant_b', 'role', [{ id: 'role_b', scopeId: 'scope_tenant_b', key: 'viewer', name: 'Viewer', description: '' }]);
    await seedRows(app.db, 'tenant_b', 'subject', [{ id: 'subject_b', type: 'user', externalId: 'b' }]);
    await app.client(ResourceTypeService).createResourceType({ id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_a' });
    await app.client(ResourceService).createResource({ id: 'resource_doc', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'd' });
    c = app.client(TagService);
  });
  afterAll(() => app?.close());

  describe('tag groups', () => {
    it('creates groups (origin user, defaults), gets and lists them', async () => {
      const res = await c.batchCreateTagGroups({ items: [
        { id: 'tag_group_env', scopeId: 'scope_tenant_a', name: 'Environment', key: 'env', maxAppliedPerTarget: 1 },
        { id: 'tag_group_team', scopeId: 'scope_tenant_a', name: 'Team', key: 'team', description: 'owning team' },
        { id: 'tag_group_frozen', scopeId: 'scope_a1', name: 'Frozen', key: 'frozen', isLocked: true },
      ] });
      expect(res.tagGroups[0]).toMatchObject({ origin: 'user', maxAppliedPerTarget: 1, isLocked: false, tenantId: 'tenant_a', description: '' });
      expect(res.tagGroups[1]).toMatchObject({ maxAppliedPerTarget: 0, description: 'owning team' });
      expect(res.tagGroups[2].isLocked).toBe(true);
      expect((await c.getTagGroup({ id: 'tag_group_env' })).tagGroup?.key).toBe('env');
      expect((await c.listTagGroups({ scopeId: 'scope_tenant_a' })).tagGroups.map((g) => g.id)).toEqual(['tag_group_env', 'tag_group_team']);
      await expectCode(c.getTagGroup({ id: 'tag_group_nope' }), Code.NotFound);
      await expectCode(c.listTagGroups({ scopeId: 'scope_nope' }), Code.NotFound);
    });

    it('validates fields and key uniqueness per tenant', async () => {
      await expectCode(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'E', key: 'env' }), Code.AlreadyExists, 'key');
      await expectCode(c.batchCreateTagGroups({ items: [
        { scopeId: 'scope_tenant_a', name: 'A', key: 'dup' }, { scopeId: 'scope_tenant_a', name: 'B', key: 'dup' },
      ] }), Code.InvalidArgument, 'items[1].key');
      await expectCode(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'N', key: 'neg', maxAppliedPerTarget: -1 }), Code.InvalidArgument, 'maxAppliedPerTarget');
      await expectCode(c.createTagGroup({ scopeId: 'scope_tenant_a', name: '', key: 'x' }), Code.InvalidArgument, 'name: is required');
      await expectCode(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'x', key: '' }), Code.InvalidArgument, 'key: is required');
      await expectCode(c.createTagGroup({ scopeId: 'scope_nope', name: 'x', key: 'x' }), Code.FailedPrecondition, 'scopeId');
      await c.createTagGroup({ scopeId: 'scope_tenant_b', name: 'Env', key: 'env' }); // another tenant: fine
    });

    it('patches only the fields present', async () => {
      const res = await c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: 2 });
      expect(res.tagGroup).toMatchObject({ name: 'Team', description: 'owning team', maxAppliedPerTarget: 2, isLocked: false });
      const res2 = await c.updateTagGroup({ id: 'tag_group_team', name: 'Teams', description: '' });
      expect(res2.tagGroup).toMatchObject({ name: 'Teams', description: '', maxAppliedPerTarget: 2 });
      await expectCode(c.updateTagGroup({ id: 'tag_group_team', name: '' }), Code.InvalidArgument, 'name');
      await expectCode(c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: -3 }), Code.InvalidArgument, 'maxAppliedPerTarget');
      await expectCode(c.updateTagGroup({ id: 'tag_group_nope', isLocked: true }), Code.NotFound);
    });
  });

  describe('tags', () => {
    it('creates tags in the group scope by default, gets and lists them by group', async () => {
      const res = await c.batchCreateTags({ items: [
        { id: 'tag_prod', tagGroupId: 'tag_group_env', identifier: 'prod', label: 'Production' },
        { id: 'tag_dev', tagGroupId: 'tag_group_env', identifier: 'dev', scopeId: 'scope_a1' },
        { id: 'tag_red', tagGroupId: 'tag_group_team', identifier: 'red' },
        { id: 'tag_blue', tagGroupId: 'tag_group_team', identifier: 'blue' },
        { id: 'tag_green', tagGroupId: 'tag_group_team', identifier: 'green' },
      ] });
      expect(res.tags[0]).toMatchObject({ scopeId: 'scope_tenant_a', label: 'Production', tenantId: 'tenant_a' });
      expect(res.tags[1]).toMatchObject({ scopeId: 'scope_a1', label: '' });
      expect((await c.getTag({ id: 'tag_prod' })).tag?.identifier).toBe('prod');
      expect((await c.listTags({ tagGroupId: 'tag_group_env' })).tags.map((t) => t.id)).toEqual(['tag_dev', 'tag_prod']);
      await expectCode(c.getTag({ id: 'tag_nope' }), Code.NotFound);
      await expectCode(c.listTags({}), Code.InvalidArgument, 'tagGroupId');
    });

    it('refuses locked groups, duplicate identifiers and missing or foreign references', async () => {
      await expectCode(c.createTag({ tagGroupId: 'tag_group_frozen', identifier: 'x' }), Code.FailedPrecondition, 'locked');
      await expectCode(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'prod' }), Code.AlreadyExists, 'identifier');
      await expectCode(c.batchCreateTags({ items: [
        { tagGroupId: 'tag_group_env', identifier: 'qa' }, { tagGroupId: 'tag_group_env', identifier: 'qa' },
      ] }), Code.InvalidArgument, 'items[1].identifier');
      await expectCode(c.createTag({ tagGroupId: 'tag_group_nope', identifier: 'x' }), Code.FailedPrecondition, 'tagGroupId');
      await expectCode(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'x', scopeId: 'scope_tenant_b' }), Code.FailedPrecondition, 'scopeId');
      await expectCode(c.createTag({ tagGroupId: 'tag_group_env', identifier: '' }), Code.InvalidArgument, 'identifier: is required');
    });
  });

  describe('tag assignments', () => {
    it('assigns tags to resources, subjects and scopes and lists them by target', async () => {
      const res = await c.batchCreateTagAssignments({ items: [
        { id: 'tag_assignment_1', tagId: 'tag_prod', targetType: 'resource', targetId: 'resource_doc' },
        { tagId: 'tag_red', targetType: 'subject', targetId: 'subject_alice' },
        { tagId: 'tag_dev', targetType: 'scope', targetId: 'scope_a1' },
      ] });
      expect(res.tagAssignments.map((a) => a.targetType)).toEqual(['resource', 'subject', 'scope']);
      expect((await c.listTagAssignments({ targetId: 'resource_doc' })).tagAssignments.map((a) => a.id)).toEqual(['tag_assignment_1']);
      expect((await c.listTagAssignments({ targetId: 'resource_nothing' })).tagAssignments).toEqual([]);
      await expectCode(c.listTagAssignments({}), Code.InvalidArgument, 'targetId');
    });

    it('refuses missing or foreign targets, bad target types and duplicates', async () => {
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_nope' }), Code.FailedPrecondition, 'targetId');
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_b' }), Code.FailedPrecondition, 'targetId');
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'resource', targetId: 'subject_bob' }), Code.FailedPrecondition, 'targetId');
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'role', targetId: 'role_viewer' }), Code.InvalidArgument, 'targetType');
      await expectCode(c.createTagAssignment({ tagId: 'tag_nope', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'tagId');
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_alice' }), Code.AlreadyExists);
    });

    it('enforces maxAppliedPerTarget against the store and earlier items of the batch', async () => {
      // env allows 1 per target: resource_doc already carries prod.
      await expectCode(c.createTagAssignment({ tagId: 'tag_dev', targetType: 'resource', targetId: 'resource_doc' }), Code.FailedPrecondition, 'at most 1');
      // team allows 2: alice has red; blue fits, green (the batch's second) does not.
      await expectCode(c.batchCreateTagAssignments({ items: [
        { id: 'tag_assignment_blue', tagId: 'tag_blue', targetType: 'subject', targetId: 'subject_alice' },
        { tagId: 'tag_green', targetType: 'subject', targetId: 'subject_alice' },
      ] }), Code.FailedPrecondition, 'items[1].tagId');
      expect((await c.listTagAssignments({ targetId: 'subject_alice' })).tagAssignments).toHaveLength(1);
      // Two of the group on bob within one batch are fine; a third is not.
      await c.batchCreateTagAssignments({ items: [
        { tagId: 'tag_blue', targetType: 'subject', targetId: 'subject_bob' },
        { tagId: 'tag_green', targetType: 'subject', targetId: 'subject_bob' },
      ] });
      await expectCode(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'at most 2');
      // 0 means no limit.
      await c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: 0 });
      await c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_bob' });
    });

    it('refuses assignments in a locked group; deleting still works', async () => {
      await c.updateTagGroup({ id: 'tag_group_env', isLocked: true });
      await expectCode(c.createTagAssignment({ tagId: 'tag_prod', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'locked');
      await expectCode(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'late' }), Code.FailedPrecondition, 'locked');
      await c.deleteTagAssignment({ id: 'tag_assignment_1' });
      expect((await c.listTagAssignments({ targetId: 'resource_doc' })).tagAssignments).toEqual([]);
      await expectCode(c.deleteTagAssignment({ id: 'tag_assignment_1' }), Code.NotFound);
    });
  });

  describe('tag bindings', () => {
    it('binds a tag to a role at a scope, lists and deletes', async () => {
      const res = await c.createTagBinding({ id: 'tag_binding_1', tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' });
      expect(res.tagBinding).toMatchObject({ tenantId: 'tenant_a', tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' });
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings.map((b) => b.id)).toEqual(['tag_binding_1']);
      await c.deleteTagBinding({ id: 'tag_binding_1' });
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings).toEqual([]);
      await expectCode(c.deleteTagBinding({ id: 'tag_binding_1' }), Code.NotFound);
    });

    it('refuses missing and foreign references, naming the field', async () => {
      await expectCode(c.createTagBinding({ tagId: 'tag_red', roleId: 'role_b', scopeId: 'scope_a1' }), Code.FailedPrecondition, 'roleId');
      await expectCode(c.createTagBinding({ tagId: 'tag_nope', roleId: 'role_viewer', scopeId: 'scope_a1' }), Code.FailedPrecondition, 'tagId');
      await expectCode(c.createTagBinding({ tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_nope' }), Code.FailedPrecondition, 'scopeId');
      await expectCode(c.batchCreateTagBindings({ items: [
        { tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' }, { tagId: 'tag_red', scopeId: 'scope_a1' },
      ] }), Code.InvalidArgument, 'items[1].roleId: is required');
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings).toEqual([]);
    });

    it('refuses a role that is not usable at the binding scope, as for a role assignment', async () => {
      await seedRows(app.db, 'tenant_a', 'role', [{ id: 'role_a1_only', scopeId: 'scope_a1', key: 'a1only', name: 'A1 only', description: '' }]);
      await expectCode(
        c.createTagBinding({ tagId: 'tag_red', roleId: 'role_a1_only', scopeId: 'scope_tenant_a' }),
        Code.FailedPrecondition,
        "roleId: role role_a1_only is defined at scope scope_a1, which is neither the binding's scope scope_tenant_a nor an ancestor of it",
      );
      await expectCode(c.batchCreateTagBindings({ items: [
        { tagId: 'tag_red', roleId: 'role_a1_only', scopeId: 'scope_a1' }, { tagId: 'tag_red', roleId: 'role_a1_only', scopeId: 'scope_tenant_a' },
      ] }), Code.FailedPrecondition, 'items[1].roleId');
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings).toEqual([]);
      const ok = await c.createTagBinding({ tagId: 'tag_red', roleId: 'role_a1_only', scopeId: 'scope_a1' });
      await c.deleteTagBinding({ id: ok.tagBinding!.id });
    });
  });
});
