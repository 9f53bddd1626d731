/**
 * Bags: the values under one key of a derived map. One value is stored bare and only a second
 * one allocates a collection: most keys (a resource's parent edge, a subject's assignments at
 * one scope) hold one.
 */

export type Identified = { id: string };
/** Rows under one key: a bare row, or a map id → row when there are several. */
export type RowBag<T extends Identified> = T | ReadonlyMap<string, T>;
export type MutableRowBag<T extends Identified> = T | Map<string, T>;

export function rbWith<T extends Identified>(b: MutableRowBag<T> | undefined, row: T): MutableRowBag<T> {
  if (b === undefined) return row;
  if (b instanceof Map) {
    b.set(row.id, row);
    return b;
  }
  if (b.id === row.id) return row;
  return new Map([
    [b.id, b],
    [row.id, row],
  ]);
}

export function rbWithout<T extends Identified>(b: MutableRowBag<T> | undefined, id: string): MutableRowBag<T> | undefined {
  if (b === undefined) return undefined;
  if (b instanceof Map) {
    b.delete(id);
    if (b.size > 1) return b;
    return b.size === 1 ? (b.values().next().value as T) : undefined;
  }
  return b.id === id ? undefined : b;
}

export function rbAdd<T extends Identified>(m: Map<string, MutableRowBag<T>>, key: string, row: T): void {
  m.set(key, rbWith(m.get(key), row));
}

export function rbDelete<T extends Identified>(m: Map<string, MutableRowBag<T>>, key: string, id: string): void {
  const b = rbWithout(m.get(key), id);
  if (b === undefined) m.delete(key);
  else m.set(key, b);
}

const NO_ROWS: readonly never[] = [];

/** The rows of a bag (allocates a one-element array for a bare row). */
export function bagRows<T extends Identified>(b: RowBag<T> | undefined): Iterable<T> {
  if (b === undefined) return NO_ROWS;
  if (b instanceof Map) return b.values();
  return [b as T];
}

/**
 * Ids under one key: a bare string, a small array while few (a `Set` of two costs about 150
 * bytes, an array of two 32), then a Set past {@link SMALL_BAG} (adds and deletes stay O(1)).
 */
export type Bag = string | string[] | Set<string>;
export type Multi = Map<string, Bag>;
const SMALL_BAG = 8;
const EMPTY_IDS: readonly string[] = [];

export function bagAdd(m: Multi, key: string, v: string): void {
  const b = m.get(key);
  if (b === undefined) m.set(key, v);
  else if (typeof b === 'string') {
    if (b !== v) m.set(key, [b, v]);
  } else if (Array.isArray(b)) {
    if (b.includes(v)) return;
    if (b.length < SMALL_BAG) b.push(v);
    else m.set(key, new Set([...b, v]));
  } else b.add(v);
}

export function bagDelete(m: Multi, key: string, v: string): void {
  const b = m.get(key);
  if (b === undefined) return;
  if (typeof b === 'string') {
    if (b === v) m.delete(key);
    return;
  }
  if (Array.isArray(b)) {
    const i = b.indexOf(v);
    if (i < 0) return;
    b.splice(i, 1);
    if (b.length === 1) m.set(key, b[0]);
    return;
  }
  b.delete(v);
  if (b.size === 1) m.set(key, b.values().next().value as string);
  else if (b.size === 0) m.delete(key);
  else if (b.size <= SMALL_BAG / 2) m.set(key, [...b]);
}

export function bagIds(b: Bag | undefined): readonly string[] {
  if (b === undefined) return EMPTY_IDS;
  return typeof b === 'string' ? [b] : [...b];
}

export function nested<V>(m: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let inner = m.get(key);
  if (!inner) m.set(key, (inner = new Map()));
  return inner;
}

export function rbAdd2<T extends Identified>(m: Map<string, Map<string, MutableRowBag<T>>>, k1: string, k2: string, row: T): void {
  rbAdd(nested(m, k1), k2, row);
}

export function rbDelete2<T extends Identified>(m: Map<string, Map<string, MutableRowBag<T>>>, k1: string, k2: string, id: string): void {
  const inner = m.get(k1);
  if (!inner) return;
  rbDelete(inner, k2, id);
  if (inner.size === 0) m.delete(k1);
}
