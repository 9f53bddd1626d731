/**
 * Many small tenants written straight to PostgreSQL with set-based SQL (`generate_series`), as a
 * control plane would have left them after their history was compacted: a `tenants` row at
 * revision 1 with its root scope (type `tenant`), the writer of revision 1 in `revisions`, and a
 * `change_log_horizons` row saying the log holds nothing up to it. The decision index and the
 * Watch snapshot read the tables at the tenant's revision (store/tenant-rows.ts), so such a tenant
 * is read as any other.
 *
 * Each tenant, for `entities` E (≈ the rows it holds): a root scope and 3 team scopes, 4 roles
 * (viewer, editor, admin, owner) and 8 permissions (4 on `doc`, 4 on `report`) with 10
 * role-permissions, one resource type `doc`, E/4 subjects each a member of one team with one
 * role, 0.22·E docs owned by the teams, E/100 ownership grants (role owner) and one deny policy.
 * Ids are a prefix and a UUID made of the tenant's number and the row's (`idOf`).
 */
import pg from 'pg';

export interface TenantShape {
  subjects: number;
  resources: number;
  grants: number;
}

export function shapeOf(entities: number): TenantShape {
  return {
    subjects: Math.max(3, Math.round(entities / 4)),
    resources: Math.max(11, Math.round(entities * 0.22)),
    grants: Math.max(1, Math.round(entities / 100)),
  };
}

/** Rows a tenant of `shape` holds (every kind the decision index reads). */
export function rowsOf(shape: TenantShape): number {
  // 4 scopes, 4 roles, 8 permissions, 10 role-permissions, 1 resource type, 1 policy.
  return 28 + shape.subjects * 3 + shape.resources + shape.grants;
}

/** Zipf rank (0-based) → tenant number: a fixed spread, so the hot tenants are not the first seeded. */
export const tenantOfRank = (r: number, n: number) => ((r * 7919) % n) + 1;

const hex4 = (t: number) => t.toString(16).padStart(4, '0');
/** The id of row `g` of `prefix` in tenant `t` (1-based; the root scope is scope 0). */
export const idOf = (prefix: string, t: number, g: number) => `${prefix}_0192f3a4-${hex4(t)}-7000-8000-${String(g).padStart(12, '0')}`;
const sqlId = (prefix: string, t: string, g: string) =>
  `'${prefix}_0192f3a4-' || lpad(to_hex(${t}), 4, '0') || '-7000-8000-' || lpad((${g})::text, 12, '0')`;

/** The statements that write tenants `from`..`to` (each an INSERT … SELECT over generate_series). */
function statements(from: number, to: number, s: TenantShape): string[] {
  const T = `generate_series(${from}, ${to}) t`;
  const base = `${sqlId('tenant', 't', '0')}, now(), 'bench'`;
  const scope = (g: string) => sqlId('scope', 't', g);
  const role = (g: string) => sqlId('role', 't', g);
  const perm = (g: string) => sqlId('permission', 't', g);
  const subject = (g: string) => sqlId('subject', 't', g);
  const resource = (g: string) => sqlId('resource', 't', g);
  return [
    `insert into tenants (id, name, scope_id, revision, created_at, created_by)
     select ${sqlId('tenant', 't', '0')}, 'tenant ' || t, ${scope('0')}, 1, now(), 'bench' from ${T}`,
    `insert into revisions (tenant_id, revision, key_id, subject_id, reason, created_at)
     select ${sqlId('tenant', 't', '0')}, 1, 'bench', 'bench', 'seeded', now() from ${T}`,
    `insert into change_log_horizons (tenant_id, compacted_through) select ${sqlId('tenant', 't', '0')}, 1 from ${T}`,
    `insert into scopes (id, tenant_id, created_at, created_by, name, type_id, parent_id)
     select ${scope('g')}, ${base}, case when g = 0 then 'root' else 'team ' || g end,
       case when g = 0 then 'scope_type_tenant' else 'scope_type_bench_team' end, case when g = 0 then null else ${scope('0')} end
     from ${T}, generate_series(0, 3) g`,
    `insert into roles (id, tenant_id, created_at, created_by, scope_id, key, name, description)
     select ${role('g')}, ${base}, ${scope('0')}, (array['viewer','editor','admin','owner'])[g], 'Role ' || g, ''
     from ${T}, generate_series(1, 4) g`,
    // Permissions 1–4: doc read/edit/delete/share; 5–8 the same on report.
    `insert into permissions (id, tenant_id, created_at, created_by, scope_id, action, resource_type, resource_pattern, key, name, description)
     select ${perm('g')}, ${base}, ${scope('0')}, a, rt, '*', rt || ':' || a || ':*', '', ''
     from ${T}, generate_series(1, 8) g,
       lateral (select (array['read','edit','delete','share'])[(g - 1) % 4 + 1] as a, case when g <= 4 then 'doc' else 'report' end as rt) x`,
    // viewer: read; editor: read, edit; admin: read, edit, delete; owner: all four.
    `insert into role_permissions (id, tenant_id, created_at, created_by, role_id, permission_id)
     select ${sqlId('role_permission', 't', 'r * 10 + p')}, ${base}, ${role('r')}, ${perm('p')}
     from ${T}, (values (1,1),(2,1),(2,2),(3,1),(3,2),(3,3),(4,1),(4,2),(4,3),(4,4)) rp(r, p)`,
    `insert into resource_types (id, tenant_id, created_at, created_by, name, key, scope_id)
     select ${sqlId('resource_type', 't', '1')}, ${base}, 'Document', 'doc', ${scope('0')} from ${T}`,
    `insert into subjects (id, tenant_id, created_at, created_by, type, external_id, metadata)
     select ${subject('g')}, ${base}, 'user', 'user-' || g || '@t' || t || '.example.com', jsonb_build_object('n', g)
     from ${T}, generate_series(1, ${s.subjects}) g`,
    // Subject g: member of team g % 3 + 1, with role g % 3 + 1 (viewer, editor or admin) there.
    `insert into memberships (id, tenant_id, created_at, created_by, subject_id, scope_id)
     select ${sqlId('membership', 't', 'g')}, ${base}, ${subject('g')}, ${scope('g % 3 + 1')}
     from ${T}, generate_series(1, ${s.subjects}) g`,
    `insert into role_assignments (id, tenant_id, created_at, created_by, membership_id, role_id)
     select ${sqlId('role_assignment', 't', 'g')}, ${base}, ${sqlId('membership', 't', 'g')}, ${role('g % 3 + 1')}
     from ${T}, generate_series(1, ${s.subjects}) g`,
    `insert into resources (id, tenant_id, created_at, created_by, resource_type_id, owner_scope_id, external_resource_id, display_name, attributes)
     select ${resource('g')}, ${base}, ${sqlId('resource_type', 't', '1')}, ${scope('g % 3 + 1')}, 'doc-' || g, 'Document ' || g,
       jsonb_build_object('n', g, 'team', g % 3 + 1)
     from ${T}, generate_series(1, ${s.resources}) g`,
    // Grant g: subject g owns doc g + 10 (role owner).
    `insert into ownership_grants (id, tenant_id, created_at, created_by, subject_id, resource_id, role_id)
     select ${sqlId('ownership_grant', 't', 'g')}, ${base}, ${subject(`(g - 1) % ${s.subjects} + 1`)}, ${resource(`(g + 9) % ${s.resources} + 1`)}, ${role('4')}
     from ${T}, generate_series(1, ${s.grants}) g`,
    // No one may delete doc 1, whatever their role.
    `insert into resource_policies (id, tenant_id, created_at, created_by, scope_id, target, target_id, actions, effect, priority)
     select ${sqlId('policy', 't', '1')}, ${base}, ${scope('0')}, jsonb_build_object('kind', 'resource', 'resourceId', ${resource('1')}),
       ${resource('1')}, '["delete"]'::jsonb, 'deny', 10
     from ${T}`,
  ];
}

/**
 * Writes tenants 1..`tenants` into the database at `url` (migrated, with no such tenants yet), in
 * chunks of `chunk` tenants over `parallel` connections; `progress` is told each chunk done.
 */
export async function seedTenants(url: string, tenants: number, shape: TenantShape, opts: { chunk?: number; parallel?: number; progress?: (done: number) => void } = {}): Promise<void> {
  const chunk = opts.chunk ?? 500;
  const parallel = opts.parallel ?? 2;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`insert into scope_types (id, name, description, created_at, created_by) values ('scope_type_bench_team', 'team', 'bench', now(), 'bench') on conflict do nothing`);
  await admin.end();
  const chunks: [number, number][] = [];
  for (let a = 1; a <= tenants; a += chunk) chunks.push([a, Math.min(tenants, a + chunk - 1)]);
  let done = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (let next = chunks.shift(); next; next = chunks.shift()) {
        await c.query('begin');
        // A bulk load: its durability is the database's last checkpoint's, as a restore's is.
        await c.query('set local synchronous_commit = off');
        for (const sql of statements(next[0], next[1], shape)) await c.query(sql);
        await c.query('commit');
        done += next[1] - next[0] + 1;
        opts.progress?.(done);
      }
    } finally {
      await c.end();
    }
  }));
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  // As autovacuum would: without statistics the planner may sort a whole table.
  await c.query('vacuum analyze');
  await c.end();
}
