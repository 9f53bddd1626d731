import { Migration } from '@mikro-orm/migrations';

/**
 * Console sign-in sessions (services/control-plane/auth/sessions.ts): one row per signed-in
 * browser, found by the SHA-256 of its cookie's random id (the id itself is never stored), tied
 * to the API key it was opened with. `key_prefix` lets the key cache verify that key again on
 * every request, so a revoked or expired key ends its sessions at once on every replica.
 */
export class Migration0007Sessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table sessions (id_hash text primary key, key_id text not null references api_keys(id) on delete cascade, key_prefix text not null, created_at timestamptz(3) not null, last_seen_at timestamptz(3) not null, expires_at timestamptz(3) not null)`);
    this.addSql('create index sessions_key on sessions (key_id)');
    this.addSql('create index sessions_expires on sessions (expires_at)');
  }
}
