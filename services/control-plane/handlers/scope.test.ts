import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectError, Code } from '@connectrpc/connect';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { describeEachBackend, createTestApp, expectCode, seedTenant, type TestApp } from '../../../test/harness.js';

describeEachBackend('ScopeService on %s', (backend) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
  });
  afterAll(() => app?.close());

  it('creates scopes in a batch whose items reference earlier items', async () => {
    const c = app.client(ScopeService);
    const team = await c.createScopeType({ name: 'team' });
    const res = await c.batchCreateScopes({ items: [
      { id: 'scope_org', name: 'org', typeId: team.scopeType!.id, tenantId: 'tenant_a' },
      { id: 'scope_eng', name: 'eng', typeId: team.scopeType!.id, parentId: 'scope_org' },
    ] });
    expect(res.scopes.map((s) => [s.id, s.parentId, s.tenantId])).toEqual([
      ['scope_org', 'scope_tenant_a', 'tenant_a'], ['scope_eng', 'scope_org', 'tenant_a'],
    ]);
    const anc = await c.listScopeAncestors({ id: 'scope_eng' });
    expect(anc.scopes.map((s) => s.id)).toEqual(['scope_org', 'scope_tenant_a']);
  });

  it('keeps scope type names unique: a stored name is already_exists (409), a repeat within a batch invalid_argument', async () => {
    const c = app.client(ScopeService);
    await c.createScopeType({ name: 'unit' });
    await expectCode(c.createScopeType({ name: 'unit' }), Code.AlreadyExists, 'name: a scope type named "unit" already exists');
    await expectCode(c.batchCreateScopeTypes({ items: [{ name: 'squad' }, { name: 'squad' }] }), Code.InvalidArgument, 'items[1].name');
    expect((await c.listScopeTypes({ limit: 1000 })).scopeTypes.filter((t) => t.name === 'squad')).toEqual([]);
  });

  it('refuses duplicate ids in a batch and writes nothing', async () => {
    const c = app.client(ScopeService);
    const err = await c.batchCreateScopes({ items: [
      { id: 'scope_dup', name: 'a', typeId: 'scope_type_tenant', tenantId: 'tenant_a' },
      { id: 'scope_dup', name: 'b', typeId: 'scope_type_tenant', tenantId: 'tenant_a' },
    ] }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
    expect(ConnectError.from(err).rawMessage).toContain('items[1].id');
    const kids = await c.listScopeChildren({ id: 'scope_tenant_a' });
    expect(kids.scopes.find((s) => s.id === 'scope_dup')).toBeUndefined();
  });

  it('refuses a move that would create a cycle', async () => {
    const c = app.client(ScopeService);
    const err = await c.moveScope({ childScopeId: 'scope_org', parentScopeId: 'scope_eng' }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.FailedPrecondition);
  });
});
