/**
 * The large tenant the snapshot benchmarks share: `subjects` subjects, `resources` resources of
 * one type and `grants` ownership grants (grant k: subject k % S + 1 owns resource k % R + 1),
 * with ids as long as the control plane's (prefix + a UUID), inserted with generate_series, and
 * a role `owner` that may `edit` every `doc`. Subject k is `subject_0192f3a4-0000-7000-8000-` and
 * k on 12 digits; resources alike.
 */
import type { ControlPlane } from '../services/control-plane/app.js';
import { restClient } from '../test/watch-fixtures.js';
import { TEST_BOOTSTRAP_KEY } from '../test/harness.js';

export interface BigTenantSize {
  resources: number;
  grants: number;
  subjects: number;
}

export async function insertBigTenant(cp: ControlPlane & { url: string }, size: BigTenantSize): Promise<{ tenantId: string; scopeId: string }> {
  const rest = restClient(cp.url, TEST_BOOTSTRAP_KEY);
  const tenant = await rest('POST', '/tenants', { name: 'big' });
  const scope = tenant.scopeId as string;
  const type = await rest('POST', '/resource-types', { name: 'Doc', key: 'doc', scopeId: scope });
  const role = await rest('POST', '/roles', { scopeId: scope, key: 'owner', name: 'Owner' });
  const perm = await rest('POST', '/permissions', { scopeId: scope, action: 'edit', resourceType: 'doc', resourcePattern: '*' });
  await rest('POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
  const em = cp.db.orm.em.fork();
  const t0 = Date.now();
  const uuid = (g: string) => `'0192f3a4-0000-7000-8000-' || lpad(${g}::text, 12, '0')`;
  await em.execute(
    `insert into subjects (id, tenant_id, created_at, created_by, type, external_id, metadata)
     select 'subject_' || ${uuid('g')}, ?, now(), 'bench', 'user', 'user-' || g || '@example.com', jsonb_build_object('n', g)
     from generate_series(1, ?) g`, [tenant.id, size.subjects]);
  await em.execute(
    `insert into resources (id, tenant_id, created_at, created_by, resource_type_id, owner_scope_id, external_resource_id, display_name, attributes)
     select 'resource_' || ${uuid('g')}, ?, now(), 'bench', ?, ?, 'doc-' || g, 'Document ' || g, jsonb_build_object('n', g, 'team', 'eng')
     from generate_series(1, ?) g`, [tenant.id, type.id, scope, size.resources]);
  await em.execute(
    `insert into ownership_grants (id, tenant_id, created_at, created_by, subject_id, resource_id, role_id)
     select 'ownership_grant_' || ${uuid('g')}, ?, now(), 'bench', 'subject_' || ${uuid(`(g % ${size.subjects} + 1)`)}, 'resource_' || ${uuid(`(g % ${size.resources} + 1)`)}, ?
     from generate_series(1, ?) g`, [tenant.id, role.id, size.grants]);
  // As autovacuum would: without statistics the planner may sort a whole table.
  await em.execute('analyze subjects; analyze resources; analyze ownership_grants');
  console.log(`inserted ${size.subjects} subjects, ${size.resources} resources, ${size.grants} grants in ${Date.now() - t0} ms`);
  return { tenantId: tenant.id as string, scopeId: scope };
}
