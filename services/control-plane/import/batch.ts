/**
 * One batch of a bulk import, as ImportService.ImportBatch writes it: checked line by line, then
 * in one transaction (the tenant's row locked) its place in the import checked, its rows written
 * at bulk speed (COPY on PostgreSQL) with their change-log entries under one revision, and the
 * import's progress recorded, so a batch is committed exactly once.
 */
import { DomainError, constraint, invalid, notFound } from '../../common/errors.js';
import { batchItems, requireString } from '../../common/validate.js';
import type { ImportBatchRequest } from '../../../gen/authz/v1/import_service_pb.js';
import type { Database } from '../../store/db.js';
import { importProgress, recordImportBatch, NO_COUNTS, type ImportCounts, type ImportProgress } from '../../store/imports.js';
import { rowReads } from '../../store/rows.js';
import { runWrite } from '../../store/write.js';
import { assertTenantReach, assertWholeTenantReach, type Principal } from '../auth/principal.js';
import { parseEntity } from './entities.js';
import { planBatch, WRITE_ORDER } from './plan.js';

/** An import id: chosen by the client. */
const IMPORT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** How long a batch waits for its predecessor to commit before it is refused. */
export const ORDER_WAIT_MS = 30_000;

export interface BatchOutcome {
  importId: string;
  sequence: number;
  /** False when the batch had been committed before: nothing was written. */
  applied: boolean;
  /** The revision the batch committed at (for a batch committed before: the import's last). */
  revision: number;
  /** The tenant's revision when the batch was answered (`x-revision`): `revision`, unless the batch was committed before. */
  tenantRevision: number;
  nextLine: number;
  counts: ImportCounts;
}

/** The import id of a request: `invalid_argument` unless 1-128 of [A-Za-z0-9._:-]. */
export function importIdOf(value: string | undefined): string {
  const id = requireString(value, 'importId', 128);
  if (!IMPORT_ID.test(id)) throw invalid('importId', 'must be 1-128 of [A-Za-z0-9._:-]');
  return id;
}

/** The caller must reach the whole tenant: an import writes anywhere in it. */
export function assertImportReach(principal: Principal, tenantId: string): void {
  assertTenantReach(principal, tenantId, 'tenantId');
  assertWholeTenantReach(principal, `an import into tenant ${tenantId}`, 'tenantId');
}

/** A positive whole number of a request (`sequence`, `firstLine`). */
function positive(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) throw invalid(field, 'must be a whole number of at least 1');
  return value;
}

const add = (a: ImportCounts, b: ImportCounts): ImportCounts =>
  Object.fromEntries(Object.keys(NO_COUNTS).map((k) => [k, a[k as keyof ImportCounts] + b[k as keyof ImportCounts]])) as unknown as ImportCounts;

type Attempt = { outcome: Omit<BatchOutcome, 'tenantRevision'> } | { waitFor: number };

/**
 * Writes one batch. A batch already committed is answered (`applied` false) without writing; a
 * batch whose predecessor has not committed yet waits for it, up to ORDER_WAIT_MS, then is
 * refused (`failed_precondition` on `sequence`); so is a batch that does not start at the line
 * the import's last batch ended at (on `firstLine`). `signal` ends the wait when the caller goes.
 */
export async function importBatch(db: Database, principal: Principal, req: ImportBatchRequest, signal?: AbortSignal): Promise<BatchOutcome> {
  const tenantId = requireString(req.tenantId, 'tenantId');
  const importId = importIdOf(req.importId);
  const sequence = positive(req.sequence, 'sequence');
  const firstLine = positive(req.firstLine, 'firstLine');
  assertImportReach(principal, tenantId);
  const entities = batchItems(req.entities, 'entities').map((e, i) => parseEntity(e, i, firstLine + i));
  const nextLine = firstLine + entities.length;

  const attempt = async (careful: boolean): Promise<Attempt & { tenantRevision?: number }> => {
    const { result, revision: tenantRevision } = await runWrite(db, async (tx): Promise<Attempt> => {
      await tx.useTenant(tenantId, 'tenantId');
      const progress = await importProgress(tx, tenantId, importId);
      const last = progress?.lastSequence ?? 0;
      if (sequence <= last) {
        return { outcome: { importId, sequence, applied: false, revision: progress!.revision, nextLine: progress!.nextLine, counts: { ...NO_COUNTS } } };
      }
      if (sequence > last + 1) return { waitFor: last + 1 };
      if (progress && firstLine !== progress.nextLine) {
        throw constraint(`batch ${sequence} of import ${importId} must start at line ${progress.nextLine}, where batch ${last} ended; it starts at line ${firstLine}`, 'firstLine');
      }
      const tenant = await rowReads(tx).byId('tenant', tenantId);
      if (!tenant) throw notFound('tenant', tenantId, 'tenantId');
      const { rows, counts } = await planBatch(tx, { tenantId, rootScopeId: tenant.scopeId as string, by: principal.subjectId }, entities, new Date(), careful);
      for (const kind of WRITE_ORDER) await tx.copy(kind, rows[kind]);
      const revision = tx.revision!;
      const next: ImportProgress = { importId, lastSequence: sequence, nextLine, revision, counts: add(progress?.counts ?? NO_COUNTS, counts) };
      await recordImportBatch(tx, tenantId, next, principal.subjectId);
      return { outcome: { importId, sequence, applied: true, revision, nextLine, counts } };
    });
    return { ...result, tenantRevision };
  };

  const deadline = Date.now() + ORDER_WAIT_MS;
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    let r;
    try {
      r = await attempt(false);
    } catch (err) {
      // A unique constraint refused a row: planned again with the store's rows read, the batch
      // fails on the line at fault (or, if the clash is gone meanwhile, is written).
      if (!(err instanceof DomainError && err.kind === 'already_exists')) throw err;
      r = await attempt(true);
    }
    if ('outcome' in r) return { ...r.outcome, tenantRevision: r.tenantRevision ?? r.outcome.revision };
    if (signal?.aborted) throw new DomainError('canceled', 'the caller went away while the batch waited for its predecessor');
    if (Date.now() >= deadline) {
      throw constraint(`batch ${sequence} of import ${importId} waited ${ORDER_WAIT_MS / 1000} s for batch ${r.waitFor}, which has not been committed: send batches in order`, 'sequence');
    }
    await new Promise<void>((resolve) => setTimeout(resolve, pause));
  }
}

/** Where an import stands; `not_found` when it has committed no batch. */
export async function getImport(db: Database, principal: Principal, tenantIdValue: string, importIdValue: string): Promise<ImportProgress> {
  const tenantId = requireString(tenantIdValue, 'tenantId');
  const importId = importIdOf(importIdValue);
  assertImportReach(principal, tenantId);
  const progress = await importProgress(db, tenantId, importId);
  if (!progress) throw notFound('import', importId, 'importId');
  return progress;
}
