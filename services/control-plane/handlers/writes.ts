/**
 * Writes of one entity (update, delete) in one transaction: the row loaded, the caller's reach
 * checked and its tenant entered (locked) before the change, the revision header set after.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { notFound } from '../../common/errors.js';
import { KINDS, type KindDef, type KindName, type Row } from '../../store/kinds.js';
import { rowReads } from '../../store/rows.js';
import { runWrite, type WriteTx } from '../../store/write.js';
import { setRevision as setRevisionHeader } from '../../transport/revision.js';
import { assertTenantReach, principalOf, type Principal } from '../auth/principal.js';
import { writerOfCall } from '../auth/writer.js';
import { requireString } from '../../common/validate.js';
import type { Deps } from './deps.js';

/** Sets x-revision (header and trailer) when the write touched a tenant. */
export function setRevision(ctx: HandlerContext, revision: number | undefined) {
  if (revision !== undefined) setRevisionHeader(ctx, revision);
}

/** Runs a delete (or update) transaction and sets the revision header. */
export async function writeOne<T>(deps: Deps, ctx: HandlerContext, fn: (tx: WriteTx, principal: Principal) => Promise<T>): Promise<T> {
  const principal = principalOf(ctx);
  const { result, revision } = await runWrite(deps.db, (tx) => fn(tx, principal), writerOfCall(ctx));
  setRevision(ctx, revision);
  return result;
}

/**
 * The DELETE of one row by `id`: `not_found` when absent, the caller's tenant reach checked,
 * then `remove` (default: the row alone) in one write. Answers the empty response.
 */
export async function deleteOne(
  deps: Deps,
  ctx: HandlerContext,
  kind: KindName,
  rawId: string,
  remove: (tx: WriteTx, id: string) => Promise<void> = (tx, id) => tx.delete(kind, [id]),
): Promise<Record<string, never>> {
  const id = requireString(rawId, 'id');
  await writeOne(deps, ctx, async (tx, principal) => {
    await loadForWrite(tx, principal, kind, id);
    await remove(tx, id);
  });
  return {};
}

/**
 * Loads a row inside a write, `not_found` when absent, and enters its tenant. The row is read
 * again once the tenant is entered (locked): what the caller checks and updates is the row as
 * the tenant's last writer left it.
 */
export async function loadForWrite(tx: WriteTx, principal: Principal, kind: KindName, id: string, field = 'id'): Promise<Row> {
  const rows = rowReads(tx);
  const tenantId = await rows.tenantOf(kind, id);
  if (tenantId === undefined) throw notFound((KINDS[kind] as KindDef).label, id, field);
  if (tenantId !== null) {
    assertTenantReach(principal, tenantId, field);
    await tx.useTenant(tenantId, field);
  }
  const row = await rows.byId(kind, id);
  if (!row) throw notFound((KINDS[kind] as KindDef).label, id, field);
  return row;
}
