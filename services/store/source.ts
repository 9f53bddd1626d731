/**
 * Where the store's modules run their queries. Handlers pass a WriteTx (the reads then see the
 * transaction's own writes, under the tenant lock it holds) or the Database (reads of their own,
 * outside any transaction); the entity manager behind either never leaves the store.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from './db.js';
import { WriteTx } from './write.js';

export type StoreSource = Database | WriteTx;

/** The entity manager of a source: the transaction's, or a fork of its own. For the store's modules only. */
export function entityManagerOf(source: StoreSource): EntityManager {
  return source instanceof WriteTx ? source.em : source.orm.em.fork();
}
