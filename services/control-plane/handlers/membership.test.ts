import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('MembershipService on %s', (backend) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    // tenant_a: root > scope_dept > scope_team
    await app.client(ScopeService).batchCreateScopes({ items: [
      { id: 'scope_dept', name: 'dept', typeId: 'scope_type_project', tenantId: 'tenant_a' },
      { id: 'scope_team', name: 'team', typeId: 'scope_type_environment', parentId: 'scope_dept' },
    ] });
    await app.client(SubjectService).batchCreateSubjects({ items: [
      { id: 'subject_ann', type: 'user', externalId: 'ann', tenantId: 'tenant_a' },
      { id: 'subject_ben', type: 'user', externalId: 'ben', tenantId: 'tenant_a' },
    ] });
    await app.client(SubjectService).createSubject({ id: 'subject_zed', type: 'user', externalId: 'zed', tenantId: 'tenant_b' });
    await app.client(RoleService).batchCreateRoles({ items: [
      { id: 'role_root', scopeId: 'scope_tenant_a', key: 'root' },
      { id: 'role_dept', scopeId: 'scope_dept', key: 'dept' },
      { id: 'role_team', scopeId: 'scope_team', key: 'team' },
    ] });
    await app.client(RoleService).createRole({ id: 'role_b', scopeId: 'scope_tenant_b', key: 'b' });
  });
  afterAll(() => app?.close());

  it('creates memberships with x-revision and a change-log row', async () => {
    const c = app.client(MembershipService);
    let header = '';
    const { memberships } = await c.batchCreateMemberships({ items: [
      { id: 'membership_ann_dept', subjectId: 'subject_ann', scopeId: 'scope_dept' },
      { id: 'membership_ben_team', subjectId: 'subject_ben', scopeId: 'scope_team' },
    ] }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    expect(memberships.map((m) => m.tenantId)).toEqual(['tenant_a', 'tenant_a']);
    const log = (await app.db.orm.em.fork().execute(
      'select kind, entity_id from change_log where tenant_id = ? and revision = ? order by seq', ['tenant_a', Number(header)],
    )) as { kind: string; entity_id: string }[];
    expect(log).toEqual([
      { kind: 'membership', entity_id: 'membership_ann_dept' }, { kind: 'membership', entity_id: 'membership_ben_team' },
    ]);
  });

  it('validates memberships: fields, refs, tenants, duplicates, reach', async () => {
    const c = app.client(MembershipService);
    await expectCode(c.createMembership({ scopeId: 'scope_dept' }), Code.InvalidArgument, 'subjectId: is required');
    await expectCode(c.batchCreateMemberships({ items: [{ subjectId: 'subject_ann', scopeId: 'scope_team' }, { subjectId: 'subject_ann' }] }), Code.InvalidArgument, 'items[1].scopeId: is required');
    await expectCode(c.createMembership({ subjectId: 'subject_nobody', scopeId: 'scope_dept' }), Code.FailedPrecondition, 'subjectId');
    await expectCode(c.createMembership({ subjectId: 'subject_ann', scopeId: 'scope_nowhere' }), Code.FailedPrecondition, 'scopeId');
    await expectCode(c.createMembership({ subjectId: 'subject_zed', scopeId: 'scope_dept' }), Code.FailedPrecondition, 'does not exist in the tenant this request writes');
    await expectCode(c.createMembership({ subjectId: 'subject_ann', scopeId: 'scope_dept' }), Code.AlreadyExists, 'already exists');
    await expectCode(c.batchCreateMemberships({ items: [
      { subjectId: 'subject_ann', scopeId: 'scope_tenant_a' }, { subjectId: 'subject_ann', scopeId: 'scope_tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].scopeId');
    await expectCode(c.batchCreateMemberships({ items: [
      { id: 'membership_x', subjectId: 'subject_ann', scopeId: 'scope_tenant_a' }, { id: 'membership_x', subjectId: 'subject_ben', scopeId: 'scope_tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.createMembership({ id: 'membership_ann_dept', subjectId: 'subject_ben', scopeId: 'scope_dept' }), Code.AlreadyExists);
    await expectCode(app.client(MembershipService, userOf('tenant_b')).createMembership({ subjectId: 'subject_ann', scopeId: 'scope_tenant_a' }), Code.PermissionDenied);
    // Nothing of the failed batches was written.
    expect((await c.listMemberships({ scopeId: 'scope_tenant_a' })).memberships).toEqual([]);
  });

  it('lists memberships by scope or subject', async () => {
    const c = app.client(MembershipService);
    expect((await c.listMemberships({ scopeId: 'scope_dept' })).memberships.map((m) => m.id)).toEqual(['membership_ann_dept']);
    expect((await c.listMemberships({ subjectId: 'subject_ben' })).memberships.map((m) => m.id)).toEqual(['membership_ben_team']);
    expect((await c.listMemberships({ subjectId: 'subject_ben', scopeId: 'scope_dept' })).memberships).toEqual([]);
    await expectCode(c.listMemberships({}), Code.InvalidArgument, 'scopeId or subjectId');
    await expectCode(c.listMemberships({ scopeId: 'scope_nowhere' }), Code.NotFound);
    await expectCode(app.client(MembershipService, userOf('tenant_b')).listMemberships({ scopeId: 'scope_dept' }), Code.PermissionDenied);
  });

  it('assigns roles defined at the membership scope or an ancestor only', async () => {
    const c = app.client(MembershipService);
    const { roleAssignments } = await c.batchCreateRoleAssignments({ items: [
      { id: 'role_assignment_1', membershipId: 'membership_ann_dept', roleId: 'role_root' },
      { id: 'role_assignment_2', membershipId: 'membership_ann_dept', roleId: 'role_dept' },
      { id: 'role_assignment_3', membershipId: 'membership_ben_team', roleId: 'role_team' },
    ] });
    expect(roleAssignments.map((r) => r.tenantId)).toEqual(['tenant_a', 'tenant_a', 'tenant_a']);
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_ann_dept', roleId: 'role_team' }), Code.FailedPrecondition, 'neither the membership');
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_ann_dept', roleId: 'role_b' }), Code.FailedPrecondition, 'roleId');
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_ann_dept', roleId: 'role_root' }), Code.AlreadyExists, 'already exists');
    await expectCode(c.batchCreateRoleAssignments({ items: [
      { membershipId: 'membership_ben_team', roleId: 'role_dept' }, { membershipId: 'membership_ben_team', roleId: 'role_dept' },
    ] }), Code.InvalidArgument, 'items[1].roleId');
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_nope', roleId: 'role_root' }), Code.FailedPrecondition, 'membershipId');
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_ann_dept', roleId: 'role_nope' }), Code.FailedPrecondition, 'roleId');
    await expectCode(c.createRoleAssignment({ membershipId: 'membership_ann_dept' }), Code.InvalidArgument, 'roleId: is required');
    await expectCode(app.client(MembershipService, userOf('tenant_b')).createRoleAssignment({ membershipId: 'membership_ann_dept', roleId: 'role_root' }), Code.PermissionDenied);
    expect((await c.listRoleAssignments({ membershipId: 'membership_ben_team' })).roleAssignments.map((r) => r.id)).toEqual(['role_assignment_3']);
    await expectCode(c.listRoleAssignments({ membershipId: '' }), Code.InvalidArgument, 'membershipId');
    await expectCode(c.listRoleAssignments({ membershipId: 'membership_nope' }), Code.NotFound);
  });

  it('deletes role assignments, and memberships with their role assignments', async () => {
    const c = app.client(MembershipService);
    await c.deleteRoleAssignment({ id: 'role_assignment_1' });
    expect((await c.listRoleAssignments({ membershipId: 'membership_ann_dept' })).roleAssignments.map((r) => r.id)).toEqual(['role_assignment_2']);
    await expectCode(c.deleteRoleAssignment({ id: 'role_assignment_1' }), Code.NotFound);
    await expectCode(app.client(MembershipService, userOf('tenant_b')).deleteMembership({ id: 'membership_ann_dept' }), Code.PermissionDenied);

    let header = '';
    await c.deleteMembership({ id: 'membership_ann_dept' }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    expect((await c.listMemberships({ subjectId: 'subject_ann' })).memberships).toEqual([]);
    const left = (await app.db.orm.em.fork().execute(`select id from role_assignments order by id`)) as { id: string }[];
    expect(left.map((r) => r.id)).toEqual(['role_assignment_3']);
    const log = (await app.db.orm.em.fork().execute(
      'select op, kind, entity_id from change_log where tenant_id = ? and revision = ? order by seq', ['tenant_a', Number(header)],
    )) as { op: string; kind: string; entity_id: string }[];
    expect(log.map((r) => `${r.op} ${r.kind} ${r.entity_id}`)).toEqual([
      'delete role_assignment role_assignment_2', 'delete membership membership_ann_dept',
    ]);
    await expectCode(c.deleteMembership({ id: 'membership_ann_dept' }), Code.NotFound);
  });

  it('handles 1,000-item batches of subjects, memberships and role assignments', async () => {
    const n = 1000;
    await app.client(SubjectService).batchCreateSubjects({ items: Array.from({ length: n }, (_, i) => (
      { id: `subject_bulk_${i}`, type: 'user', externalId: `bulk-${i}`, tenantId: 'tenant_a' }
    )) });
    const c = app.client(MembershipService);
    await c.batchCreateMemberships({ items: Array.from({ length: n }, (_, i) => (
      { id: `membership_bulk_${i}`, subjectId: `subject_bulk_${i}`, scopeId: i % 2 ? 'scope_team' : 'scope_dept' }
    )) });
    const { roleAssignments } = await c.batchCreateRoleAssignments({ items: Array.from({ length: n }, (_, i) => (
      { membershipId: `membership_bulk_${i}`, roleId: i % 3 ? 'role_dept' : 'role_root' }
    )) });
    expect(roleAssignments).toHaveLength(n);
    await expectCode(c.batchCreateMemberships({ items: Array.from({ length: n + 1 }, (_, i) => (
      { subjectId: `subject_bulk_${i}`, scopeId: 'scope_tenant_a' }
    )) }), Code.InvalidArgument, 'at most 1000');
  });
});
