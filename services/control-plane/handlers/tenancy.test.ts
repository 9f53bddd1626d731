import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '@connectrpc/connect';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { runWrite } from '../../store/write.js';
import { describeEachBackend, createTestApp, seedTenant, userOf, type TestApp, expectCode } from '../../../test/harness.js';

describeEachBackend('TenancyService on %s', (backend) => {
  let app: TestApp;
  const changes = async (tenantId: string) =>
    (await app.db.orm.em.fork().execute(
      'select revision, seq, op, kind, entity_id from change_log where tenant_id = ? order by revision, seq', [tenantId],
    )) as { revision: string | number; op: string; kind: string; entity_id: string }[];

  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
  });
  afterAll(() => app?.close());

  it('creates a tenant at revision 1 with its root scope, logged and in x-revision', async () => {
    const c = app.client(TenancyService);
    let header: string | null = null;
    const { tenant } = await c.createTenant({ id: 'tenant_acme', name: 'Acme' }, { onHeader: (h) => { header = h.get('x-revision'); } });
    expect(tenant).toMatchObject({ id: 'tenant_acme', name: 'Acme', revision: 1n, createdBy: 'subject_test_platform' });
    expect(header).toBe('1');
    const { scope } = await app.client(ScopeService).getScope({ id: tenant!.scopeId });
    expect(scope).toMatchObject({ tenantId: 'tenant_acme', typeId: 'scope_type_tenant', name: 'Acme' });
    expect(scope?.parentId ?? '').toBe('');
    const log = await changes('tenant_acme');
    expect(log.map((r) => [Number(r.revision), r.op, r.kind, r.entity_id])).toEqual([[1, 'upsert', 'scope', tenant!.scopeId]]);
    expect((await c.getTenant({ id: 'tenant_acme' })).tenant?.revision).toBe(1n);
  });

  it('creates a batch of tenants, each at revision 1 with its own change log', async () => {
    const c = app.client(TenancyService);
    const { tenants } = await c.batchCreateTenants({ items: [{ id: 'tenant_b1', name: 'one' }, { name: 'two' }] });
    expect(tenants.map((t) => t.revision)).toEqual([1n, 1n]);
    expect(tenants[1].id).toMatch(/^tenant_[0-9a-f-]{36}$/);
    for (const t of tenants) {
      const log = await changes(t.id);
      expect(log.map((r) => [Number(r.revision), r.kind, r.entity_id])).toEqual([[1, 'scope', t.scopeId]]);
    }
  });

  it('refuses bad tenant batches and writes nothing', async () => {
    const c = app.client(TenancyService);
    await expectCode(c.batchCreateTenants({ items: [{ id: 'tenant_x1', name: 'a' }, { id: 'tenant_x1', name: 'b' }] }), Code.InvalidArgument, 'items[1].id');
    await expectCode(c.batchCreateTenants({ items: [{ id: 'tenant_x2', name: 'a' }, { id: 'tenant_x3' }] }), Code.InvalidArgument, 'items[1].name: is required');
    await expectCode(c.batchCreateTenants({ items: [{ id: 'tenant_x4', name: 'a' }, { id: 'tenant_a', name: 'b' }] }), Code.AlreadyExists, 'tenant_a');
    await expectCode(c.createTenant({ id: 'scope_x', name: 'a' }), Code.InvalidArgument, 'id');
    await expectCode(c.createTenant({ name: 'x'.repeat(257) }), Code.InvalidArgument, 'name');
    await expectCode(c.batchCreateTenants({ items: [] }), Code.InvalidArgument, 'items');
    const ids = (await c.listTenants({ limit: 1000 })).tenants.map((t) => t.id);
    for (const id of ['tenant_x1', 'tenant_x2', 'tenant_x4']) expect(ids).not.toContain(id);
  });

  it('lists tenants with paging', async () => {
    const c = app.client(TenancyService);
    const first = await c.listTenants({ limit: 2 });
    expect(first.tenants).toHaveLength(2);
    expect(first.nextCursor).not.toBe('');
    const second = await c.listTenants({ limit: 2, cursor: first.nextCursor });
    expect(second.tenants[0].id > first.tenants[1].id).toBe(true);
    await expectCode(c.listTenants({ limit: 1001 }), Code.InvalidArgument, 'limit');
  });

  it('gets a tenant: a user key only its own', async () => {
    expect((await app.client(TenancyService, userOf('tenant_a')).getTenant({ id: 'tenant_a' })).tenant?.id).toBe('tenant_a');
    await expectCode(app.client(TenancyService, userOf('tenant_a')).getTenant({ id: 'tenant_b' }), Code.PermissionDenied);
    await expectCode(app.client(TenancyService).getTenant({ id: 'tenant_nope' }), Code.NotFound);
    await expectCode(app.client(TenancyService).getTenant({ id: '' }), Code.InvalidArgument, 'id: is required');
  });

  it('creates projects under the tenant root; the user key defaults to and is held to its tenant', async () => {
    const c = app.client(TenancyService);
    const before = (await c.getTenant({ id: 'tenant_a' })).tenant!.revision;
    let header: string | null = null;
    const { project } = await c.createProject({ id: 'project_web', tenantId: 'tenant_a', name: 'web' }, { onHeader: (h) => { header = h.get('x-revision'); } });
    expect(header).toBe(String(before + 1n));
    const { scope } = await app.client(ScopeService).getScope({ id: project!.scopeId });
    expect(scope).toMatchObject({ parentId: 'scope_tenant_a', typeId: 'scope_type_project', tenantId: 'tenant_a', name: 'web' });
    const log = await changes('tenant_a');
    const last = log.filter((r) => BigInt(r.revision) === before + 1n).map((r) => [r.kind, r.entity_id]);
    expect(last).toEqual([['scope', project!.scopeId], ['project', 'project_web']]);

    const u = app.client(TenancyService, userOf('tenant_a'));
    expect((await u.createProject({ name: 'mine' })).project?.tenantId).toBe('tenant_a');
    await expectCode(u.createProject({ tenantId: 'tenant_b', name: 'theirs' }), Code.PermissionDenied);
    await expectCode(c.createProject({ name: 'no tenant' }), Code.InvalidArgument, 'tenantId');
    await expectCode(c.createProject({ tenantId: 'tenant_missing', name: 'x' }), Code.FailedPrecondition, 'tenantId');
    await expectCode(c.createProject({ tenantId: 'tenant_a' }), Code.InvalidArgument, 'name: is required');
    await expectCode(c.createProject({ id: 'project_web', tenantId: 'tenant_a', name: 'again' }), Code.AlreadyExists);
    await expectCode(c.batchCreateProjects({ items: [
      { id: 'project_p1', tenantId: 'tenant_a', name: 'a' }, { id: 'project_p2', tenantId: 'tenant_b', name: 'b' },
    ] }), Code.InvalidArgument, 'items[1]');

    const listed = await c.listProjects({ tenantId: 'tenant_a' });
    expect(listed.projects.map((p) => p.name).sort()).toEqual(['mine', 'web']);
    await expectCode(u.listProjects({ tenantId: 'tenant_b' }), Code.PermissionDenied);
    await expectCode(c.listProjects({ tenantId: 'tenant_zzz' }), Code.NotFound);
  });

  it('creates environments under their project scope, in the project tenant only', async () => {
    const c = app.client(TenancyService);
    await c.createProject({ id: 'project_api', tenantId: 'tenant_a', name: 'api' });
    await c.createProject({ id: 'project_bee', tenantId: 'tenant_b', name: 'bee' });
    const { environments } = await c.batchCreateEnvironments({ items: [
      { id: 'environment_prod', tenantId: 'tenant_a', projectId: 'project_api', name: 'prod' },
      { id: 'environment_dev', projectId: 'project_api', name: 'dev' },
    ] });
    expect(environments.map((e) => e.tenantId)).toEqual(['tenant_a', 'tenant_a']);
    const project = (await c.listProjects({ tenantId: 'tenant_a' })).projects.find((p) => p.id === 'project_api')!;
    const { scope } = await app.client(ScopeService).getScope({ id: environments[0].scopeId });
    expect(scope).toMatchObject({ parentId: project.scopeId, typeId: 'scope_type_environment' });

    await expectCode(c.createEnvironment({ tenantId: 'tenant_a', projectId: 'project_bee', name: 'x' }), Code.InvalidArgument, 'projectId');
    await expectCode(c.createEnvironment({ tenantId: 'tenant_nowhere', projectId: 'project_bee', name: 'x' }), Code.FailedPrecondition, 'tenantId');
    await expectCode(c.createEnvironment({ projectId: 'project_missing', name: 'x' }), Code.FailedPrecondition, 'projectId');
    await expectCode(c.createEnvironment({ projectId: 'project_api' }), Code.InvalidArgument, 'name');
    await expectCode(app.client(TenancyService, userOf('tenant_a')).createEnvironment({ projectId: 'project_bee', name: 'x' }), Code.PermissionDenied);

    expect((await c.listTenantEnvironments({ tenantId: 'tenant_a' })).environments.map((e) => e.id).sort()).toEqual(['environment_dev', 'environment_prod']);
    expect((await c.listProjectEnvironments({ projectId: 'project_api' })).environments).toHaveLength(2);
    expect((await c.listProjectEnvironments({ projectId: 'project_bee' })).environments).toHaveLength(0);
    await expectCode(c.listProjectEnvironments({ projectId: 'project_missing' }), Code.NotFound);
    await expectCode(app.client(TenancyService, userOf('tenant_b')).listProjectEnvironments({ projectId: 'project_api' }), Code.PermissionDenied);
  });

  it('creates workspaces under the tenant root; a failing batch writes nothing', async () => {
    const c = app.client(TenancyService);
    const { workspace } = await c.createWorkspace({ id: 'workspace_ops', tenantId: 'tenant_b', name: 'ops' });
    const { scope } = await app.client(ScopeService).getScope({ id: workspace!.scopeId });
    expect(scope).toMatchObject({ parentId: 'scope_tenant_b', typeId: 'scope_type_workspace' });
    const scopesBefore = (await app.client(ScopeService).listScopes({ tenantId: 'tenant_b', limit: 1000 })).scopes.length;
    await expectCode(c.batchCreateWorkspaces({ items: [
      { id: 'workspace_w1', tenantId: 'tenant_b', name: 'w1' }, { id: 'workspace_w1', tenantId: 'tenant_b', name: 'w2' },
    ] }), Code.InvalidArgument, 'items[1].id');
    expect((await app.client(ScopeService).listScopes({ tenantId: 'tenant_b', limit: 1000 })).scopes).toHaveLength(scopesBefore);
    expect((await c.listWorkspaces({ tenantId: 'tenant_b' })).workspaces.map((w) => w.id)).toEqual(['workspace_ops']);
    await expectCode(app.client(TenancyService, userOf('tenant_a')).listWorkspaces({ tenantId: 'tenant_b' }), Code.PermissionDenied);
    await expectCode(app.client(TenancyService, userOf('tenant_a')).createWorkspace({ tenantId: 'tenant_b', name: 'x' }), Code.PermissionDenied);
  });

  it('WriteTx refuses a new tenant in a transaction that writes an existing one', async () => {
    const err = await runWrite(app.db, async (tx) => {
      await tx.useTenant('tenant_a');
      await tx.insert('tenant', [{ id: 'tenant_mixed', name: 'm', scopeId: 'scope_m', revision: 0, createdAt: new Date(), createdBy: 't' }]);
      await tx.useNewTenant('tenant_mixed');
    }).catch((e: unknown) => e);
    expect(String(err)).toContain('cannot be created in a request that writes an existing tenant');
    expect(await app.db.orm.em.fork().execute(`select id from tenants where id = 'tenant_mixed'`)).toHaveLength(0);
    await expect(runWrite(app.db, (tx) => tx.useNewTenant('tenant_b'))).rejects.toThrow(/not a tenant inserted at revision 0/);
  });
});
