import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import type { KindName, Row } from '../../store/kinds.js';
import type { Database } from '../../store/db.js';
import { runWrite } from '../../store/write.js';
import { BACKENDS, createTestApp, seedTenant, type TestApp } from '../../../test/harness.js';

async function expectError(p: Promise<unknown>, code: Code, text?: string): Promise<ConnectError> {
  let err: ConnectError | undefined;
  try {
    await p;
  } catch (e) {
    err = ConnectError.from(e);
  }
  if (!err) throw new Error('expected the call to fail');
  expect(Code[err.code], err.rawMessage).toBe(Code[code]);
  if (text) expect(err.rawMessage).toContain(text);
  return err;
}

async function seed(db: Database, tenantId: string, kind: KindName, rows: Row[]) {
  await runWrite(db, async (tx) => {
    await tx.useTenant(tenantId);
    await tx.insert(kind, rows.map((r) => ({ tenantId, createdAt: new Date(), createdBy: 'test', ...r })));
  });
}

describe.each(BACKENDS)('TagService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof TagService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seed(app.db, 'tenant_a', 'scope', [{ id: 'scope_a1', name: 'a1', typeId: 'scope_type_project', parentId: 'scope_tenant_a' }]);
    await seed(app.db, 'tenant_a', 'subject', [
      { id: 'subject_alice', type: 'user', externalId: 'alice' }, { id: 'subject_bob', type: 'user', externalId: 'bob' },
    ]);
    await seed(app.db, 'tenant_a', 'role', [{ id: 'role_viewer', scopeId: 'scope_tenant_a', key: 'viewer', name: 'Viewer', description: '' }]);
    await seed(app.db, 'tenant_b', 'role', [{ id: 'role_b', scopeId: 'scope_tenant_b', key: 'viewer', name: 'Viewer', description: '' }]);
    await seed(app.db, 'tenant_b', 'subject', [{ id: 'subject_b', type: 'user', externalId: 'b' }]);
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
      await expectError(c.getTagGroup({ id: 'tag_group_nope' }), Code.NotFound);
      await expectError(c.listTagGroups({ scopeId: 'scope_nope' }), Code.NotFound);
    });

    it('validates fields and key uniqueness per tenant', async () => {
      await expectError(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'E', key: 'env' }), Code.AlreadyExists, 'key');
      await expectError(c.batchCreateTagGroups({ items: [
        { scopeId: 'scope_tenant_a', name: 'A', key: 'dup' }, { scopeId: 'scope_tenant_a', name: 'B', key: 'dup' },
      ] }), Code.AlreadyExists, 'items[1].key');
      await expectError(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'N', key: 'neg', maxAppliedPerTarget: -1 }), Code.InvalidArgument, 'maxAppliedPerTarget');
      await expectError(c.createTagGroup({ scopeId: 'scope_tenant_a', name: '', key: 'x' }), Code.InvalidArgument, 'name: is required');
      await expectError(c.createTagGroup({ scopeId: 'scope_tenant_a', name: 'x', key: '' }), Code.InvalidArgument, 'key: is required');
      await expectError(c.createTagGroup({ scopeId: 'scope_nope', name: 'x', key: 'x' }), Code.FailedPrecondition, 'scopeId');
      await c.createTagGroup({ scopeId: 'scope_tenant_b', name: 'Env', key: 'env' }); // another tenant: fine
    });

    it('patches only the fields present', async () => {
      const res = await c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: 2 });
      expect(res.tagGroup).toMatchObject({ name: 'Team', description: 'owning team', maxAppliedPerTarget: 2, isLocked: false });
      const res2 = await c.updateTagGroup({ id: 'tag_group_team', name: 'Teams', description: '' });
      expect(res2.tagGroup).toMatchObject({ name: 'Teams', description: '', maxAppliedPerTarget: 2 });
      await expectError(c.updateTagGroup({ id: 'tag_group_team', name: '' }), Code.InvalidArgument, 'name');
      await expectError(c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: -3 }), Code.InvalidArgument, 'maxAppliedPerTarget');
      await expectError(c.updateTagGroup({ id: 'tag_group_nope', isLocked: true }), Code.NotFound);
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
      await expectError(c.getTag({ id: 'tag_nope' }), Code.NotFound);
      await expectError(c.listTags({}), Code.InvalidArgument, 'tagGroupId');
    });

    it('refuses locked groups, duplicate identifiers and missing or foreign references', async () => {
      await expectError(c.createTag({ tagGroupId: 'tag_group_frozen', identifier: 'x' }), Code.FailedPrecondition, 'locked');
      await expectError(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'prod' }), Code.AlreadyExists, 'identifier');
      await expectError(c.batchCreateTags({ items: [
        { tagGroupId: 'tag_group_env', identifier: 'qa' }, { tagGroupId: 'tag_group_env', identifier: 'qa' },
      ] }), Code.AlreadyExists, 'items[1].identifier');
      await expectError(c.createTag({ tagGroupId: 'tag_group_nope', identifier: 'x' }), Code.FailedPrecondition, 'tagGroupId');
      await expectError(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'x', scopeId: 'scope_tenant_b' }), Code.FailedPrecondition, 'scopeId');
      await expectError(c.createTag({ tagGroupId: 'tag_group_env', identifier: '' }), Code.InvalidArgument, 'identifier: is required');
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
      await expectError(c.listTagAssignments({}), Code.InvalidArgument, 'targetId');
    });

    it('refuses missing or foreign targets, bad target types and duplicates', async () => {
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_nope' }), Code.FailedPrecondition, 'targetId');
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_b' }), Code.FailedPrecondition, 'targetId');
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'resource', targetId: 'subject_bob' }), Code.FailedPrecondition, 'targetId');
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'role', targetId: 'role_viewer' }), Code.InvalidArgument, 'targetType');
      await expectError(c.createTagAssignment({ tagId: 'tag_nope', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'tagId');
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_alice' }), Code.AlreadyExists);
    });

    it('enforces maxAppliedPerTarget against the store and earlier items of the batch', async () => {
      // env allows 1 per target: resource_doc already carries prod.
      await expectError(c.createTagAssignment({ tagId: 'tag_dev', targetType: 'resource', targetId: 'resource_doc' }), Code.FailedPrecondition, 'at most 1');
      // team allows 2: alice has red; blue fits, green (the batch's second) does not.
      await expectError(c.batchCreateTagAssignments({ items: [
        { id: 'tag_assignment_blue', tagId: 'tag_blue', targetType: 'subject', targetId: 'subject_alice' },
        { tagId: 'tag_green', targetType: 'subject', targetId: 'subject_alice' },
      ] }), Code.FailedPrecondition, 'items[1].tagId');
      expect((await c.listTagAssignments({ targetId: 'subject_alice' })).tagAssignments).toHaveLength(1);
      // Two of the group on bob within one batch are fine; a third is not.
      await c.batchCreateTagAssignments({ items: [
        { tagId: 'tag_blue', targetType: 'subject', targetId: 'subject_bob' },
        { tagId: 'tag_green', targetType: 'subject', targetId: 'subject_bob' },
      ] });
      await expectError(c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'at most 2');
      // 0 means no limit.
      await c.updateTagGroup({ id: 'tag_group_team', maxAppliedPerTarget: 0 });
      await c.createTagAssignment({ tagId: 'tag_red', targetType: 'subject', targetId: 'subject_bob' });
    });

    it('refuses assignments in a locked group; deleting still works', async () => {
      await c.updateTagGroup({ id: 'tag_group_env', isLocked: true });
      await expectError(c.createTagAssignment({ tagId: 'tag_prod', targetType: 'subject', targetId: 'subject_bob' }), Code.FailedPrecondition, 'locked');
      await expectError(c.createTag({ tagGroupId: 'tag_group_env', identifier: 'late' }), Code.FailedPrecondition, 'locked');
      await c.deleteTagAssignment({ id: 'tag_assignment_1' });
      expect((await c.listTagAssignments({ targetId: 'resource_doc' })).tagAssignments).toEqual([]);
      await expectError(c.deleteTagAssignment({ id: 'tag_assignment_1' }), Code.NotFound);
    });
  });

  describe('tag bindings', () => {
    it('binds a tag to a role at a scope, lists and deletes', async () => {
      const res = await c.createTagBinding({ id: 'tag_binding_1', tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' });
      expect(res.tagBinding).toMatchObject({ tenantId: 'tenant_a', tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' });
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings.map((b) => b.id)).toEqual(['tag_binding_1']);
      await c.deleteTagBinding({ id: 'tag_binding_1' });
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings).toEqual([]);
      await expectError(c.deleteTagBinding({ id: 'tag_binding_1' }), Code.NotFound);
    });

    it('refuses missing and foreign references, naming the field', async () => {
      await expectError(c.createTagBinding({ tagId: 'tag_red', roleId: 'role_b', scopeId: 'scope_a1' }), Code.FailedPrecondition, 'roleId');
      await expectError(c.createTagBinding({ tagId: 'tag_nope', roleId: 'role_viewer', scopeId: 'scope_a1' }), Code.FailedPrecondition, 'tagId');
      await expectError(c.createTagBinding({ tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_nope' }), Code.FailedPrecondition, 'scopeId');
      await expectError(c.batchCreateTagBindings({ items: [
        { tagId: 'tag_red', roleId: 'role_viewer', scopeId: 'scope_a1' }, { tagId: 'tag_red', scopeId: 'scope_a1' },
      ] }), Code.InvalidArgument, 'items[1].roleId: is required');
      expect((await c.listTagBindings({ scopeId: 'scope_a1' })).tagBindings).toEqual([]);
    });
  });
});
