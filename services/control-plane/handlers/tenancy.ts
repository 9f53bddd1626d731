import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import type {
  CreateEnvironmentRequest, CreateProjectRequest, CreateTenantRequest, CreateWorkspaceRequest,
} from '../../../gen/authz/v1/tenancy_service_pb.js';
import type { Tenant } from '../../../gen/authz/v1/tenancy_pb.js';
import { invalid } from '../../common/errors.js';
import { newId } from '../../common/ids.js';
import { rowToMessage, type Row } from '../../store/kinds.js';
import type { RowFilter } from '../../store/rows.js';
import { runWrite } from '../../store/write.js';
import { assertTenantReach, assertWholeTenantReach, principalOf, type Principal } from '../auth/principal.js';
import { writerOfCall } from '../auth/writer.js';
import { batchItems, optionalString, requireString } from '../../common/validate.js';
import { Batch, createMany, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { buildScope, rootScopeOf } from './hierarchy-rules.js';
import { listMany, requireTenant, tenantOfRef } from './reads.js';
import { setRevision } from './writes.js';

/** A list filter narrowed, for a key restricted to an environment, to that environment. */
function reachableEnvironments(principal: Principal, where: RowFilter): RowFilter {
  return principal.environment ? { ...where, id: principal.environment.id } : where;
}

/** The tenant of a create item: its `tenantId`, else the calling key's tenant; checked for reach. */
function itemTenant(b: Batch, tenantId: string | undefined, field: string): string {
  const t = optionalString(tenantId, field) ?? b.principal.tenantId;
  if (!t) throw invalid(field, 'is required when the API key names no tenant');
  assertTenantReach(b.principal, t, field);
  return t;
}

/**
 * Creates tenants, each with its root scope (type `tenant`, `tenants.scope_id`), in one
 * transaction. Each tenant row is inserted at revision 0 and entered with `useNewTenant`,
 * which moves it to revision 1 and logs its root scope there; one transaction may do that for
 * many brand-new tenants (WriteTx keeps the one-tenant rule for existing tenants).
 */
async function createTenants(deps: Deps, ctx: HandlerContext, items: CreateTenantRequest[], batch: boolean): Promise<Tenant[]> {
  if (batch) batchItems(items);
  const principal = principalOf(ctx);
  const writer = writerOfCall(ctx);
  const { result, revision } = await runWrite(deps.db, async (tx) => {
    const b = new Batch(tx, principal);
    const planned = items.map((item, i) => {
      const p = batch ? `items[${i}].` : '';
      const id = b.id('tenant', item.id, `${p}id`);
      const name = requireString(item.name, `${p}name`);
      return { ...b.base(id), name, scopeId: newId('scope'), revision: 0 } as Row;
    });
    await b.assertNew('tenant', planned.map((t) => t.id as string));
    for (const t of planned) {
      await tx.insert('tenant', [t]);
      await tx.useNewTenant(t.id as string);
      await tx.insert('scope', [{
        ...b.base(t.scopeId as string, t.id as string), name: t.name, typeId: 'scope_type_tenant', parentId: null,
      }]);
      t.revision = tx.revision;
    }
    return planned;
  }, writer);
  setRevision(ctx, revision);
  return result.map((r) => rowToMessage('tenant', r));
}

/** A scope for a project, environment or workspace, under `parentId`, kept for the insert. */
async function childScope(b: Batch, name: string, typeId: string, parentId: string, p: string): Promise<string> {
  const row = await buildScope(b, newId('scope'), name, typeId, parentId, p);
  b.remember('scope', row);
  b.before.push({ kind: 'scope', row });
  return row.id as string;
}

const projects: CreateSpec<CreateProjectRequest, 'project'> = {
  kind: 'project',
  tenantRef: (item, principal) => ['tenant', item.tenantId || principal.tenantId, 'tenantId'],
  async preload(b, items) {
    await b.preload('tenant', items.map((i) => i.tenantId || b.principal.tenantId));
  },
  async build(b, item, p) {
    assertWholeTenantReach(b.principal, `the scope where a project would be created`);
    const id = b.id('project', item.id, `${p}id`);
    const name = requireString(item.name, `${p}name`);
    const tenantId = itemTenant(b, item.tenantId, `${p}tenantId`);
    const root = await rootScopeOf(b, tenantId, `${p}tenantId`);
    const scopeId = await childScope(b, name, 'scope_type_project', root, p);
    return { ...b.base(id, tenantId), name, scopeId };
  },
};

const environments: CreateSpec<CreateEnvironmentRequest, 'environment'> = {
  kind: 'environment',
  tenantRef: (item) => ['project', item.projectId, 'projectId'],
  async preload(b, items) {
    await b.preload('project', items.map((i) => i.projectId));
  },
  async build(b, item, p) {
    assertWholeTenantReach(b.principal, `the scope where an environment would be created`);
    const id = b.id('environment', item.id, `${p}id`);
    const name = requireString(item.name, `${p}name`);
    const projectId = requireString(item.projectId, `${p}projectId`);
    const given = optionalString(item.tenantId, `${p}tenantId`);
    if (given) assertTenantReach(b.principal, given, `${p}tenantId`);
    const project = await b.ref('project', projectId, `${p}projectId`);
    const tenantId = project.tenantId as string;
    assertTenantReach(b.principal, tenantId, `${p}projectId`);
    if (given && given !== tenantId) {
      // A tenant that does not exist is the wrong field; an existing other tenant, the project.
      await b.ref('tenant', given, `${p}tenantId`);
      throw invalid(`${p}projectId`, `project ${projectId} does not belong to tenant ${given}`);
    }
    const scopeId = await childScope(b, name, 'scope_type_environment', project.scopeId as string, p);
    return { ...b.base(id, tenantId), projectId, scopeId, name };
  },
};

const workspaces: CreateSpec<CreateWorkspaceRequest, 'workspace'> = {
  kind: 'workspace',
  tenantRef: (item, principal) => ['tenant', item.tenantId || principal.tenantId, 'tenantId'],
  async preload(b, items) {
    await b.preload('tenant', items.map((i) => i.tenantId || b.principal.tenantId));
  },
  async build(b, item, p) {
    assertWholeTenantReach(b.principal, `the scope where a workspace would be created`);
    const id = b.id('workspace', item.id, `${p}id`);
    const name = requireString(item.name, `${p}name`);
    const tenantId = itemTenant(b, item.tenantId, `${p}tenantId`);
    const root = await rootScopeOf(b, tenantId, `${p}tenantId`);
    const scopeId = await childScope(b, name, 'scope_type_workspace', root, p);
    return { ...b.base(id, tenantId), scopeId, name };
  },
};

export function tenancyService(deps: Deps): ServiceImpl<typeof TenancyService> {
  return {
    async createTenant(req, ctx) {
      return { tenant: (await createTenants(deps, ctx, [req], false))[0] };
    },
    async batchCreateTenants(req, ctx) {
      return { tenants: await createTenants(deps, ctx, req.items, true) };
    },
    async listTenants(req) {
      const { items, nextCursor } = await listMany(deps, 'tenant', {}, req);
      return { tenants: items, nextCursor };
    },
    async getTenant(req, ctx) {
      const id = requireString(req.id, 'id');
      assertWholeTenantReach(principalOf(ctx), 'the tenant', 'id');
      return { tenant: rowToMessage('tenant', await requireTenant(deps, ctx, id, 'id')) };
    },
    async createProject(req, ctx) {
      return { project: (await createMany(deps, ctx, projects, [req], false))[0] };
    },
    async batchCreateProjects(req, ctx) {
      return { projects: await createMany(deps, ctx, projects, req.items, true) };
    },
    async listProjects(req, ctx) {
      const tenantId = requireString(req.tenantId, 'tenantId');
      assertWholeTenantReach(principalOf(ctx), 'the tenant\'s projects', 'tenantId');
      await requireTenant(deps, ctx, tenantId, 'tenantId');
      const { items, nextCursor } = await listMany(deps, 'project', { tenantId }, req);
      return { projects: items, nextCursor };
    },
    async createEnvironment(req, ctx) {
      return { environment: (await createMany(deps, ctx, environments, [req], false))[0] };
    },
    async batchCreateEnvironments(req, ctx) {
      return { environments: await createMany(deps, ctx, environments, req.items, true) };
    },
    async listTenantEnvironments(req, ctx) {
      const tenantId = requireString(req.tenantId, 'tenantId');
      await requireTenant(deps, ctx, tenantId, 'tenantId');
      const { items, nextCursor } = await listMany(deps, 'environment', reachableEnvironments(principalOf(ctx), { tenantId }), req);
      return { environments: items, nextCursor };
    },
    async listProjectEnvironments(req, ctx) {
      const projectId = requireString(req.projectId, 'projectId');
      await tenantOfRef(deps, ctx, 'project', projectId, 'projectId');
      const { items, nextCursor } = await listMany(deps, 'environment', reachableEnvironments(principalOf(ctx), { projectId }), req);
      return { environments: items, nextCursor };
    },
    async createWorkspace(req, ctx) {
      return { workspace: (await createMany(deps, ctx, workspaces, [req], false))[0] };
    },
    async batchCreateWorkspaces(req, ctx) {
      return { workspaces: await createMany(deps, ctx, workspaces, req.items, true) };
    },
    async listWorkspaces(req, ctx) {
      const tenantId = requireString(req.tenantId, 'tenantId');
      assertWholeTenantReach(principalOf(ctx), 'the tenant\'s workspaces', 'tenantId');
      await requireTenant(deps, ctx, tenantId, 'tenantId');
      const { items, nextCursor } = await listMany(deps, 'workspace', { tenantId }, req);
      return { workspaces: items, nextCursor };
    },
  };
}
