import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { RoleService } from '../../../gen/authz/v1/role_service_pb.js';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import { ApiKeyService } from '../../../gen/authz/v1/api_key_service_pb.js';
import { runWrite } from '../../store/write.js';
import { describeEachBackend, countRows, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('SubjectService on %s', (backend) => {
  let app: TestApp;
  const count = (table: string, column: string, value: string) => countRows(app.db, table, column, value);

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
  });
  afterAll(() => app?.close());

  it('creates subjects; tenant from the body or the key', async () => {
    const c = app.client(SubjectService);
    const { subjects } = await c.batchCreateSubjects({ items: [
      { id: 'subject_alice', type: 'user', externalId: 'alice', tenantId: 'tenant_a', metadata: { dept: 'eng', level: 3 } },
      { type: 'agent', externalId: 'bot-1', tenantId: 'tenant_a' },
    ] });
    expect(subjects[0]).toMatchObject({ id: 'subject_alice', tenantId: 'tenant_a', type: 'user', externalId: 'alice', metadata: { dept: 'eng', level: 3 } });
    expect(subjects[1].id).toMatch(/^subject_/);
    const mine = await app.client(SubjectService, userOf('tenant_b')).createSubject({ type: 'service', externalId: 'svc' });
    expect(mine.subject?.tenantId).toBe('tenant_b');
  });

  it('validates subjects and names the field; a failing batch writes nothing', async () => {
    const c = app.client(SubjectService);
    await expectCode(c.batchCreateSubjects({ items: [
      { id: 'subject_ok', type: 'user', externalId: 'ok', tenantId: 'tenant_a' }, { type: 'robot', externalId: 'x', tenantId: 'tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].type');
    await expectCode(c.getSubject({ id: 'subject_ok' }), Code.NotFound);
    await expectCode(c.createSubject({ type: 'user', tenantId: 'tenant_a' }), Code.InvalidArgument, 'externalId: is required');
    await expectCode(c.createSubject({ type: 'user', externalId: 'x' }), Code.InvalidArgument, 'tenantId');
    await expectCode(c.createSubject({ type: 'user', externalId: 'x', tenantId: 'tenant_none' }), Code.FailedPrecondition, 'tenantId');
    await expectCode(c.createSubject({ type: 'user', externalId: 'x'.repeat(257), tenantId: 'tenant_a' }), Code.InvalidArgument, 'externalId');
    await expectCode(c.createSubject({ type: 'user', externalId: 'x', tenantId: 'tenant_a', metadata: { blob: 'x'.repeat(17_000) } }), Code.InvalidArgument, 'metadata');
    await expectCode(c.batchCreateSubjects({ items: [
      { id: 'subject_d', type: 'user', externalId: 'a', tenantId: 'tenant_a' }, { id: 'subject_d', type: 'user', externalId: 'b', tenantId: 'tenant_a' },
    ] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.createSubject({ id: 'subject_alice', type: 'user', externalId: 'again', tenantId: 'tenant_a' }), Code.AlreadyExists);
    await expectCode(app.client(SubjectService, userOf('tenant_b')).createSubject({ type: 'user', externalId: 'x', tenantId: 'tenant_a' }), Code.PermissionDenied);
  });

  it('gets and lists subjects', async () => {
    const c = app.client(SubjectService);
    expect((await c.getSubject({ id: 'subject_alice' })).subject?.externalId).toBe('alice');
    await expectCode(c.getSubject({ id: 'subject_nobody' }), Code.NotFound);
    await expectCode(app.client(SubjectService, userOf('tenant_b')).getSubject({ id: 'subject_alice' }), Code.PermissionDenied);
    expect((await c.listSubjects({ tenantId: 'tenant_a' })).subjects).toHaveLength(2);
    expect((await c.listSubjects({ tenantId: 'tenant_a', externalId: 'alice' })).subjects.map((s) => s.id)).toEqual(['subject_alice']);
    expect((await c.listSubjects({ tenantId: 'tenant_a', externalId: 'nobody' })).subjects).toEqual([]);
    await expectCode(c.listSubjects({}), Code.InvalidArgument, 'tenantId: is required');
    await expectCode(c.listSubjects({ tenantId: 'tenant_zz' }), Code.NotFound);
  });

  it('replaces metadata on update, logged with x-revision', async () => {
    const c = app.client(SubjectService);
    let header = '';
    const { subject } = await c.updateSubject({ id: 'subject_alice', metadata: { dept: 'ops' } }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    expect(subject?.metadata).toEqual({ dept: 'ops' });
    expect((await c.getSubject({ id: 'subject_alice' })).subject?.metadata).toEqual({ dept: 'ops' });
    const rows = (await app.db.orm.em.fork().execute(
      'select op, kind, entity_id, data from change_log where tenant_id = ? and revision = ?', ['tenant_a', Number(header)],
    )) as { op: string; kind: string; entity_id: string; data: { metadata: unknown } }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ op: 'upsert', kind: 'subject', entity_id: 'subject_alice', data: { metadata: { dept: 'ops' } } });
    await expectCode(c.updateSubject({ id: 'subject_nobody', metadata: {} }), Code.NotFound);
    await expectCode(c.updateSubject({ id: 'subject_alice', metadata: { blob: 'x'.repeat(17_000) } }), Code.InvalidArgument, 'metadata');
  });

  it('deletes a subject with its memberships, role assignments, ownership grants and tag assignments', async () => {
    const subjects = app.client(SubjectService);
    await subjects.batchCreateSubjects({ items: [
      { id: 'subject_bob', type: 'user', externalId: 'bob', tenantId: 'tenant_a' },
      { id: 'subject_carol', type: 'user', externalId: 'carol', tenantId: 'tenant_a' },
    ] });
    await app.client(RoleService).createRole({ id: 'role_viewer', scopeId: 'scope_tenant_a', key: 'viewer' });
    const m = app.client(MembershipService);
    await m.batchCreateMemberships({ items: [
      { id: 'membership_bob', subjectId: 'subject_bob', scopeId: 'scope_tenant_a' },
      { id: 'membership_carol', subjectId: 'subject_carol', scopeId: 'scope_tenant_a' },
    ] });
    await m.batchCreateRoleAssignments({ items: [
      { id: 'role_assignment_bob', membershipId: 'membership_bob', roleId: 'role_viewer' },
      { id: 'role_assignment_carol', membershipId: 'membership_carol', roleId: 'role_viewer' },
    ] });
    // Rows owned by other services, written straight to the store.
    await runWrite(app.db, async (tx) => {
      await tx.useTenant('tenant_a');
      const base = { tenantId: 'tenant_a', createdAt: new Date(), createdBy: 'test' };
      await tx.insert('resourceType', [{ ...base, id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_a' }]);
      await tx.insert('resource', [{ ...base, id: 'resource_d1', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'd1' }]);
      await tx.insert('ownershipGrant', [
        { ...base, id: 'ownership_grant_bob', subjectId: 'subject_bob', resourceId: 'resource_d1', roleId: 'role_viewer' },
        { ...base, id: 'ownership_grant_carol', subjectId: 'subject_carol', resourceId: 'resource_d1', roleId: 'role_viewer' },
      ]);
      await tx.insert('tagGroup', [{ ...base, id: 'tag_group_g', scopeId: 'scope_tenant_a', name: 'g', key: 'g', description: '', origin: 'user', maxAppliedPerTarget: 0, isLocked: false }]);
      await tx.insert('tag', [{ ...base, id: 'tag_t', scopeId: 'scope_tenant_a', tagGroupId: 'tag_group_g', identifier: 't', label: '' }]);
      await tx.insert('tagAssignment', [
        { ...base, id: 'tag_assignment_bob', tagId: 'tag_t', targetType: 'subject', targetId: 'subject_bob' },
        { ...base, id: 'tag_assignment_carol', tagId: 'tag_t', targetType: 'subject', targetId: 'subject_carol' },
      ]);
    });

    let header = '';
    await subjects.deleteSubject({ id: 'subject_bob' }, { onHeader: (h) => { header = h.get('x-revision') ?? ''; } });
    await expectCode(subjects.getSubject({ id: 'subject_bob' }), Code.NotFound);
    expect(await count('memberships', 'subject_id', 'subject_bob')).toBe(0);
    expect(await count('role_assignments', 'id', 'role_assignment_bob')).toBe(0);
    expect(await count('ownership_grants', 'subject_id', 'subject_bob')).toBe(0);
    expect(await count('tag_assignments', 'target_id', 'subject_bob')).toBe(0);
    // Carol's rows are untouched.
    expect(await count('role_assignments', 'id', 'role_assignment_carol')).toBe(1);
    expect(await count('ownership_grants', 'subject_id', 'subject_carol')).toBe(1);
    expect(await count('tag_assignments', 'target_id', 'subject_carol')).toBe(1);
    const log = (await app.db.orm.em.fork().execute(
      'select op, kind, entity_id from change_log where tenant_id = ? and revision = ? order by seq', ['tenant_a', Number(header)],
    )) as { op: string; kind: string; entity_id: string }[];
    expect(log.map((r) => `${r.op} ${r.kind} ${r.entity_id}`)).toEqual([
      'delete role_assignment role_assignment_bob', 'delete membership membership_bob',
      'delete ownership_grant ownership_grant_bob', 'delete tag_assignment tag_assignment_bob', 'delete subject subject_bob',
    ]);
    await expectCode(subjects.deleteSubject({ id: 'subject_bob' }), Code.NotFound);
  });

  it('refuses to delete the subject of an API key, saying why', async () => {
    const { apiKey } = await app.client(ApiKeyService).createApiKey({ name: 'ci', tenantId: 'tenant_a', kind: 'service' });
    await expectCode(app.client(SubjectService).deleteSubject({ id: apiKey!.subjectId }), Code.FailedPrecondition, `API key ${apiKey!.id}`);
    expect((await app.client(SubjectService).getSubject({ id: apiKey!.subjectId })).subject?.type).toBe('service');
  });
});
