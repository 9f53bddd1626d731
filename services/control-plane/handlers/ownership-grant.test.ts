import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, type TestApp, expectCode, seedRows } from '../../../test/harness.js';

describeEachBackend('OwnershipGrantService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof OwnershipGrantService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    await seedRows(app.db, 'tenant_a', 'subject', [{ id: 'subject_alice', type: 'user', externalId: 'alice' }, { id: 'subject_bob', type: 'user', externalId: 'bob' }]);
    await seedRows(app.db, 'tenant_a', 'role', [
      { id: 'role_owner', scopeId: 'scope_tenant_a', key: 'owner', name: 'Owner', description: '' },
      { id: 'role_editor', scopeId: 'scope_tenant_a', key: 'editor', name: 'Editor', description: '' },
    ]);
    await seedRows(app.db, 'tenant_b', 'subject', [{ id: 'subject_b', type: 'user', externalId: 'b' }]);
    await seedRows(app.db, 'tenant_b', 'role', [{ id: 'role_b', scopeId: 'scope_tenant_b', key: 'owner', name: 'Owner', description: '' }]);
    await app.client(ResourceTypeService).createResourceType({ id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_a' });
    await app.client(ResourceService).batchCreateResources({ items: [
      { id: 'resource_1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: '1' },
      { id: 'resource_2', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: '2' },
    ] });
    c = app.client(OwnershipGrantService);
  });
  afterAll(() => app?.close());

  it('creates grants and lists them by resource and by subject', async () => {
    let revision = '';
    const res = await c.batchCreateOwnershipGrants({ items: [
      { id: 'ownership_grant_1', subjectId: 'subject_alice', resourceId: 'resource_1', roleId: 'role_owner' },
      { subjectId: 'subject_alice', resourceId: 'resource_1', roleId: 'role_editor' },
      { subjectId: 'subject_bob', resourceId: 'resource_2', roleId: 'role_owner' },
    ] }, { onHeader: (h) => (revision = h.get('x-revision') ?? '') });
    expect(Number(revision)).toBeGreaterThan(0);
    expect(res.ownershipGrants[0]).toMatchObject({ id: 'ownership_grant_1', tenantId: 'tenant_a', subjectId: 'subject_alice', resourceId: 'resource_1', roleId: 'role_owner' });
    expect(res.ownershipGrants[1].id).toMatch(/^ownership_grant_/);
    expect((await c.listOwnershipGrants({ resourceId: 'resource_1' })).ownershipGrants).toHaveLength(2);
    expect((await c.listOwnershipGrants({ subjectId: 'subject_bob' })).ownershipGrants.map((g) => g.resourceId)).toEqual(['resource_2']);
    expect((await c.listOwnershipGrants({ subjectId: 'subject_alice', resourceId: 'resource_2' })).ownershipGrants).toEqual([]);
    await expectCode(c.listOwnershipGrants({}), Code.InvalidArgument, 'resourceId');
    await expectCode(c.listOwnershipGrants({ resourceId: 'resource_nope' }), Code.NotFound);
  });

  it('refuses duplicates, in the store and within a batch', async () => {
    await expectCode(c.createOwnershipGrant({ subjectId: 'subject_alice', resourceId: 'resource_1', roleId: 'role_owner' }), Code.AlreadyExists);
    await expectCode(c.batchCreateOwnershipGrants({ items: [
      { subjectId: 'subject_bob', resourceId: 'resource_1', roleId: 'role_owner' },
      { subjectId: 'subject_bob', resourceId: 'resource_1', roleId: 'role_owner' },
    ] }), Code.InvalidArgument, 'items[1]');
    await expectCode(c.batchCreateOwnershipGrants({ items: [
      { id: 'ownership_grant_d', subjectId: 'subject_bob', resourceId: 'resource_1', roleId: 'role_editor' },
      { id: 'ownership_grant_d', subjectId: 'subject_bob', resourceId: 'resource_2', roleId: 'role_editor' },
    ] }), Code.InvalidArgument, 'items[1].id');
    expect((await c.listOwnershipGrants({ subjectId: 'subject_bob' })).ownershipGrants).toHaveLength(1);
  });

  it('refuses missing and foreign references and missing fields, naming them', async () => {
    await expectCode(c.createOwnershipGrant({ subjectId: 'subject_b', resourceId: 'resource_1', roleId: 'role_owner' }), Code.FailedPrecondition, 'subjectId');
    await expectCode(c.createOwnershipGrant({ subjectId: 'subject_alice', resourceId: 'resource_1', roleId: 'role_b' }), Code.FailedPrecondition, 'roleId');
    await expectCode(c.createOwnershipGrant({ subjectId: 'subject_alice', resourceId: 'resource_nope', roleId: 'role_owner' }), Code.FailedPrecondition, 'resourceId');
    await expectCode(c.createOwnershipGrant({ subjectId: 'subject_nope', resourceId: 'resource_1', roleId: 'role_owner' }), Code.FailedPrecondition, 'subjectId');
    await expectCode(c.createOwnershipGrant({ subjectId: '', resourceId: 'resource_1', roleId: 'role_owner' }), Code.InvalidArgument, 'subjectId: is required');
    await expectCode(c.createOwnershipGrant({ id: 'grant_1', subjectId: 'subject_alice', resourceId: 'resource_2', roleId: 'role_owner' }), Code.InvalidArgument, 'id');
  });

  it('refuses a role that is not usable where the resource lives (defined below or beside its owner scope)', async () => {
    await seedRows(app.db, 'tenant_a', 'scope', [{ id: 'scope_a_team', name: 'team', typeId: 'scope_type_project', parentId: 'scope_tenant_a' }]);
    await seedRows(app.db, 'tenant_a', 'role', [{ id: 'role_team', scopeId: 'scope_a_team', key: 'team', name: 'Team', description: '' }]);
    await app.client(ResourceService).createResource({ id: 'resource_team', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_a_team', externalResourceId: 't' });
    await expectCode(
      c.createOwnershipGrant({ subjectId: 'subject_alice', resourceId: 'resource_2', roleId: 'role_team' }),
      Code.FailedPrecondition,
      "roleId: role role_team is defined at scope scope_a_team, which is neither the resource's owner scope scope_tenant_a nor an ancestor of it",
    );
    await expectCode(c.batchCreateOwnershipGrants({ items: [
      { subjectId: 'subject_alice', resourceId: 'resource_team', roleId: 'role_team' },
      { subjectId: 'subject_alice', resourceId: 'resource_2', roleId: 'role_team' },
    ] }), Code.FailedPrecondition, 'items[1].roleId');
    expect((await c.listOwnershipGrants({ resourceId: 'resource_team' })).ownershipGrants).toEqual([]);
    // Defined at the owner scope or above: fine.
    await c.batchCreateOwnershipGrants({ items: [
      { subjectId: 'subject_alice', resourceId: 'resource_team', roleId: 'role_team' },
      { subjectId: 'subject_bob', resourceId: 'resource_team', roleId: 'role_owner' },
    ] });
    expect((await c.listOwnershipGrants({ resourceId: 'resource_team' })).ownershipGrants).toHaveLength(2);
  });

  it('deletes a grant; a missing one is not_found', async () => {
    await c.deleteOwnershipGrant({ id: 'ownership_grant_1' });
    expect((await c.listOwnershipGrants({ resourceId: 'resource_1' })).ownershipGrants).toHaveLength(1);
    await expectCode(c.deleteOwnershipGrant({ id: 'ownership_grant_1' }), Code.NotFound);
  });
});
