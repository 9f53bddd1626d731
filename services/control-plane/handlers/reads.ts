/**
 * Reads of the entity APIs behind the caller's reach: one entity by id, the tenant or row a list
 * filter names, a page of a list. Each checks reach before it answers, so a key learns nothing
 * about other tenants' entities.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { notFound } from '../../common/errors.js';
import { KINDS, rowToMessage, type KindDef, type KindName, type MessageOf, type Row } from '../../store/kinds.js';
import { listRows, rowReads, type Page, type RowFilter } from '../../store/rows.js';
import { assertTenantReach, principalOf } from '../auth/principal.js';
import type { Deps } from './deps.js';

/** Reads one entity by id for a get endpoint: `not_found` when absent or out of reach. */
export async function getOne<K extends KindName>(deps: Deps, ctx: HandlerContext, kind: K, id: string): Promise<MessageOf<K>> {
  const row = await rowReads(deps.db).byId(kind, id);
  if (!row) throw notFound((KINDS[kind] as KindDef).label, id, 'id');
  reach(ctx, row);
  return rowToMessage(kind, row);
}

/** A tenant-owned row must be in the caller's reach. */
export function reach(ctx: HandlerContext, row: Row) {
  if (row.tenantId) assertTenantReach(principalOf(ctx), row.tenantId as string);
}

/** A page of a list endpoint, filtered by `filter` (already reach-checked by the caller). */
export async function listMany<K extends KindName>(
  deps: Deps, kind: K, filter: RowFilter, page: Page,
): Promise<{ items: MessageOf<K>[]; nextCursor: string }> {
  const { rows, nextCursor } = await listRows(deps.db, kind, filter, page);
  return { items: rows.map((r) => rowToMessage(kind, r)), nextCursor };
}

/**
 * The row `id` of `kind` a list filter names (e.g. the scope of `?scopeId=`), checked for reach.
 * Unknown ids are `not_found`.
 */
export async function tenantOfRef(deps: Deps, ctx: HandlerContext, kind: KindName, id: string, field: string): Promise<Row> {
  const row = await rowReads(deps.db).byId(kind, id);
  if (!row) throw notFound((KINDS[kind] as KindDef).label, id, field);
  reach(ctx, row);
  return row;
}

/**
 * The tenant a tenant-scoped request or list addresses: checked for reach first (so a key
 * learns nothing about other tenants), then `not_found` when it does not exist.
 */
export async function requireTenant(deps: Deps, ctx: HandlerContext, tenantId: string, field: string): Promise<Row> {
  assertTenantReach(principalOf(ctx), tenantId, field);
  const row = await rowReads(deps.db).byId('tenant', tenantId);
  if (!row) throw notFound('tenant', tenantId, field);
  return row;
}
