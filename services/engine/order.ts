/**
 * The orders the decision path takes rows in. Every process must take the same steps whatever
 * order its index received its rows in: which rule runs out of a shared budget, and what a trace
 * names, depend on it.
 */
import { bagRows, type RowBag } from './tenant-index/mod.js';

/** Strings by code unit. */
export const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A bag's rows by id: the order match definitions and ownership grants run in (they draw on the decision's budget). */
export function inIdOrder<T extends { id: string }>(bag: RowBag<T> | undefined): Iterable<T> {
  return bag instanceof Map && bag.size > 1 ? [...bag.values()].sort((a, b) => cmp(a.id, b.id)) : bagRows(bag);
}
