import { Migration } from '@mikro-orm/migrations';

/**
 * Where each bulk import of a tenant stands (ImportService): its last committed batch, the line
 * the next batch starts at, the revision of the last batch and what the import has written so
 * far. A batch writes its row in the transaction of its entities, so a batch is recorded exactly
 * when it is committed, and a batch sent again is recognised and written no second time.
 */
export class Migration0005Imports extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table imports (tenant_id text not null references tenants(id), import_id text not null, last_sequence bigint not null, next_line bigint not null, revision bigint not null, counts jsonb not null, created_at timestamptz(3) not null, created_by text not null, updated_at timestamptz(3) not null, primary key (tenant_id, import_id))`);
  }
}
