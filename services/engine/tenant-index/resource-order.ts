/**
 * The tenant's resources in id order (code units), for listings that page by id. Nothing is
 * kept until a listing asks: the first ask sorts the existing resources once (O(n log n), one
 * array of node numbers: 8 bytes a resource), and each type
 * key asked for filters that array once (as much again per resource of the type). `apply` then
 * keeps the arrays current: each changed resource is moved by binary search and one splice
 * (O(log n) to find, a memmove of the array's tail to move), and a revision of more than
 * {@link SPLICE_LIMIT} resource changes, or one that changes resource types, drops what it would
 * have to redo instead (the next listing sorts or filters again).
 */
import type { ResourceNodes } from './resource-nodes.js';
import type { ResourceNode } from './types.js';

/** Resource changes in one revision past which re-sorting beats splicing. */
const SPLICE_LIMIT = 256;

export class ResourceOrder {
  private all: ResourceNode[] | undefined;
  private readonly byType = new Map<string, ResourceNode[]>();

  constructor(private readonly nodes: ResourceNodes) {}

  /**
   * Follows one applied revision: `resourceIds` are the resources it upserted or deleted,
   * `typesChanged` whether it changed a resource type (a key may have moved).
   */
  applied(resourceIds: readonly string[], typesChanged: boolean): void {
    if (typesChanged) this.byType.clear();
    if (resourceIds.length === 0 || (this.all === undefined && this.byType.size === 0)) return;
    if (resourceIds.length > SPLICE_LIMIT) {
      this.all = undefined;
      this.byType.clear();
      return;
    }
    for (const id of resourceIds) {
      const n = this.nodes.table.get(id);
      const current = n !== undefined && this.nodes.exists(n) ? n : undefined;
      if (this.all !== undefined) this.place(this.all, id, current);
      for (const [key, typed] of this.byType) this.place(typed, id, current !== undefined && this.nodes.type(current)?.key === key ? current : undefined);
    }
  }

  /** Existing resources by id; of the resource types with key `typeKey` when given. */
  inIdOrder(typeKey?: string): readonly ResourceNode[] {
    let all = this.all;
    if (all === undefined) {
      const out: ResourceNode[] = [];
      for (let n = 0; n < this.nodes.nextNum; n++) if (this.nodes.exists(n)) out.push(n);
      const nodes = this.nodes;
      out.sort((a, b) => nodes.compareIds(a, b));
      this.all = all = out;
    }
    if (typeKey === undefined) return all;
    let typed = this.byType.get(typeKey);
    if (typed === undefined) {
      typed = all.filter((n) => this.nodes.type(n)?.key === typeKey);
      this.byType.set(typeKey, typed);
    }
    return typed;
  }

  /** Puts `node` (or nothing) where id `id` belongs in `list`, replacing what held that id. */
  private place(list: ResourceNode[], id: string, node: ResourceNode | undefined): void {
    const idOf = (n: ResourceNode) => this.nodes.idOf(n);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (idOf(list[mid]) < id) lo = mid + 1;
      else hi = mid;
    }
    const held = lo < list.length && idOf(list[lo]) === id;
    if (node === undefined) {
      if (held) list.splice(lo, 1);
    } else if (held) list[lo] = node;
    else list.splice(lo, 0, node);
  }
}

/** The position of the first node whose id sorts after `id` (binary search; `idOf` gives a node's id). */
export function firstAfter<T>(nodes: readonly T[], id: string, idOf: (node: T) => string): number {
  let lo = 0;
  let hi = nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (idOf(nodes[mid]) <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
