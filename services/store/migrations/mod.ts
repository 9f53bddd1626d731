/**
 * The schema's migrations, in order, loaded only when a database lacks one of them: a replica
 * starting on a migrated database (every start but the first) never loads MikroORM's migrator
 * and umzug, about 250 modules and a sixth of a second of the control plane's start.
 */
import type { Constructor } from '@mikro-orm/core';
import type { Migration } from '@mikro-orm/migrations';

/** Each migration by its name (its row in `mikro_orm_migrations`), with how to load its class. */
const MIGRATIONS: readonly (readonly [string, () => Promise<Constructor<Migration>>])[] = [
  ['0001-initial', async () => (await import('./0001-initial.js')).Migration0001Initial],
  ['0002-service-settings', async () => (await import('./0002-service-settings.js')).Migration0002ServiceSettings],
  ['0003-change-log-retention', async () => (await import('./0003-change-log-retention.js')).Migration0003ChangeLogRetention],
  ['0004-key-notify', async () => (await import('./0004-key-notify.js')).Migration0004KeyNotify],
  ['0005-imports', async () => (await import('./0005-imports.js')).Migration0005Imports],
  ['0006-revision-writers', async () => (await import('./0006-revision-writers.js')).Migration0006RevisionWriters],
  ['0007-sessions', async () => (await import('./0007-sessions.js')).Migration0007Sessions],
];

/** The migrations' names, in order. */
export const MIGRATION_NAMES: readonly string[] = MIGRATIONS.map(([name]) => name);

/** The migrations as MikroORM's `migrationsList` takes them. */
export async function loadMigrations(): Promise<{ name: string; class: Constructor<Migration> }[]> {
  return Promise.all(MIGRATIONS.map(async ([name, load]) => ({ name, class: await load() })));
}
