import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import { PermissionService } from '../../../gen/authz/v1/permission_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import { runWrite } from '../../store/write.js';
import { describeEachBackend, countRows, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('RoleService on %s', (backend) => {
  let app: TestApp;
  const count = (table: string, column: string, value: string) => countRows(app.db, table, column, value);

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    // tenant_a: root > scope_dept > scope_team
    await app.client(ScopeService).batchCreateScopes({ items: [
      { id: 'scope_dept', name: 'dept', typeId: 'scope_type_project', tenantId: 'tenant_a' },
      { id: 'scope_team', name: 'team', typeId: 'scope_type_environment', parentId: 'scope_dept' },
    ] });
    await app.client(PermissionService).batchCreatePermissions({ items: [
      { id: 'permission_root_read', scopeId: 'scope_tenant_a', action: 'read', resourceType: 'doc', resourcePattern: '*' },
      { id: 'permission_dept_write', scopeId: 'scope_dept', action: 'write', resourceType: 'doc', resourcePattern: '*' },
      { id: 'permission_team_delete', scopeId: 'scope_team', action: 'delete', resourceType: '*', resourcePattern: '*' },
    ] });
    await app.client(PermissionService).createPermission({ id: 'permission_b_read', scopeId: 'scope_tenant_b', action: 'read', resourceType: '*', resourcePattern: '*' });
  });
  afterAll(() => app?.close());

  it('creates roles with x-revision and a change-log row; name defaults to the key', async () => {
    const c = app.client(RoleService);
    let header = '';
    const { role } = await c.createRole({ id: 'role_editor', scopeId: 'scope_dept', key: 'editor', description: 'edits' }, {
      onHeader: (h) => { header = h.get('x-revision') ?? ''; },
    });
    expect(role).toMatchObject({ id: 'role_editor', tenantId: 'tenant_a', scopeId: 'scope_dept', key: 'editor', name: 'editor', description: 'edits' });
    const log = (await app.db.orm.em.fork().execute(
      'select kind, entity_id from change_log where tenant_id = ? and revision = ?', ['tenant_a', Number(header)],
    )) as { kind: string; entity_id: string }[];
    expect(log).toEqual([{ kind: 'role', entity_id: 'role_editor' }]);
    const { roles } = await c.batchCreateRoles({ items: [
      { id: 'role_admin', scopeId: 'scope_tenant_a', key: 'admin', name: 'Administrator' },
      { id: 'role_editor_team', scopeId: 'scope_team', key: 'editor' },
    ] });
    expect(roles.map((r) => r.name)).toEqual(['Administrator', 'editor']);
  });

  it('validates roles: required fields, missing scope, duplicate keys, reach', async () => {
    const c = app.client(RoleService);
    await expectCode(c.createRole({ scopeId: 'scope_dept' }), Code.InvalidArgument, 'key: is required');
    await expectCode(c.batchCreateRoles({ items: [{ scopeId: 'scope_dept', key: 'x1' }, { key: 'x2' }] }), Code.InvalidArgument, 'items[1].scopeId: is required');
    await expectCode(c.createRole({ scopeId: 'scope_nowhere', key: 'x' }), Code.FailedPrecondition, 'scopeId');
    await expectCode(c.createRole({ scopeId: 'scope_dept', key: 'editor' }), Code.AlreadyExists, 'a role with key "editor" at scope scope_dept already exists');
    await expectCode(c.batchCreateRoles({ items: [
      { id: 'role_r1', scopeId: 'scope_dept', key: 'same' }, { id: 'role_r2', scopeId: 'scope_dept', key: 'same' },
    ] }), Code.InvalidArgument, 'items[1].key');
    await expectCode(c.batchCreateRoles({ items: [
      { id: 'role_r3', scopeId: 'scope_dept', key: 'k3' }, { id: 'role_r3', scopeId: 'scope_dept', key: 'k4' },
    ] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.createRole({ id: 'role_editor', scopeId: 'scope_team', key: 'other' }), Code.AlreadyExists);
    await expectCode(c.createRole({ id: 'bad id', scopeId: 'scope_team', key: 'other' }), Code.InvalidArgument, 'id');
    await expectCode(app.client(RoleService, userOf('tenant_b')).createRole({ scopeId: 'scope_dept', key: 'x' }), Code.PermissionDenied);
    expect((await c.listRoles({ scopeId: 'scope_dept' })).roles.map((r) => r.id)).toEqual(['role_editor']);
  });

  it('gets and lists roles', async () => {
    const c = app.client(RoleService);
    expect((await c.getRole({ id: 'role_admin' })).role?.key).toBe('admin');
    await expectCode(c.getRole({ id: 'role_missing' }), Code.NotFound);
    await expectCode(app.client(RoleService, userOf('tenant_b')).getRole({ id: 'role_admin' }), Code.PermissionDenied);
    expect((await c.listRoles({ scopeId: 'scope_team' })).roles.map((r) => r.id)).toEqual(['role_editor_team']);
    await expectCode(c.listRoles({}), Code.InvalidArgument, 'scopeId');
    await expectCode(c.listRoles({ scopeId: 'scope_missing' }), Code.NotFound);
  });

  it('grants permissions of the role scope or its ancestors, in the same tenant', async () => {
    const c = app.client(RoleService);
    const { rolePermissions } = await c.batchCreateRolePermissions({ items: [
      { id: 'role_permission_1', roleId: 'role_editor', permissionId: 'permission_root_read' },
      { id: 'role_permission_2', roleId: 'role_editor', permissionId: 'permission_dept_write' },
    ] });
    expect(rolePermissions.map((r) => r.tenantId)).toEqual(['tenant_a', 'tenant_a']);
    await expectCode(c.createRolePermission({ roleId: 'role_editor', permissionId: 'permission_team_delete' }), Code.FailedPrecondition, 'neither role role_editor');
    await expectCode(c.createRolePermission({ roleId: 'role_editor', permissionId: 'permission_b_read' }), Code.FailedPrecondition, 'permissionId');
    await expectCode(c.createRolePermission({ roleId: 'role_editor', permissionId: 'permission_root_read' }), Code.AlreadyExists, 'already exists');
    await expectCode(c.batchCreateRolePermissions({ items: [
      { roleId: 'role_editor_team', permissionId: 'permission_team_delete' }, { roleId: 'role_editor_team', permissionId: 'permission_team_delete' },
    ] }), Code.InvalidArgument, 'items[1].permissionId');
    await expectCode(c.createRolePermission({ roleId: 'role_missing', permissionId: 'permission_root_read' }), Code.FailedPrecondition, 'roleId');
    await expectCode(c.createRolePermission({ roleId: 'role_editor', permissionId: 'permission_missing' }), Code.FailedPrecondition, 'permissionId');
    await expectCode(c.createRolePermission({ roleId: 'role_editor' }), Code.InvalidArgument, 'permissionId: is required');
    await expectCode(app.client(RoleService, userOf('tenant_b')).createRolePermission({ roleId: 'role_editor', permissionId: 'permission_root_read' }), Code.PermissionDenied);
    expect((await c.listRolePermissions({ roleId: 'role_editor_team' })).rolePermissions).toEqual([]);
    expect((await c.listRolePermissions({ roleId: 'role_editor' })).rolePermissions.map((r) => r.permissionId).sort())
      .toEqual(['permission_dept_write', 'permission_root_read']);
    await expectCode(c.listRolePermissions({ roleId: 'role_missing' }), Code.NotFound);

    await c.deleteRolePermission({ id: 'role_permission_2' });
    expect((await c.listRolePermissions({ roleId: 'role_editor' })).rolePermissions.map((r) => r.id)).toEqual(['role_permission_1']);
    await expectCode(c.deleteRolePermission({ id: 'role_permission_2' }), Code.NotFound);
  });

  it('deletes a role with its permissions, assignments, overrides, bindings and grants', async () => {
    const c = app.client(RoleService);
    await c.createRole({ id: 'role_doomed', scopeId: 'scope_tenant_a', key: 'doomed' });
    await c.createRolePermission({ id: 'role_permission_d', roleId: 'role_doomed', permissionId: 'permission_root_read' });
    await app.client(SubjectService).createSubject({ id: 'subject_dan', type: 'user', externalId: 'dan', tenantId: 'tenant_a' });
    await app.client(MembershipService).createMembership({ id: 'membership_dan', subjectId: 'subject_dan', scopeId: 'scope_dept' });
    await app.client(MembershipService).batchCreateRoleAssignments({ items: [
      { id: 'role_assignment_d', membershipId: 'membership_dan', roleId: 'role_doomed' },
      { id: 'role_assignment_keep', membershipId: 'membership_dan', roleId: 'role_editor' },
    ] });
    await runWrite(app.db, async (tx) => {
      await tx.useTenant('tenant_a');
      const base = { tenantId: 'tenant_a', createdAt: new Date(), createdBy: 'test' };
      await tx.insert('scopeOverride', [{ ...base, id: 'scope_override_d', scopeId: 'scope_team', roleId: 'role_doomed', mode: 'block', permissionIds: [] }]);
      await tx.insert('tagGroup', [{ ...base, id: 'tag_group_g', scopeId: 'scope_tenant_a', name: 'g', key: 'g', description: '', origin: 'user', maxAppliedPerTarget: 0, isLocked: false }]);
      await tx.insert('tag', [{ ...base, id: 'tag_t', scopeId: 'scope_tenant_a', tagGroupId: 'tag_group_g', identifier: 't', label: '' }]);
      await tx.insert('tagBinding', [{ ...base, id: 'tag_binding_d', tagId: 'tag_t', roleId: 'role_doomed', scopeId: 'scope_dept' }]);
      await tx.insert('resourceType', [{ ...base, id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_a' }]);
      await tx.insert('resource', [{ ...base, id: 'resource_d1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'd1' }]);
      await tx.insert('ownershipGrant', [{ ...base, id: 'ownership_grant_d', subjectId: 'subject_dan', resourceId: 'resource_d1', roleId: 'role_doomed' }]);
    });

    let header = '';
    await c.deleteRole({ id: 'role_doomed' }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    await expectCode(c.getRole({ id: 'role_doomed' }), Code.NotFound);
    for (const table of ['role_permissions', 'role_assignments', 'scope_overrides', 'tag_bindings', 'ownership_grants']) {
      expect(await count(table, 'role_id', 'role_doomed')).toBe(0);
    }
    expect(await count('role_assignments', 'id', 'role_assignment_keep')).toBe(1);
    expect(await count('role_permissions', 'id', 'role_permission_1')).toBe(1);
    const log = (await app.db.orm.em.fork().execute(
      'select op, kind, entity_id from change_log where tenant_id = ? and revision = ? order by seq', ['tenant_a', Number(header)],
    )) as { op: string; kind: string; entity_id: string }[];
    expect(log.map((r) => `${r.op} ${r.kind} ${r.entity_id}`)).toEqual([
      'delete role_permission role_permission_d', 'delete role_assignment role_assignment_d', 'delete scope_override scope_override_d',
      'delete tag_binding tag_binding_d', 'delete ownership_grant ownership_grant_d', 'delete role role_doomed',
    ]);
    await expectCode(c.deleteRole({ id: 'role_doomed' }), Code.NotFound);
    await expectCode(app.client(RoleService, userOf('tenant_b')).deleteRole({ id: 'role_editor' }), Code.PermissionDenied);
  });
});
