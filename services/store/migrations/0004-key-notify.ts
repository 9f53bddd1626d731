import { Migration } from '@mikro-orm/migrations';

/**
 * Every write of an API key NOTIFYs `authz_keys` (KEY_CHANNEL) with the key's prefix, in the
 * writing transaction: replicas drop their cached verification of that prefix when it commits,
 * whoever wrote it (the API, bootstrap, or an operator with psql). Truncation sends `*`.
 */
export class Migration0004KeyNotify extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create function authz_keys_notify() returns trigger language plpgsql as $$
begin
  if tg_op = 'TRUNCATE' then
    perform pg_notify('authz_keys', '*');
    return null;
  end if;
  if tg_op in ('UPDATE', 'DELETE') then
    perform pg_notify('authz_keys', old.prefix);
  end if;
  if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.prefix is distinct from old.prefix) then
    perform pg_notify('authz_keys', new.prefix);
  end if;
  return null;
end $$`);
    this.addSql(`create trigger api_keys_notify after insert or update or delete on api_keys for each row execute function authz_keys_notify()`);
    this.addSql(`create trigger api_keys_notify_truncate after truncate on api_keys for each statement execute function authz_keys_notify()`);
  }
}
