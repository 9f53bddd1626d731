/**
 * The tenant's resources in id order (code units), for listings that page by id. Nothing is
 * kept until a listing asks: the first ask at a revision sorts the existing resources once
 * (O(n log n), one array of node references: 8 bytes a resource, 4 with V8's pointer
 * compression), and each type key asked for filters that array once more (8 bytes a resource
 * of the type). Every `apply` drops the arrays, so the next listing pays the sort again; a
 * tenant written faster than it is listed pays it per listing page. An ordered structure kept
 * current by `apply` (O(log n) a change) would remove that cost at the memory of a tree node per
 * resource; this is the first step.
 */
import type { MutableResourceNode, ResourceNodes } from './resource-nodes.js';

export class ResourceOrder {
  private all: readonly MutableResourceNode[] | undefined;
  private readonly byType = new Map<string, readonly MutableResourceNode[]>();

  constructor(private readonly nodes: ResourceNodes) {}

  /** Forgets the arrays: the rows changed. */
  invalidate(): void {
    this.all = undefined;
    this.byType.clear();
  }

  /** Existing resources by id; of the resource types with key `typeKey` when given. */
  inIdOrder(typeKey?: string): readonly MutableResourceNode[] {
    let all = this.all;
    if (all === undefined) {
      const out: MutableResourceNode[] = [];
      for (const n of this.nodes.nodesByNum) if (n !== undefined && n.exists) out.push(n);
      out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      this.all = all = out;
    }
    if (typeKey === undefined) return all;
    let typed = this.byType.get(typeKey);
    if (typed === undefined) {
      typed = all.filter((n) => n.type?.key === typeKey);
      this.byType.set(typeKey, typed);
    }
    return typed;
  }
}

/** The position of the first node whose id sorts after `id` (binary search). */
export function firstAfter(nodes: readonly { readonly id: string }[], id: string): number {
  let lo = 0;
  let hi = nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (nodes[mid].id <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
