/**
 * The collections of one resource type defined at one scope, filed by the keys their match
 * definitions require (match-keys.ts): under each field value or tag one of which a resource must
 * have for the definition to match it or error against it, or, for a definition without such
 * keys, in a list tried on every resource. A decision looks up the resource's own values, so
 * what it tries grows with the collections that may match and those without keys, not with the
 * collections of the type.
 */
import { lookupValue, requiredMatchKeys, type KeyValue, type MatchKey } from '../match-keys.js';
import { resourceField, type ResourceTags } from '../match.js';
import type { Collection, Resource } from '../model.js';
import { bagRows, rbWith, rbWithout, type MutableRowBag, type RowBag } from './bags.js';

/**
 * The keys a collection is filed under, or undefined when it is tried on every resource. Worked
 * out again when it is removed (rows are immutable once indexed, so the same): keeping them
 * would cost memory for every collection to spare a few microseconds per change.
 */
export function collectionKeys(c: Collection): readonly MatchKey[] | undefined {
  return requiredMatchKeys(c.matchDefinition);
}

const byId = (a: Collection, b: Collection): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class CollectionFile {
  /** Every collection of the file (plans and listings read them all). */
  all: MutableRowBag<Collection> | undefined;
  /** Field → value → the collections requiring that value (one of theirs) there. */
  readonly byField = new Map<string, Map<KeyValue, MutableRowBag<Collection>>>();
  /** Tag group key → identifier → the collections requiring that tag (one of theirs). */
  readonly byTag = new Map<string, Map<string, MutableRowBag<Collection>>>();
  /** Collections without keys: tried on every resource. */
  unkeyed: MutableRowBag<Collection> | undefined;
  /** `unkeyed` in id order, made when first asked after a change. */
  private unkeyedSorted: readonly Collection[] | undefined;

  get size(): number {
    const a = this.all;
    return a === undefined ? 0 : a instanceof Map ? a.size : 1;
  }

  add(c: Collection): void {
    this.all = rbWith(this.all, c);
    const keys = collectionKeys(c);
    if (keys === undefined) {
      this.unkeyed = rbWith(this.unkeyed, c);
      this.unkeyedSorted = undefined;
      return;
    }
    for (const k of keys) {
      if ('field' in k) fileUnder(this.byField, k.field, k.value, c);
      else fileUnder(this.byTag, k.tagGroup, k.identifier, c);
    }
  }

  remove(c: Collection): void {
    this.all = rbWithout(this.all, c.id);
    const keys = collectionKeys(c);
    if (keys === undefined) {
      this.unkeyed = rbWithout(this.unkeyed, c.id);
      this.unkeyedSorted = undefined;
      return;
    }
    for (const k of keys) {
      if ('field' in k) unfile(this.byField, k.field, k.value, c.id);
      else unfile(this.byTag, k.tagGroup, k.identifier, c.id);
    }
  }

  /**
   * Pushes onto `out`, in id order, the collections that may match `resource` (or error against
   * it): those filed under one of its values or tags, and those without keys. Returns how many
   * of the file's collections it leaves out. `tags` is called only when some collection requires a tag.
   */
  candidates(resource: Resource, tags: () => ResourceTags, out: Collection[]): number {
    let hits: Collection[] | undefined;
    for (const [field, byValue] of this.byField) {
      const key = lookupValue(resourceField(resource, field));
      if (key === undefined) continue;
      const bag = byValue.get(key);
      if (bag !== undefined) hits = withRows(hits, bag);
    }
    if (this.byTag.size > 0) {
      const have = tags();
      for (const [group, byIdentifier] of this.byTag) {
        const identifiers = have.get(group);
        if (identifiers === undefined) continue;
        for (const identifier of identifiers) {
          const bag = byIdentifier.get(identifier);
          if (bag !== undefined) hits = withRows(hits, bag);
        }
      }
    }
    const rest = this.unkeyedInIdOrder();
    let found = rest.length;
    if (hits === undefined) {
      for (const c of rest) out.push(c);
      return this.size - found;
    }
    // A collection filed under several keys the resource has is tried once.
    if (hits.length > 1) {
      hits.sort(byId);
      let n = 1;
      for (let i = 1; i < hits.length; i++) if (hits[i].id !== hits[n - 1].id) hits[n++] = hits[i];
      hits.length = n;
    }
    found += hits.length;
    // Two lists in id order, with no collection in both: merged.
    let i = 0;
    let j = 0;
    while (i < hits.length && j < rest.length) out.push(hits[i].id < rest[j].id ? hits[i++] : rest[j++]);
    while (i < hits.length) out.push(hits[i++]);
    while (j < rest.length) out.push(rest[j++]);
    return this.size - found;
  }

  private unkeyedInIdOrder(): readonly Collection[] {
    if (this.unkeyedSorted === undefined) this.unkeyedSorted = [...bagRows(this.unkeyed)].sort(byId);
    return this.unkeyedSorted;
  }
}

function withRows(hits: Collection[] | undefined, bag: RowBag<Collection>): Collection[] {
  const out = hits ?? [];
  for (const c of bagRows(bag)) out.push(c);
  return out;
}

function fileUnder<V>(m: Map<string, Map<V, MutableRowBag<Collection>>>, name: string, value: V, c: Collection): void {
  let byValue = m.get(name);
  if (byValue === undefined) m.set(name, (byValue = new Map()));
  byValue.set(value, rbWith(byValue.get(value), c));
}

function unfile<V>(m: Map<string, Map<V, MutableRowBag<Collection>>>, name: string, value: V, id: string): void {
  const byValue = m.get(name);
  if (byValue === undefined) return;
  const bag = rbWithout(byValue.get(value), id);
  if (bag !== undefined) byValue.set(value, bag);
  else {
    byValue.delete(value);
    if (byValue.size === 0) m.delete(name);
  }
}
