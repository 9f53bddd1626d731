import { Migration } from '@mikro-orm/migrations';

/** The indexes this migration builds, by name: what each serves is in ChangeService's proto. */
const INDEXES: [name: string, definition: string][] = [
  ['change_log_entity', 'change_log (tenant_id, kind, entity_id, revision, seq)'],
  ['change_log_kind', 'change_log (tenant_id, kind, revision, seq)'],
  ['revisions_key', 'revisions (tenant_id, key_id, revision)'],
  ['revisions_subject', 'revisions (tenant_id, subject_id, revision)'],
  ['revisions_time', 'revisions (tenant_id, created_at)'],
];

/**
 * Who wrote each revision: `revisions` holds one row per tenant revision (the API key and its
 * subject, `system` for writes without a request; when; the caller's `x-change-reason`), written
 * in the revision's own transaction, so the writer is stated once however many rows the revision
 * changed. `change_log.before` is the row before an update or delete (null for an insert), so a
 * change reads as before and after. Revisions written before this migration have no writer row.
 *
 * The indexes are built `concurrently`, outside a transaction, as in 0003: the change log of a
 * deployment being upgraded may be large. A build that was cut off leaves an invalid index,
 * which the next attempt drops and builds again.
 */
export class Migration0006RevisionWriters extends Migration {
  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    this.addSql(`create table if not exists revisions (tenant_id text not null references tenants(id), revision bigint not null, key_id text not null, subject_id text not null, reason text, created_at timestamptz(3) not null, primary key (tenant_id, revision))`);
    this.addSql('alter table change_log add column if not exists before json');
    const names = INDEXES.map(([name]) => name);
    const invalid = (await this.execute(
      `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid where not i.indisvalid and c.relname in (${names.map(() => '?').join(', ')})`,
      names,
    )) as { name: string }[];
    for (const { name } of invalid) this.addSql(`drop index concurrently if exists ${name}`);
    for (const [name, definition] of INDEXES) this.addSql(`create index concurrently if not exists ${name} on ${definition}`);
  }
}
