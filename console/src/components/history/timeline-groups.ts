/** A page of the change log, which lists changes, regrouped as the revisions they belong to. */
import type { ChangeWriter, EntityChange } from '../../../../gen/authz/v1/change_service_pb.js';
import type { Timestamp } from '@bufbuild/protobuf/wkt';

export interface RevisionGroup {
  readonly revision: bigint;
  readonly time?: Timestamp;
  readonly writer?: ChangeWriter;
  readonly reason: string;
  readonly changes: readonly EntityChange[];
}

/**
 * Consecutive changes of one revision become one group. The log is ordered by revision, so a
 * revision appears once per page; it may still begin on one page and end on the next.
 */
export function groupByRevision(changes: readonly EntityChange[]): RevisionGroup[] {
  const groups: { revision: bigint; time?: Timestamp; writer?: ChangeWriter; reason: string; changes: EntityChange[] }[] = [];
  for (const c of changes) {
    const last = groups[groups.length - 1];
    if (last !== undefined && last.revision === c.revision) last.changes.push(c);
    else groups.push({ revision: c.revision, time: c.time, writer: c.writer, reason: c.reason, changes: [c] });
  }
  return groups;
}
