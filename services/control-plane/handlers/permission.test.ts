import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { PermissionService } from '../../../gen/authz/v1/permission_service_pb.js';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import { runWrite } from '../../store/write.js';
import { describeEachBackend, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('PermissionService on %s', (backend) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
  });
  afterAll(() => app?.close());

  it('creates permissions with a composed key, x-revision and a change-log row', async () => {
    const c = app.client(PermissionService);
    let header = '';
    const { permission } = await c.createPermission(
      { id: 'permission_read', scopeId: 'scope_tenant_a', action: 'read', resourceType: 'document', resourcePattern: '*', name: 'Read docs' },
      { onHeader: (h) => { header = h.get('x-revision') ?? ''; } },
    );
    expect(permission).toMatchObject({ tenantId: 'tenant_a', key: 'document:read:*', name: 'Read docs', description: '' });
    const log = (await app.db.orm.em.fork().execute(
      'select kind, entity_id, data from change_log where tenant_id = ? and revision = ?', ['tenant_a', Number(header)],
    )) as { kind: string; entity_id: string; data: { key: string } }[];
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ kind: 'permission', entity_id: 'permission_read', data: { key: 'document:read:*' } });
    const { permissions } = await c.batchCreatePermissions({ items: [
      { id: 'permission_any', scopeId: 'scope_tenant_a', action: '*', resourceType: '*', resourcePattern: '*' },
      { id: 'permission_one', scopeId: 'scope_tenant_a', action: 'update', resourceType: 'document', resourcePattern: 'doc-42' },
    ] });
    expect(permissions.map((p) => p.key)).toEqual(['*:*:*', 'document:update:doc-42']);
    await c.createPermission({ id: 'permission_b', scopeId: 'scope_tenant_b', action: 'read', resourceType: '*', resourcePattern: '*' });
  });

  it('validates permissions and names the field; a failing batch writes nothing', async () => {
    const c = app.client(PermissionService);
    const ok = { scopeId: 'scope_tenant_a', action: 'read', resourceType: 'document', resourcePattern: '*' };
    await expectCode(c.createPermission({ ...ok, action: '' }), Code.InvalidArgument, 'action: is required');
    await expectCode(c.createPermission({ ...ok, resourceType: '' }), Code.InvalidArgument, 'resourceType: is required');
    await expectCode(c.batchCreatePermissions({ items: [{ ...ok, id: 'permission_x1' }, { ...ok, resourcePattern: '' }] }), Code.InvalidArgument, 'items[1].resourcePattern: is required');
    await expectCode(c.createPermission({ ...ok, scopeId: '' }), Code.InvalidArgument, 'scopeId: is required');
    await expectCode(c.createPermission({ ...ok, scopeId: 'scope_gone' }), Code.FailedPrecondition, 'scopeId');
    await expectCode(c.createPermission({ ...ok, action: 'x'.repeat(257) }), Code.InvalidArgument, 'action');
    await expectCode(c.createPermission({ ...ok, id: 'permission_read' }), Code.AlreadyExists);
    await expectCode(c.batchCreatePermissions({ items: [{ ...ok, id: 'permission_x2' }, { ...ok, id: 'permission_x2' }] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(app.client(PermissionService, userOf('tenant_b')).createPermission(ok), Code.PermissionDenied);
    await expectCode(c.getPermission({ id: 'permission_x1' }), Code.NotFound);
  });

  it('gets and lists by ids, scope or tenant', async () => {
    const c = app.client(PermissionService);
    expect((await c.getPermission({ id: 'permission_one' })).permission?.resourcePattern).toBe('doc-42');
    await expectCode(c.getPermission({ id: 'permission_nope' }), Code.NotFound);
    const byIds = await c.listPermissions({ ids: 'permission_read, permission_one,,permission_nope' });
    expect(byIds.permissions.map((p) => p.id).sort()).toEqual(['permission_one', 'permission_read']);
    expect((await c.listPermissions({ scopeId: 'scope_tenant_a' })).permissions).toHaveLength(3);
    expect((await c.listPermissions({ tenantId: 'tenant_b' })).permissions.map((p) => p.id)).toEqual(['permission_b']);
    expect((await c.listPermissions({ ids: 'permission_read,permission_b', tenantId: 'tenant_b' })).permissions.map((p) => p.id)).toEqual(['permission_b']);
    await expectCode(c.listPermissions({}), Code.InvalidArgument, 'one of ids, scopeId or tenantId');
    await expectCode(c.listPermissions({ scopeId: 'scope_gone' }), Code.NotFound);
    await expectCode(c.listPermissions({ tenantId: 'tenant_gone' }), Code.NotFound);
    const tooMany = Array.from({ length: 1001 }, (_, i) => `permission_${i}`).join(',');
    await expectCode(c.listPermissions({ ids: tooMany }), Code.InvalidArgument, 'ids');
    expect((await app.client(PermissionService, userOf('tenant_b')).listPermissions({ ids: 'permission_read,permission_b' })).permissions.map((p) => p.id))
      .toEqual(['permission_b']);
  });

  it('deletes a permission, its role permissions, and strips it from scope overrides', async () => {
    const c = app.client(PermissionService);
    const roles = app.client(RoleService);
    await roles.createRole({ id: 'role_r', scopeId: 'scope_tenant_a', key: 'r' });
    await roles.batchCreateRolePermissions({ items: [
      { id: 'role_permission_read', roleId: 'role_r', permissionId: 'permission_read' },
      { id: 'role_permission_one', roleId: 'role_r', permissionId: 'permission_one' },
    ] });
    await runWrite(app.db, async (tx) => {
      await tx.useTenant('tenant_a');
      const base = { tenantId: 'tenant_a', createdAt: new Date(), createdBy: 'test' };
      await tx.insert('scopeOverride', [
        { ...base, id: 'scope_override_add', scopeId: 'scope_tenant_a', roleId: 'role_r', mode: 'add', permissionIds: ['permission_read', 'permission_one'] },
        { ...base, id: 'scope_override_other', scopeId: 'scope_tenant_a', roleId: 'role_r', mode: 'remove', permissionIds: ['permission_one'] },
      ]);
    });
    let header = '';
    await c.deletePermission({ id: 'permission_read' }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    await expectCode(c.getPermission({ id: 'permission_read' }), Code.NotFound);
    expect((await roles.listRolePermissions({ roleId: 'role_r' })).rolePermissions.map((r) => r.id)).toEqual(['role_permission_one']);
    const overrides = (await app.db.orm.em.fork().execute('select id, permission_ids from scope_overrides order by id')) as { id: string; permission_ids: string[] }[];
    expect(overrides).toEqual([
      { id: 'scope_override_add', permission_ids: ['permission_one'] },
      { id: 'scope_override_other', permission_ids: ['permission_one'] },
    ]);
    const log = (await app.db.orm.em.fork().execute(
      'select op, kind, entity_id, data from change_log where tenant_id = ? and revision = ? order by seq', ['tenant_a', Number(header)],
    )) as { op: string; kind: string; entity_id: string; data: { permissionIds?: string[] } | null }[];
    expect(log.map((r) => `${r.op} ${r.kind} ${r.entity_id}`)).toEqual([
      'delete role_permission role_permission_read', 'upsert scope_override scope_override_add', 'delete permission permission_read',
    ]);
    expect(log[1].data?.permissionIds).toEqual(['permission_one']);
    await expectCode(c.deletePermission({ id: 'permission_read' }), Code.NotFound);
    await expectCode(app.client(PermissionService, userOf('tenant_b')).deletePermission({ id: 'permission_one' }), Code.PermissionDenied);
  });
});
