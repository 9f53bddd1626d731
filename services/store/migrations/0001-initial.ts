import { Migration } from '@mikro-orm/migrations';

/**
 * The initial schema. Foreign keys are a safety net: cascading deletes are done by the
 * store explicitly (so each removed row reaches the change log), and a missed cascade
 * fails loudly instead of leaving orphans.
 */
export class Migration0001Initial extends Migration {
  override async up(): Promise<void> {
    const owned = `id text primary key, tenant_id text not null references tenants(id), created_at timestamptz(3) not null, created_by text not null`;
    this.addSql(`create table tenants (id text primary key, name text not null, scope_id text not null, revision bigint not null default 0, created_at timestamptz(3) not null, created_by text not null)`);
    this.addSql(`create table scope_types (id text primary key, name text not null, description text not null default '', created_at timestamptz(3) not null, created_by text not null)`);
    this.addSql(`create unique index scope_types_name on scope_types (name)`);
    this.addSql(`create table scope_type_edges (id text primary key, parent_type_id text not null references scope_types(id), child_type_id text not null references scope_types(id), created_at timestamptz(3) not null, created_by text not null, unique (parent_type_id, child_type_id))`);
    this.addSql(`create table scopes (${owned}, name text not null, type_id text not null references scope_types(id), parent_id text references scopes(id))`);
    this.addSql(`create index scopes_parent on scopes (parent_id)`);
    this.addSql(`create table projects (${owned}, name text not null, scope_id text not null references scopes(id))`);
    this.addSql(`create table environments (${owned}, project_id text not null references projects(id), scope_id text not null references scopes(id), name text not null)`);
    this.addSql(`create index environments_project on environments (project_id)`);
    this.addSql(`create table workspaces (${owned}, scope_id text not null references scopes(id), name text not null)`);
    this.addSql(`create table subjects (id text primary key, tenant_id text references tenants(id), created_at timestamptz(3) not null, created_by text not null, type text not null, external_id text not null, metadata jsonb)`);
    this.addSql(`create index subjects_tenant_external on subjects (tenant_id, external_id)`);
    this.addSql(`create table roles (${owned}, scope_id text not null references scopes(id), key text not null, name text not null, description text not null default '', unique (scope_id, key))`);
    this.addSql(`create table permissions (${owned}, scope_id text not null references scopes(id), action text not null, resource_type text not null, resource_pattern text not null, key text not null, name text not null default '', description text not null default '')`);
    this.addSql(`create index permissions_scope on permissions (scope_id)`);
    this.addSql(`create table role_permissions (${owned}, role_id text not null references roles(id), permission_id text not null references permissions(id), unique (role_id, permission_id))`);
    this.addSql(`create index role_permissions_permission on role_permissions (permission_id)`);
    this.addSql(`create table memberships (${owned}, subject_id text not null references subjects(id), scope_id text not null references scopes(id), unique (subject_id, scope_id))`);
    this.addSql(`create index memberships_scope on memberships (scope_id)`);
    this.addSql(`create table role_assignments (${owned}, membership_id text not null references memberships(id), role_id text not null references roles(id), unique (membership_id, role_id))`);
    this.addSql(`create index role_assignments_role on role_assignments (role_id)`);
    this.addSql(`create table scope_overrides (${owned}, scope_id text not null references scopes(id), role_id text not null references roles(id), mode text not null, permission_ids jsonb)`);
    this.addSql(`create index scope_overrides_scope on scope_overrides (scope_id)`);
    this.addSql(`create index scope_overrides_role on scope_overrides (role_id)`);
    this.addSql(`create table resource_types (${owned}, name text not null, key text not null, scope_id text not null references scopes(id), unique (tenant_id, key))`);
    this.addSql(`create index resource_types_scope on resource_types (scope_id)`);
    this.addSql(`create table resource_type_edges (${owned}, parent_type_id text not null references resource_types(id), child_type_id text not null references resource_types(id), unique (parent_type_id, child_type_id))`);
    this.addSql(`create table resources (${owned}, resource_type_id text not null references resource_types(id), owner_scope_id text not null references scopes(id), external_resource_id text not null, display_name text, attributes jsonb, unique (tenant_id, resource_type_id, external_resource_id))`);
    this.addSql(`create index resources_owner_scope on resources (owner_scope_id, id)`);
    this.addSql(`create table ownership_grants (${owned}, subject_id text not null references subjects(id), resource_id text not null references resources(id), role_id text not null references roles(id), unique (subject_id, resource_id, role_id))`);
    this.addSql(`create index ownership_grants_resource on ownership_grants (resource_id)`);
    this.addSql(`create table resource_edges (${owned}, parent_resource_id text not null references resources(id), child_resource_id text not null unique references resources(id), relationship_type text, cascade text not null)`);
    this.addSql(`create index resource_edges_parent on resource_edges (parent_resource_id)`);
    this.addSql(`create table resource_scope_links (${owned}, resource_id text not null references resources(id), scope_id text not null references scopes(id), link_type text not null, metadata jsonb, unique (resource_id, scope_id, link_type))`);
    this.addSql(`create index resource_scope_links_scope on resource_scope_links (scope_id)`);
    this.addSql(`create table tag_groups (${owned}, scope_id text not null references scopes(id), name text not null, key text not null, description text not null default '', origin text not null, max_applied_per_target int not null default 0, is_locked boolean not null default false, unique (tenant_id, key))`);
    this.addSql(`create table tags (${owned}, scope_id text not null references scopes(id), tag_group_id text not null references tag_groups(id), identifier text not null, label text not null default '', unique (tag_group_id, identifier))`);
    this.addSql(`create table tag_assignments (${owned}, tag_id text not null references tags(id), target_type text not null, target_id text not null, unique (tag_id, target_id))`);
    this.addSql(`create index tag_assignments_target on tag_assignments (target_id)`);
    this.addSql(`create table tag_bindings (${owned}, tag_id text not null references tags(id), role_id text not null references roles(id), scope_id text not null references scopes(id))`);
    this.addSql(`create index tag_bindings_scope on tag_bindings (scope_id)`);
    this.addSql(`create table resource_collections (${owned}, scope_id text not null references scopes(id), resource_type_id text not null references resource_types(id), name text not null, description text not null default '', match_definition jsonb)`);
    this.addSql(`create index resource_collections_scope on resource_collections (scope_id)`);
    this.addSql(`create table resource_policies (${owned}, scope_id text not null references scopes(id), target jsonb not null, target_id text not null, actions jsonb not null, effect text not null, priority int not null default 0, subject_condition jsonb, context_condition jsonb, valid_from timestamptz(3), valid_until timestamptz(3))`);
    this.addSql(`create index resource_policies_scope on resource_policies (scope_id)`);
    this.addSql(`create index resource_policies_target on resource_policies (target_id)`);
    this.addSql(`create table api_keys (id text primary key, subject_id text not null references subjects(id), tenant_id text references tenants(id), environment_id text, name text not null, description text not null default '', prefix text not null, last_four text not null, secret_hash text not null, hash_algo text not null, created_by_subject_id text not null, created_at timestamptz(3) not null, expires_at timestamptz(3), status text not null, intended_use text not null default '', kind text not null, metadata jsonb)`);
    this.addSql(`create index api_keys_prefix on api_keys (prefix)`);
    this.addSql(`create index api_keys_tenant on api_keys (tenant_id)`);
    // `data` is json, not jsonb: written once per change and read back whole, so PostgreSQL
    // only validates it instead of converting every row.
    this.addSql(`create table change_log (tenant_id text not null references tenants(id), revision bigint not null, seq int not null, op text not null, kind text not null, entity_id text not null, data json, created_at timestamptz(3) not null, primary key (tenant_id, revision, seq))`);
    // Built-in scope types for the scopes the service creates itself.
    for (const t of ['tenant', 'project', 'environment', 'workspace']) {
      this.addSql(`insert into scope_types (id, name, description, created_at, created_by) values ('scope_type_${t}', '${t}', 'built in', now(), 'system')`);
    }
  }
}
