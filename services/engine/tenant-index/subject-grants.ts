/** One subject's ownership grants, in the least memory a few or many of them take. */
import type { OwnershipGrant } from '../model.js';
import { PACKED, packId, unpackId } from '../packed-id.js';
import { rbWith, type MutableRowBag, type RowBag } from './bags.js';
import { GRANT_SCAN_LIMIT, type GrantSet } from './types.js';

/** Prefix of the grant ids that pack (packed-id.ts): the service's own `ownership_grant_{uuidv7}`. */
const GRANT_PREFIX = 'ownership_grant_';
/**
 * Slots of one grant in a set's list: the grant id's four words (or the id string, then three
 * zeros, when it does not pack), the resource id, the role id.
 */
export const GRANT_STRIDE = 6;
const RESOURCE = 4;
const ROLE = 5;

/**
 * A subject's ownership grants, with no row objects (a row is made when asked for). Most
 * subjects hold a few: one flat array of {@link GRANT_STRIDE} slots a grant, scanned, the grant id
 * packed into four small integers when it is the service's own form (48 bytes a grant and the
 * resource's and role's strings, shared; a row object costs 56, a map entry 40 to 80, a grant id
 * string 72). Past {@link GRANT_SCAN_LIMIT} grants they move into maps by resource and by grant
 * id (ids as strings), and back into an array when deletes bring them under half of it.
 */
export class SubjectGrants implements GrantSet {
  /** {@link GRANT_STRIDE} slots a grant while few; undefined while the maps hold them. */
  private list: (string | number)[] | undefined = [];
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

  /** The row of the grant at slot `i` of the list. */
  private rowAt(list: (string | number)[], i: number): OwnershipGrant {
    return this.row(idAt(list, i), list[i + RESOURCE] as string, list[i + ROLE] as string);
  }

  /** Slot of the grant with this id in the list, or -1. */
  private indexOf(list: (string | number)[], id: string): number {
    if (packId(id, GRANT_PREFIX)) {
      const [w0, w1, w2, w3] = PACKED;
      for (let i = 0; i < list.length; i += GRANT_STRIDE) {
        if (list[i] === w0 && list[i + 1] === w1 && list[i + 2] === w2 && list[i + 3] === w3) return i;
      }
      return -1;
    }
    for (let i = 0; i < list.length; i += GRANT_STRIDE) if (list[i] === id) return i;
    return -1;
  }

  get(resourceId: string): RowBag<OwnershipGrant> | undefined {
    const list = this.list;
    if (list !== undefined) {
      let found: MutableRowBag<OwnershipGrant> | undefined;
      for (let i = 0; i < list.length; i += GRANT_STRIDE) if (list[i + RESOURCE] === resourceId) found = rbWith(found, this.rowAt(list, i));
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
    return this.indexOf(list, id) >= 0;
  }

  /** The grant with this id, or undefined. */
  find(id: string): OwnershipGrant | undefined {
    const list = this.list;
    if (list !== undefined) {
      const i = this.indexOf(list, id);
      return i < 0 ? undefined : this.row(id, list[i + RESOURCE] as string, list[i + ROLE] as string);
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
    if (packId(id, GRANT_PREFIX)) list.push(PACKED[0], PACKED[1], PACKED[2], PACKED[3], resourceId, roleId);
    else list.push(id, 0, 0, 0, resourceId, roleId);
    if (list.length > GRANT_SCAN_LIMIT * GRANT_STRIDE) {
      this.byResource = new Map();
      this.byId = new Map();
      this.list = undefined;
      for (let i = 0; i < list.length; i += GRANT_STRIDE) this.file(idAt(list, i), list[i + RESOURCE] as string, list[i + ROLE] as string);
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
      const i = this.indexOf(list, id);
      if (i < 0) return;
      // Move the last entry into the hole.
      const last = list.length - GRANT_STRIDE;
      for (let k = 0; k < GRANT_STRIDE; k++) list[i + k] = list[last + k];
      list.length = last;
      this.count--;
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
      this.list = [];
      this.byResource = undefined;
      this.byId = undefined;
      this.count = 0;
      for (const [r, ps] of byResource) for (let k = 0; k < ps.length; k += 2) this.add(ps[k], r, ps[k + 1]);
    }
  }

  forEachResource(visit: (resourceId: string) => void): void {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += GRANT_STRIDE) visit(list[i + RESOURCE] as string);
      return;
    }
    for (const [r, ps] of this.byResource as Map<string, string[]>) for (let k = 0; k < ps.length; k += 2) visit(r);
  }

  /** Every grant, in no particular order. */
  rows(): OwnershipGrant[] {
    const out: OwnershipGrant[] = [];
    if (this.list !== undefined) {
      const list = this.list;
      for (let i = 0; i < list.length; i += GRANT_STRIDE) out.push(this.rowAt(list, i));
      return out;
    }
    for (const [r, ps] of this.byResource as Map<string, string[]>) for (let k = 0; k < ps.length; k += 2) out.push(this.row(ps[k], r, ps[k + 1]));
    return out;
  }

  /**
   * Copies the arrays grown by `push` to their exact length (V8 grows an array by half again
   * plus 16 slots), once a build is complete.
   */
  trim(): void {
    if (this.list !== undefined) this.list = this.list.slice();
    else for (const [r, ps] of this.byResource as Map<string, string[]>) if (ps.length > 2) (this.byResource as Map<string, string[]>).set(r, ps.slice());
  }

  /**
   * The set's storage as it is, for tests that check it agrees with itself
   * (services/engine/testdata/derived-state.ts); never written through.
   */
  layout(): { readonly list: readonly (string | number)[] | undefined; readonly byId: ReadonlyMap<string, string> | undefined; readonly count: number } {
    return { list: this.list, byId: this.byId, count: this.count };
  }
}

/** The id of the grant at slot `i` of a list: its string, or made from its four words. */
function idAt(list: (string | number)[], i: number): string {
  const k = list[i];
  return typeof k === 'string' ? k : unpackId(GRANT_PREFIX, k, list[i + 1] as number, list[i + 2] as number, list[i + 3] as number);
}
