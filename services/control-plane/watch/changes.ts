/**
 * The change log after a revision, as Watch RevisionChanges: one message per revision, all of
 * its rows in `seq` order, whole revisions only. Rows of kinds outside the decision data
 * (projects, environments, workspaces) are left out, but their revision is still sent (empty) so
 * that a client sees every revision, without a gap.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ENTITY_KINDS } from '../../engine/mod.js';
import { changesAfter, type ChangeLogRow } from '../../store/change-log.js';
import type { Database } from '../../store/db.js';
import { changeLogData } from '../../store/kinds.js';
import { ChangeSchema, Change_Op, RevisionChangesSchema, type Change, type RevisionChanges } from '../../../gen/authz/v1/snapshot_service_pb.js';

const ENGINE_KINDS = new Set<string>(ENTITY_KINDS);

/**
 * Whole revisions after `after`, oldest first, reading about `rowLimit` rows (a single revision
 * larger than that is read whole). Empty when the log holds nothing after `after`. The caller
 * checks that the first is `after + 1` (else the log was compacted past it).
 */
export async function readRevisions(db: Database, tenantId: string, after: number, rowLimit: number): Promise<RevisionChanges[]> {
  const rows = await changesAfter(db, tenantId, after, rowLimit);
  const out: RevisionChanges[] = [];
  let cur: RevisionChanges | undefined;
  for (const r of rows) {
    const revision = BigInt(r.revision);
    if (!cur || cur.revision !== revision) {
      cur = create(RevisionChangesSchema, { tenantId, revision, changes: [], committedAt: timestampFromDate(new Date(r.created_at)) });
      out.push(cur);
    }
    if (!ENGINE_KINDS.has(r.kind)) continue;
    cur.changes.push(toChange(r));
  }
  return out;
}

function toChange(r: ChangeLogRow): Change {
  if (r.op === 'delete') return create(ChangeSchema, { op: Change_Op.DELETE, kind: r.kind, id: r.entity_id });
  const data = r.data ? changeLogData(r.kind, r.data) : undefined;
  return create(ChangeSchema, { op: Change_Op.UPSERT, kind: r.kind, id: r.entity_id, json: data ? JSON.stringify(data) : '' });
}

/** Estimated encoded bytes of a RevisionChanges (from above). */
export function revisionBytes(c: RevisionChanges): number {
  let n = Buffer.byteLength(c.tenantId) + 48;
  for (const ch of c.changes) n += Buffer.byteLength(ch.kind) + Buffer.byteLength(ch.id) + Buffer.byteLength(ch.json) + 24;
  return n;
}
