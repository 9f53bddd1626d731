import { Migration } from '@mikro-orm/migrations';

/**
 * Settings the service keeps for itself, shared by every replica on the database (for example
 * `cursor_key`, which signs list cursors). Values are written once, by whichever replica
 * starts first.
 */
export class Migration0002ServiceSettings extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table service_settings (name text primary key, value text not null)`);
  }
}
