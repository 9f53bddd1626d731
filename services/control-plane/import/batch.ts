/**
 * One batch of a bulk import, as ImportService.ImportBatch writes it: checked line by line, then
 * in one transaction (the tenant's row locked) its place in the import checked, its rows written
 * at bulk speed (COPY on PostgreSQL) with their change-log entries under one revision, and the
 * import's progress recorded, so a batch is committed exactly once.
 */
import { DomainError, aborted, constraint, invalid, notFound } from '../../common/errors.js';
import { batchItems, requireString } from '../../common/validate.js';
import type { ImportBatchRequest } from '../../../gen/authz/v1/import_service_pb.js';
import type { Database } from '../../store/db.js';
import { importProgress, recordImportBatch, NO_COUNTS, type ImportCounts, type ImportProgress } from '../../store/imports.js';
import { rowReads } from '../../store/rows.js';
import { runWrite, type Writer } from '../../store/write.js';
import { assertTenantReach, assertWholeTenantReach, type Principal } from '../auth/principal.js';
import { parseEntity } from './entities.js';
import { planBatch, WRITE_ORDER } from './plan.js';

/** An import id: chosen by the client. */
const IMPORT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The import batches this process is writing, by tenant, import and sequence: a batch whose
 * predecessor is among them waits for it to end before it looks at the import's progress.
 */
const writing = new Map<string, Promise<unknown>>();
const batchKey = (tenantId: string, importId: string, sequence: number) => `${tenantId}\u0000${importId}\u0000${sequence}`;

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

/**
 * Writes one batch. A batch already committed is answered (`applied` false) without writing.
 * Batches commit in sequence order: a batch whose predecessor this process is still writing
 * waits for it; one whose predecessor is not committed otherwise is refused at once (`aborted`
 * on `sequence`: send it again once its predecessor is). So is a batch that does not start at
 * the line where the import's last batch ended (`failed_precondition` on `firstLine`).
 */
export async function importBatch(db: Database, principal: Principal, writer: Writer, req: ImportBatchRequest): Promise<BatchOutcome> {
  const tenantId = requireString(req.tenantId, 'tenantId');
  const importId = importIdOf(req.importId);
  const sequence = positive(req.sequence, 'sequence');
  const firstLine = positive(req.firstLine, 'firstLine');
  assertImportReach(principal, tenantId);
  const entities = batchItems(req.entities, 'entities').map((e, i) => parseEntity(e, i, firstLine + i));
  const nextLine = firstLine + entities.length;

  const attempt = async (careful: boolean): Promise<BatchOutcome> => {
    const { result, revision: tenantRevision } = await runWrite(db, async (tx): Promise<Omit<BatchOutcome, 'tenantRevision'>> => {
      await tx.useTenant(tenantId, 'tenantId');
      const progress = await importProgress(tx, tenantId, importId);
      const last = progress?.lastSequence ?? 0;
      if (sequence <= last) {
        return { importId, sequence, applied: false, revision: progress!.revision, nextLine: progress!.nextLine, counts: { ...NO_COUNTS } };
      }
      if (sequence > last + 1) {
        throw aborted(`batch ${sequence} of import ${importId} follows batch ${sequence - 1}, which is not committed (the last committed is ${last}): send it again once it is`, 'sequence');
      }
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
      return { importId, sequence, applied: true, revision, nextLine, counts };
    }, writer);
    return { ...result, tenantRevision: tenantRevision ?? result.revision };
  };
  const write = async (): Promise<BatchOutcome> => {
    await writing.get(batchKey(tenantId, importId, sequence - 1))?.catch(() => undefined);
    try {
      return await attempt(false);
    } catch (err) {
      // A unique constraint refused a row: planned again with the store's rows read, the batch
      // fails on the line at fault (or, if the clash is gone meanwhile, is written).
      if (!(err instanceof DomainError && err.kind === 'already_exists')) throw err;
      return attempt(true);
    }
  };
  const key = batchKey(tenantId, importId, sequence);
  const running = write();
  writing.set(key, running);
  try {
    return await running;
  } finally {
    if (writing.get(key) === running) writing.delete(key);
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
