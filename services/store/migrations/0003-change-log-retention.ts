import { Migration } from '@mikro-orm/migrations';

/** Tables of the decision data (every engine kind), read page by page per tenant by Watch snapshots. */
export const DECISION_TABLES = [
  'scopes', 'subjects', 'roles', 'permissions', 'role_permissions', 'memberships', 'role_assignments', 'scope_overrides',
  'ownership_grants', 'resource_types', 'resources', 'resource_scope_links', 'resource_edges', 'resource_collections',
  'resource_policies', 'tag_groups', 'tags', 'tag_assignments', 'tag_bindings',
] as const;

/**
 * Change-log retention: `change_log_horizons` records, per tenant, the revision through which
 * the log was compacted (the log holds (compacted_through, revision]; no row: it holds them all),
 * so a Watch knows whether a `from_revision` can be resumed. And a `(tenant_id, id)` index on
 * every decision table, so a snapshot reads a tenant in keyset pages without scanning the others.
 *
 * The indexes are built `concurrently`, outside a transaction: on a deployment upgraded with
 * millions of rows, a plain `create index` would hold off every write to the table while it
 * builds. Each statement is safe to repeat: a build that was cut off leaves an invalid index,
 * which the next attempt drops and builds again.
 */
export class Migration0003ChangeLogRetention extends Migration {
  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    this.addSql(`create table if not exists change_log_horizons (tenant_id text primary key references tenants(id), compacted_through bigint not null)`);
    const names = DECISION_TABLES.map((t) => `${t}_tenant_id`);
    const invalid = (await this.execute(
      `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid where not i.indisvalid and c.relname in (${names.map(() => '?').join(', ')})`,
      names,
    )) as { name: string }[];
    for (const { name } of invalid) this.addSql(`drop index concurrently if exists ${name}`);
    for (const t of DECISION_TABLES) this.addSql(`create index concurrently if not exists ${t}_tenant_id on ${t} (tenant_id, id)`);
  }
}
