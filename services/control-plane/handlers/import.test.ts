import { afterAll, beforeAll, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { ImportService, type ImportEntitySchema } from '../../../gen/authz/v1/import_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { OwnershipGrantService } from '../../../gen/authz/v1/ownership_grant_service_pb.js';
import { MembershipService } from '../../../gen/authz/v1/membership_service_pb.js';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { changesAfter } from '../../store/change-log.js';
import {
  createTestApp, describeEachBackend, expectCode, revisionGaps, seedRows, seedTenant, storeDigest, userOf, type TestApp,
} from '../../../test/harness.js';

type Entity = MessageInitShape<typeof ImportEntitySchema>;

const resource = (type: string, externalId: string, more: Record<string, unknown> = {}): Entity => ({ entity: { case: 'resource', value: { type, externalId, ...more } } });
const subject = (externalId: string, type = 'user'): Entity => ({ entity: { case: 'subject', value: { type, externalId } } });
const edge = (parent: string, child: string, cascade = 'inherit'): Entity =>
  ({ entity: { case: 'resourceEdge', value: { parent: { type: 'folder', externalId: parent }, child: { type: 'doc', externalId: child }, cascade } } });
const grant = (who: string, type: string, externalId: string, role: string): Entity =>
  ({ entity: { case: 'ownershipGrant', value: { subject: { externalId: who }, resource: { type, externalId }, role } } });
const membership = (who: string, roles: string[], scopeId?: string): Entity => ({ entity: { case: 'membership', value: { subject: { externalId: who }, scopeId, roles } } });
const link = (type: string, externalId: string, scopeId: string, linkType = 'share'): Entity =>
  ({ entity: { case: 'scopeLink', value: { resource: { type, externalId }, scopeId, linkType } } });

describeEachBackend('ImportService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof ImportService>;
  const T = 'tenant_imp';
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, T);
    await seedTenant(app.db, 'tenant_other');
    await seedRows(app.db, T, 'scope', [{ id: 'scope_eng', name: 'eng', typeId: 'scope_type_tenant', parentId: `scope_${T}` }]);
    await seedRows(app.db, T, 'resourceType', [
      { id: 'resource_type_folder', name: 'Folder', key: 'folder', scopeId: `scope_${T}` },
      { id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: `scope_${T}` },
      { id: 'resource_type_eng', name: 'Eng only', key: 'engdoc', scopeId: 'scope_eng' },
    ]);
    await seedRows(app.db, T, 'resourceTypeEdge', [{ id: 'resource_type_edge_fd', parentTypeId: 'resource_type_folder', childTypeId: 'resource_type_doc' }]);
    await seedRows(app.db, T, 'role', [
      { id: 'role_owner', scopeId: `scope_${T}`, key: 'owner', name: 'Owner', description: '' },
      { id: 'role_viewer', scopeId: `scope_${T}`, key: 'viewer', name: 'Viewer', description: '' },
      { id: 'role_eng_viewer', scopeId: 'scope_eng', key: 'viewer', name: 'Eng viewer', description: '' },
    ]);
    await seedRows(app.db, T, 'permission', [{ id: 'permission_doc_read', scopeId: `scope_${T}`, action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }]);
    await seedRows(app.db, T, 'rolePermission', [{ id: 'role_permission_owner_read', roleId: 'role_owner', permissionId: 'permission_doc_read' }]);
    c = app.client(ImportService);
  });
  afterAll(() => app?.close());

  const send = (importId: string, sequence: number, firstLine: number, entities: Entity[], client = c) =>
    client.importBatch({ tenantId: T, importId, sequence, firstLine, entities });

  it('writes every kind in one revision, readable through the entity APIs, each entity in the change log', async () => {
    const before = await storeDigest(app.db);
    const res = await send('first', 1, 1, [
      subject('alice'), subject('bob'),
      resource('folder', 'f1', { displayName: 'Folder 1' }),
      resource('doc', 'd1', { scopeId: 'scope_eng', attributes: { size: 3 } }),
      edge('f1', 'd1'),
      link('doc', 'd1', `scope_${T}`),
      grant('alice', 'doc', 'd1', 'owner'),
      membership('bob', ['viewer'], 'scope_eng'),
    ]);
    expect(res).toMatchObject({ importId: 'first', sequence: 1, applied: true, nextLine: 9 });
    expect(res.counts).toMatchObject({ resources: 2, subjects: 2, resourceEdges: 1, scopeLinks: 1, ownershipGrants: 1, memberships: 1, roleAssignments: 1 });
    const after = await storeDigest(app.db);
    expect(after.revisions - before.revisions).toBe(1);
    expect(after.changeLog - before.changeLog).toBe(9);
    expect(await revisionGaps(app.db)).toEqual([]);

    const log = await changesAfter(app.db, T, Number(res.revision) - 1);
    expect(log.every((r) => Number(r.revision) === Number(res.revision))).toBe(true);
    expect(log.map((r) => r.kind)).toEqual(['subject', 'subject', 'resource', 'resource', 'membership', 'role_assignment', 'resource_edge', 'resource_scope_link', 'ownership_grant']);

    const d1 = log.find((r) => r.kind === 'resource' && r.data?.externalResourceId === 'd1')!;
    const got = await app.client(ResourceService).getResource({ id: d1.entity_id });
    expect(got.resource).toMatchObject({ externalResourceId: 'd1', ownerScopeId: 'scope_eng', resourceTypeId: 'resource_type_doc', tenantId: T, attributes: { size: 3 } });
    expect((await app.client(ResourceService).getResourceParent({ id: d1.entity_id })).resource?.externalResourceId).toBe('f1');
    const alice = (await app.client(SubjectService).listSubjects({ tenantId: T, externalId: 'alice' })).subjects;
    expect(alice).toHaveLength(1);
    const grants = (await app.client(OwnershipGrantService).listOwnershipGrants({ resourceId: d1.entity_id })).ownershipGrants;
    expect(grants).toMatchObject([{ subjectId: alice[0].id, roleId: 'role_owner' }]);
    const bob = (await app.client(SubjectService).listSubjects({ tenantId: T, externalId: 'bob' })).subjects[0];
    const [m] = (await app.client(MembershipService).listMemberships({ subjectId: bob.id })).memberships;
    expect(m.scopeId).toBe('scope_eng');
    // The nearest role of the key: `viewer` at scope_eng, not the root's.
    expect((await app.client(MembershipService).listRoleAssignments({ membershipId: m.id })).roleAssignments.map((a) => a.roleId)).toEqual(['role_eng_viewer']);

    // The decision path sees the grant (ownership leg), at the batch's revision.
    const decision = await app.client(DecisionService).evaluate({
      actor: { subjectId: alice[0].id }, scopeId: 'scope_eng', action: 'read', resource: { resourceType: 'doc', externalResourceId: 'd1' },
      consistency: { minRevision: res.revision },
    });
    expect(decision).toMatchObject({ allowed: true, reason: 'ownership' });
  });

  it('refuses a bad line naming its line and field, and writes nothing of the batch', async () => {
    const before = await storeDigest(app.db);
    const err = await expectCode(send('bad', 1, 101, [resource('doc', 'x1'), resource('doc', 'x2'), resource('doc', '')]), Code.InvalidArgument, 'line 103');
    expect(err.rawMessage).toContain('entities[2].resource.externalId');
    await expectCode(send('bad', 1, 101, [resource('doc', 'x1'), resource('nope', 'x2')]), Code.FailedPrecondition, 'line 102: entities[1].resource.type: resource type "nope" does not exist');
    await expectCode(send('bad', 1, 1, [resource('doc', 'x1'), resource('doc', 'x1')]), Code.InvalidArgument, 'also created by line 1');
    await expectCode(send('bad', 1, 1, [resource('doc', 'x1'), resource('doc', 'd1')]), Code.AlreadyExists, 'line 2');
    await expectCode(send('bad', 1, 1, [subject('alice')]), Code.AlreadyExists, 'line 1');
    await expectCode(send('bad', 1, 1, [resource('engdoc', 'x1')]), Code.FailedPrecondition, 'entities[0].resource.type');
    await expectCode(send('bad', 1, 1, [resource('doc', 'x1', { scopeId: 'scope_tenant_other' })]), Code.FailedPrecondition, 'entities[0].resource.scopeId');
    await expectCode(send('bad', 1, 1, [grant('nobody', 'doc', 'd1', 'owner')]), Code.FailedPrecondition, 'entities[0].ownershipGrant.subject');
    await expectCode(send('bad', 1, 1, [grant('alice', 'doc', 'd1', 'nope')]), Code.FailedPrecondition, 'entities[0].ownershipGrant.role');
    await expectCode(send('bad', 1, 1, [grant('alice', 'doc', 'd1', 'owner')]), Code.AlreadyExists, 'entities[0].ownershipGrant.role');
    await expectCode(send('bad', 1, 1, [resource('folder', 'f2'), edge('f2', 'd1')]), Code.FailedPrecondition, 'at most one parent');
    await expectCode(send('bad', 1, 1, [{ entity: { case: undefined } }]), Code.InvalidArgument, 'entities[0]');
    expect(await storeDigest(app.db)).toEqual(before);
  });

  it('answers a batch sent again without writing it twice, and resumes from the line it names', async () => {
    const first = await send('resume', 1, 1, [resource('doc', 'r1'), resource('doc', 'r2')]);
    expect(first).toMatchObject({ applied: true, nextLine: 3 });
    const before = await storeDigest(app.db);
    const again = await send('resume', 1, 1, [resource('doc', 'r1'), resource('doc', 'r2')]);
    expect(again).toMatchObject({ applied: false, nextLine: 3, revision: first.revision });
    expect(await storeDigest(app.db)).toEqual(before);
    expect(await c.getImport({ tenantId: T, importId: 'resume' })).toMatchObject({ lastSequence: 1, nextLine: 3, revision: first.revision, counts: { resources: 2 } });
    await expectCode(send('resume', 2, 7, [resource('doc', 'r3')]), Code.FailedPrecondition, 'must start at line 3');
    const second = await send('resume', 2, 3, [resource('doc', 'r3')]);
    expect(second).toMatchObject({ applied: true, nextLine: 4 });
    expect(await c.getImport({ tenantId: T, importId: 'resume' })).toMatchObject({ lastSequence: 2, nextLine: 4, counts: { resources: 3 } });
    await expectCode(c.getImport({ tenantId: T, importId: 'never' }), Code.NotFound);
  });

  it('commits batches in sequence order: one sent while its predecessor is written waits for it, one sent alone is refused', async () => {
    const before = await storeDigest(app.db);
    await expectCode(send('order', 2, 2, [resource('doc', 'o2')]), Code.Aborted, 'sequence: batch 2 of import order follows batch 1, which is not committed');
    expect(await storeDigest(app.db)).toEqual(before);
    const first = send('order', 1, 1, [resource('doc', 'o1')]);
    const second = send('order', 2, 2, [grant('bob', 'doc', 'o1', 'owner')]);
    const [a, b] = await Promise.all([first, second]);
    expect(a.applied && b.applied).toBe(true);
    expect(b.revision).toBeGreaterThan(a.revision);
  });

  it('checks the caller reaches the whole tenant', async () => {
    await expectCode(send('reach', 1, 1, [resource('doc', 'z1')], app.client(ImportService, userOf('tenant_other'))), Code.PermissionDenied);
    const envKey = { ...userOf(T), environment: { id: 'environment_x', scopeId: 'scope_eng' } };
    await expectCode(send('reach', 1, 1, [resource('doc', 'z1')], app.client(ImportService, envKey)), Code.PermissionDenied);
    expect((await send('reach', 1, 1, [resource('doc', 'z1')], app.client(ImportService, userOf(T)))).applied).toBe(true);
  });

  it('validates the request', async () => {
    await expectCode(send('', 1, 1, [resource('doc', 'v1')]), Code.InvalidArgument, 'importId');
    await expectCode(send('a b', 1, 1, [resource('doc', 'v1')]), Code.InvalidArgument, 'importId');
    await expectCode(send('v', 0, 1, [resource('doc', 'v1')]), Code.InvalidArgument, 'sequence');
    await expectCode(send('v', 1, 0, [resource('doc', 'v1')]), Code.InvalidArgument, 'firstLine');
    await expectCode(send('v', 1, 1, []), Code.InvalidArgument, 'entities');
    await expectCode(c.importBatch({ tenantId: 'tenant_none', importId: 'v', sequence: 1, firstLine: 1, entities: [resource('doc', 'v1')] }), Code.NotFound);
  });
});
