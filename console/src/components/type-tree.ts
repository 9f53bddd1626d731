/**
 * The resource type hierarchy (edges "parent type may contain child type") as a tree to draw.
 * The edges form a graph, not a tree: a type with several parents is drawn under each, and an
 * edge back to a type already on the path (folder → folder, or a → b → a) is drawn as a leaf
 * marked as a repeat instead of being followed for ever.
 */

export interface TypeEdge {
  readonly parentTypeId: string;
  readonly childTypeId: string;
}

export interface TypeTreeNode {
  readonly typeId: string;
  readonly children: readonly TypeTreeNode[];
  /**
   * Set on a leaf that repeats a type above it: `self` for an edge from a type to itself, `cycle`
   * for a longer loop, with `via` the types between, in order from the repeated type down.
   */
  readonly repeat?: 'self' | 'cycle';
  readonly via?: readonly string[];
}

export interface TypeTree {
  readonly roots: readonly TypeTreeNode[];
  /** True when the drawing stopped at {@link maxNodes} (a graph with many shared types grows fast as a tree). */
  readonly truncated: boolean;
}

/**
 * `typeIds` are the types to show (each appears at least once), in the order siblings are drawn;
 * types that only edges mention come after them. Roots are the types no other type contains; a
 * group of types that only contain each other gets its first type as a root.
 */
export function buildTypeTree(typeIds: readonly string[], edges: readonly TypeEdge[], maxNodes = 2000): TypeTree {
  const order = new Map<string, number>();
  const note = (id: string) => { if (!order.has(id)) order.set(id, order.size); };
  typeIds.forEach(note);
  const childrenOf = new Map<string, string[]>();
  const hasOtherParent = new Set<string>();
  for (const e of edges) {
    note(e.parentTypeId);
    note(e.childTypeId);
    const list = childrenOf.get(e.parentTypeId) ?? [];
    if (!list.includes(e.childTypeId)) list.push(e.childTypeId);
    childrenOf.set(e.parentTypeId, list);
    if (e.parentTypeId !== e.childTypeId) hasOtherParent.add(e.childTypeId);
  }
  const byOrder = (a: string, b: string) => order.get(a)! - order.get(b)!;
  for (const list of childrenOf.values()) list.sort(byOrder);

  let budget = maxNodes;
  let truncated = false;
  const drawn = new Set<string>();
  const draw = (typeId: string, path: readonly string[]): TypeTreeNode | undefined => {
    if (budget <= 0) {
      truncated = true;
      return undefined;
    }
    budget--;
    drawn.add(typeId);
    const here = [...path, typeId];
    const children: TypeTreeNode[] = [];
    for (const child of childrenOf.get(typeId) ?? []) {
      let node: TypeTreeNode | undefined;
      if (child === typeId) node = leaf(child, 'self', []);
      else if (here.includes(child)) node = leaf(child, 'cycle', here.slice(here.indexOf(child) + 1));
      else node = draw(child, here);
      if (node === undefined) break;
      children.push(node);
    }
    return { typeId, children };
  };
  const leaf = (typeId: string, repeat: 'self' | 'cycle', via: string[]): TypeTreeNode | undefined => {
    if (budget <= 0) {
      truncated = true;
      return undefined;
    }
    budget--;
    return { typeId, children: [], repeat, via };
  };

  const all = [...order.keys()];
  const roots: TypeTreeNode[] = [];
  const addRoot = (id: string) => {
    const node = draw(id, []);
    if (node) roots.push(node);
  };
  for (const id of all) if (!hasOtherParent.has(id)) addRoot(id);
  // What is left sits only in loops of types containing each other.
  for (const id of all) if (!drawn.has(id) && !truncated) addRoot(id);
  return { roots, truncated };
}
