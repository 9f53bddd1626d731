/**
 * The tenant's subjects (those with a row) in id order (code units), for LookupSubjects, which
 * pages by id. Kept as resource-order.ts keeps resources: nothing until a listing asks, then one
 * sort (O(n log n), one array of node references: 8 bytes a subject, 4 with V8's pointer
 * compression) and, per subject type asked for, one filter of it. `applied` then moves each
 * changed subject by binary search and one splice (its type may have changed: it leaves one
 * type's array for another); a revision of more than {@link SPLICE_LIMIT} subject changes drops
 * the arrays instead (the next listing sorts again).
 */
import { firstAfter } from './resource-order.js';
import type { MutableSubjectNode } from './subjects.js';

/** Subject changes in one revision past which re-sorting beats splicing. */
const SPLICE_LIMIT = 256;

export class SubjectOrder {
  private all: MutableSubjectNode[] | undefined;
  private readonly byType = new Map<string, MutableSubjectNode[]>();

  constructor(private readonly nodes: ReadonlyMap<string, MutableSubjectNode>) {}

  /** Follows one applied revision: `subjectIds` are the subjects it upserted or deleted. */
  applied(subjectIds: readonly string[]): void {
    if (subjectIds.length === 0 || (this.all === undefined && this.byType.size === 0)) return;
    if (subjectIds.length > SPLICE_LIMIT) {
      this.all = undefined;
      this.byType.clear();
      return;
    }
    for (const id of subjectIds) {
      const n = this.nodes.get(id);
      const current = n !== undefined && n.row !== undefined ? n : undefined;
      if (this.all !== undefined) place(this.all, id, current);
      for (const [type, typed] of this.byType) place(typed, id, current !== undefined && current.type === type ? current : undefined);
    }
  }

  /** Subjects with a row, by id; of type `type` when given. */
  inIdOrder(type?: string): readonly MutableSubjectNode[] {
    let all = this.all;
    if (all === undefined) {
      const out: MutableSubjectNode[] = [];
      for (const n of this.nodes.values()) if (n.row !== undefined) out.push(n);
      out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      this.all = all = out;
    }
    if (type === undefined) return all;
    let typed = this.byType.get(type);
    if (typed === undefined) {
      typed = all.filter((n) => n.type === type);
      this.byType.set(type, typed);
    }
    return typed;
  }
}

/** Puts `node` (or nothing) where id `id` belongs in `nodes`, replacing what held that id. */
function place(nodes: MutableSubjectNode[], id: string, node: MutableSubjectNode | undefined): void {
  const after = firstAfter(nodes, id, (n) => n.id);
  const held = after > 0 && nodes[after - 1].id === id;
  if (node === undefined) {
    if (held) nodes.splice(after - 1, 1);
  } else if (held) nodes[after - 1] = node;
  else nodes.splice(after, 0, node);
}
