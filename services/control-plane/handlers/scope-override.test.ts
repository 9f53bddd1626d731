import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import { ScopeOverrideService } from '../../../gen/authz/v1/scope_override_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, type TestApp, expectCode, seedRows } from '../../../test/harness.js';

const permission = (id: string, scopeId: string) =>
  ({ id, scopeId, action: 'read', resourceType: '*', resourcePattern: '*', key: `*:read:*`, name: '', description: '' });

describeEachBackend('ScopeOverrideService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof ScopeOverrideService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seedRows(app.db, 'tenant_a', 'scope', [{ id: 'scope_a1', name: 'a1', typeId: 'scope_type_project', parentId: 'scope_tenant_a' }]);
    await seedRows(app.db, 'tenant_a', 'role', [{ id: 'role_editor', scopeId: 'scope_tenant_a', key: 'editor', name: 'Editor', description: '' }]);
    await seedRows(app.db, 'tenant_a', 'permission', [permission('permission_read', 'scope_tenant_a'), permission('permission_write', 'scope_tenant_a')]);
    await seedRows(app.db, 'tenant_b', 'role', [{ id: 'role_b', scopeId: 'scope_tenant_b', key: 'editor', name: 'Editor', description: '' }]);
    await seedRows(app.db, 'tenant_b', 'permission', [permission('permission_b', 'scope_tenant_b')]);
    c = app.client(ScopeOverrideService);
  });
  afterAll(() => app?.close());

  it('creates block, add and remove overrides and lists them by scope', async () => {
    const res = await c.batchCreateScopeOverrides({ items: [
      { id: 'scope_override_block', scopeId: 'scope_a1', roleId: 'role_editor', mode: 'block' },
      { scopeId: 'scope_a1', roleId: 'role_editor', mode: 'add', permissionIds: ['permission_read', 'permission_write'] },
      { scopeId: 'scope_tenant_a', roleId: 'role_editor', mode: 'remove', permissionIds: ['permission_write'] },
    ] });
    expect(res.scopeOverrides.map((o) => [o.mode, o.permissionIds])).toEqual([
      ['block', []], ['add', ['permission_read', 'permission_write']], ['remove', ['permission_write']],
    ]);
    expect(res.scopeOverrides[0]).toMatchObject({ id: 'scope_override_block', tenantId: 'tenant_a', scopeId: 'scope_a1', roleId: 'role_editor' });
    expect(res.scopeOverrides[1].id).toMatch(/^scope_override_/);
    expect((await c.listScopeOverrides({ scopeId: 'scope_a1' })).scopeOverrides).toHaveLength(2);
    await expectCode(c.listScopeOverrides({}), Code.InvalidArgument, 'scopeId');
    await expectCode(c.listScopeOverrides({ scopeId: 'scope_nope' }), Code.NotFound);
  });

  it('requires permissionIds for add and remove and refuses them for block', async () => {
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'add' }), Code.InvalidArgument, 'permissionIds: is required');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'remove', permissionIds: [] }), Code.InvalidArgument, 'permissionIds');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'block', permissionIds: ['permission_read'] }), Code.InvalidArgument, 'permissionIds: must be empty');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'grant' }), Code.InvalidArgument, 'mode');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor' }), Code.InvalidArgument, 'mode');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'add', permissionIds: ['permission_read', 'permission_read'] }), Code.InvalidArgument, 'permissionIds[1]');
  });

  it('refuses missing and foreign references, naming the field, and writes nothing', async () => {
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'add', permissionIds: ['permission_read', 'permission_nope'] }), Code.FailedPrecondition, 'permissionIds[1]');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'add', permissionIds: ['permission_b'] }), Code.FailedPrecondition, 'permissionIds[0]');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_a1', roleId: 'role_b', mode: 'block' }), Code.FailedPrecondition, 'roleId');
    await expectCode(c.createScopeOverride({ scopeId: 'scope_nope', roleId: 'role_editor', mode: 'block' }), Code.FailedPrecondition, 'scopeId');
    await expectCode(c.batchCreateScopeOverrides({ items: [
      { id: 'scope_override_x', scopeId: 'scope_tenant_a', roleId: 'role_editor', mode: 'block' },
      { scopeId: 'scope_tenant_a', roleId: '', mode: 'block' },
    ] }), Code.InvalidArgument, 'items[1].roleId: is required');
    await expectCode(c.batchCreateScopeOverrides({ items: Array.from({ length: 1001 }, () => ({ scopeId: 'scope_a1', roleId: 'role_editor', mode: 'block' })) }), Code.InvalidArgument);
    expect((await c.listScopeOverrides({ scopeId: 'scope_tenant_a' })).scopeOverrides).toHaveLength(1);
  });

  it('deletes an override; a missing one is not_found', async () => {
    await c.deleteScopeOverride({ id: 'scope_override_block' });
    expect((await c.listScopeOverrides({ scopeId: 'scope_a1' })).scopeOverrides.map((o) => o.mode)).toEqual(['add']);
    await expectCode(c.deleteScopeOverride({ id: 'scope_override_block' }), Code.NotFound);
  });
});
