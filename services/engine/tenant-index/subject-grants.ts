/** One subject's ownership grants, in the least memory a few or many of them take. */
import type { OwnershipGrant } from '../model.js';
import { rbWith, type MutableRowBag, type RowBag } from './bags.js';
import { GRANT_SCAN_LIMIT, type GrantSet } from './types.js';

/**
 * A subject's ownership grants, as strings only (no row objects: a row is made when asked for).
 * Most subjects hold a few: `[grantId, resourceId, roleId, …]` in one flat array, scanned
 * (24 bytes a grant, where a row object costs 56 and a map entry 40 to 80). Past
 * {@link GRANT_SCAN_LIMIT} grants they move into maps by resource and by grant id, and back
 * into an array when deletes bring them under half of it.
 */
export class SubjectGrants implements GrantSet {
  /** `[grantId, resourceId, roleId, …]` while few; undefined while the maps hold them. */
  private list: string[] | undefined = [];
  /** resourceId → `[grantId, roleId, …]`. */
  private byResource: Map<string, string[]> | undefined;
  /** grantId → resourceId. */
  private byId: Map<string, string> | undefined;
  private count = 0;

  /** `num`: the set's number in its index (the grant-id table maps each grant to it). */
  constructor(
    readonly subjectId: string,
    readonly num = -1,
  ) {}

  get size(): number {
    return this.count;
  }

  private row(id: string, resourceId: string, roleId: string): OwnershipGrant {
    return { id, subjectId: this.subjectId, resourceId, roleId };
  }

  get(resourceId: string): RowBag<OwnershipGrant> | undefined {
    const list = this.list;
    if (list !== undefined) {
      let found: MutableRowBag<OwnershipGrant> | undefined;
      for (let i = 0; i < list.length; i += 3) {
        if (list[i + 1] === resourceId) found = rbWith(found, this.row(list[i], list[i + 1], list[i + 2]));
      }
      return found;
    }
    const pairs = (this.byResource as Map<string, string[]>).get(resourceId);
    if (pairs === undefined) return undefined;
    if (pairs.length === 2) return this.row(pairs[0], resourceId, pairs[1]);
    let found: MutableRowBag<OwnershipGrant> | undefined;
    for (let i = 0; i < pairs.length; i += 2) found = rbWith(found, this.row(pairs[i], resourceId, pairs[i + 1]));
    return found;
  }

  /** Whether the set holds the grant with this id. */
  has(id: string): boolean {
    const list = this.list;
    if (list === undefined) return (this.byId as Map<string, string>).has(id);
    for (let i = 0; i < list.length; i += 3) if (list[i] === id) return true;
    return false;
  }

  /** The grant with this id, or undefined. */
  find(id: string): OwnershipGrant | undefined {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 3) if (list[i] === id) return this.row(list[i], list[i + 1], list[i + 2]);
      return undefined;
    }
    const resourceId = (this.byId as Map<string, string>).get(id);
    if (resourceId === undefined) return undefined;
    const pairs = (this.byResource as Map<string, string[]>).get(resourceId) as string[];
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === id) return this.row(id, resourceId, pairs[i + 1]);
    return undefined;
  }

  /** Adds a grant whose id is not in the set yet. */
  add(id: string, resourceId: string, roleId: string): void {
    this.count++;
    const list = this.list;
    if (list === undefined) {
      this.file(id, resourceId, roleId);
      return;
    }
    list.push(id, resourceId, roleId);
    if (list.length > GRANT_SCAN_LIMIT * 3) {
      this.byResource = new Map();
      this.byId = new Map();
      this.list = undefined;
      for (let i = 0; i < list.length; i += 3) this.file(list[i], list[i + 1], list[i + 2]);
    }
  }

  private file(id: string, resourceId: string, roleId: string): void {
    const m = this.byResource as Map<string, string[]>;
    const pairs = m.get(resourceId);
    if (pairs === undefined) m.set(resourceId, [id, roleId]);
    else pairs.push(id, roleId);
    (this.byId as Map<string, string>).set(id, resourceId);
  }

  /** Removes the grant with this id; a no-op when absent. */
  delete(id: string): void {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 3) {
        if (list[i] !== id) continue;
        // Move the last entry into the hole.
        const last = list.length - 3;
        list[i] = list[last];
        list[i + 1] = list[last + 1];
        list[i + 2] = list[last + 2];
        list.length = last;
        this.count--;
        return;
      }
      return;
    }
    const byId = this.byId as Map<string, string>;
    const byResource = this.byResource as Map<string, string[]>;
    const resourceId = byId.get(id);
    if (resourceId === undefined) return;
    byId.delete(id);
    const pairs = byResource.get(resourceId) as string[];
    const i = pairs.indexOf(id);
    pairs.splice(i - (i % 2), 2);
    if (pairs.length === 0) byResource.delete(resourceId);
    this.count--;
    if (this.count <= GRANT_SCAN_LIMIT / 2) {
      const rows: string[] = [];
      for (const [r, ps] of byResource) for (let k = 0; k < ps.length; k += 2) rows.push(ps[k], r, ps[k + 1]);
      this.list = rows;
      this.byResource = undefined;
      this.byId = undefined;
    }
  }

  forEachResource(visit: (resourceId: string) => void): void {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 1; i < list.length; i += 3) visit(list[i]);
      return;
    }
    for (const [r, ps] of this.byResource as Map<string, string[]>) for (let k = 0; k < ps.length; k += 2) visit(r);
  }

  /** Every grant, in no particular order. */
  rows(): OwnershipGrant[] {
    const out: OwnershipGrant[] = [];
    if (this.list !== undefined) {
      const list = this.list;
      for (let i = 0; i < list.length; i += 3) out.push(this.row(list[i], list[i + 1], list[i + 2]));
      return out;
    }
    for (const [r, ps] of this.byResource as Map<string, string[]>) for (let k = 0; k < ps.length; k += 2) out.push(this.row(ps[k], r, ps[k + 1]));
    return out;
  }

  /**
   * Copies the arrays grown by `push` to their exact length (V8 grows an array by half again
   * plus 16 slots: a subject's list of 10 grants holds 47 slots), once a build is complete.
   */
  trim(): void {
    if (this.list !== undefined) this.list = this.list.slice();
    else for (const [r, ps] of this.byResource as Map<string, string[]>) if (ps.length > 2) (this.byResource as Map<string, string[]>).set(r, ps.slice());
  }

  /**
   * The set's storage as it is, for tests that check it agrees with itself
   * (services/engine/testdata/derived-state.ts); never written through.
   */
  layout(): { readonly list: readonly string[] | undefined; readonly byId: ReadonlyMap<string, string> | undefined; readonly count: number } {
    return { list: this.list, byId: this.byId, count: this.count };
  }
}
