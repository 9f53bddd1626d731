import { describe, expect, it } from 'vitest';
import { buildTypeTree, type TypeEdge, type TypeTreeNode } from './type-tree.js';

const edge = (parentTypeId: string, childTypeId: string): TypeEdge => ({ parentTypeId, childTypeId });

/** The tree as indented lines, repeats marked as the view marks them. */
function lines(nodes: readonly TypeTreeNode[], indent = ''): string[] {
  return nodes.flatMap((n) => [
    `${indent}${n.typeId}${n.repeat === 'self' ? ' (itself)' : n.repeat === 'cycle' ? ` (cycle via ${n.via!.join(', ')})` : ''}`,
    ...lines(n.children, `${indent}  `),
  ]);
}

describe('buildTypeTree', () => {
  it('draws the seeded hierarchy: folder contains documents and itself', () => {
    const tree = buildTypeTree(['document', 'folder'], [edge('folder', 'document'), edge('folder', 'folder')]);
    expect(lines(tree.roots)).toEqual(['folder', '  document', '  folder (itself)']);
    expect(tree.truncated).toBe(false);
  });

  it('shows a type without edges as a root of its own', () => {
    expect(lines(buildTypeTree(['a', 'b'], []).roots)).toEqual(['a', 'b']);
  });

  it('draws a type with several parents under each of them', () => {
    const tree = buildTypeTree(['team', 'project', 'doc'], [edge('team', 'doc'), edge('project', 'doc'), edge('team', 'project')]);
    expect(lines(tree.roots)).toEqual(['team', '  project', '    doc', '  doc']);
  });

  it('orders siblings as the types are given, then types only edges mention', () => {
    const tree = buildTypeTree(['root', 'b', 'a'], [edge('root', 'a'), edge('root', 'x'), edge('root', 'b')]);
    expect(lines(tree.roots)).toEqual(['root', '  b', '  a', '  x']);
  });

  it('stops a longer loop at the repeated type and names the types between', () => {
    const tree = buildTypeTree(['top', 'a', 'b', 'c'], [edge('top', 'a'), edge('a', 'b'), edge('b', 'c'), edge('c', 'a')]);
    expect(lines(tree.roots)).toEqual(['top', '  a', '    b', '      c', '        a (cycle via b, c)']);
  });

  it('roots a group of types that only contain each other at its first type', () => {
    const tree = buildTypeTree(['p', 'q'], [edge('p', 'q'), edge('q', 'p')]);
    expect(lines(tree.roots)).toEqual(['p', '  q', '    p (cycle via q)']);
  });

  it('ignores a repeated edge', () => {
    expect(lines(buildTypeTree(['a', 'b'], [edge('a', 'b'), edge('a', 'b')]).roots)).toEqual(['a', '  b']);
  });

  it('stops at the node budget and says so', () => {
    // Each level doubles as a tree: 2^12 paths from 12 types.
    const ids = Array.from({ length: 12 }, (_, i) => `t${i}`);
    const edges = ids.slice(1).flatMap((id, i) => [edge(ids[i], id), edge(ids[i], id)]);
    const wide = ids.slice(1).flatMap((id, i) => (i + 2 < ids.length ? [edge(ids[i], ids[i + 2])] : []));
    const tree = buildTypeTree(ids, [...edges, ...wide], 50);
    expect(tree.truncated).toBe(true);
    expect(lines(tree.roots).length).toBeLessThanOrEqual(50);
  });
});
