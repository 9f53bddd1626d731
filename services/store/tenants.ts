/** Tenants as the decision path and the Watch streams ask about them, outside any write. */
import { notFound } from '../common/errors.js';
import type { Database } from './db.js';
import { query } from './read.js';

/** The tenant's committed revision. Throws `not_found` for an unknown tenant. */
export async function committedRevision(db: Database, tenantId: string): Promise<number> {
  const rows = await query<{ revision: string }>(db.orm.em.fork(), 'select revision from tenants where id = ?', [tenantId]);
  if (rows.length === 0) throw notFound('tenant', tenantId);
  return Number(rows[0].revision);
}

/** The tenant of a scope; undefined for an unknown scope. */
export async function tenantOfScope(db: Database, scopeId: string): Promise<string | undefined> {
  const rows = await query<{ tenant_id: string }>(db.orm.em.fork(), 'select tenant_id from scopes where id = ?', [scopeId]);
  return rows[0]?.tenant_id;
}
