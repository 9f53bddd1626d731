/** One subject's ownership grants, in the least memory a few or many of them take. */
import type { OwnershipGrant } from '../model.js';
import { PACKED, packId, unpackId } from '../packed-id.js';
import { rbWith, type MutableRowBag, type RowBag } from './bags.js';
import { GRANT_SCAN_LIMIT, type GrantSet } from './types.js';

/** Prefix of the grant ids that pack (packed-id.ts): the service's own `ownership_grant_{uuidv7}`. */
const GRANT_PREFIX = 'ownership_grant_';
/**
 * Slots of one grant in a set's `rest`: the grant id's four words (or the id string, then
 * three zeros, when it does not pack), then the role id.
 */
export const REST_STRIDE = 5;
const ROLE = 4;

/** Where a grant set finds a resource's id from the number it keeps (`ResourceNodes`). */
export interface ResourceIds {
  idOf(num: number): string;
}

/**
 * A subject's ownership grants, with no row objects (a row is made when asked for). A grant names
 * its resource by the resource node's number (the index keeps the node while a grant names it:
 * `ResourceNodes.grantRef`), so no grant holds a resource id string and a check compares small
 * integers. Most subjects hold a few, in two flat arrays scanned: the resource numbers, which a
 * check scans, and the rest, read only for a grant of the resource checked (the grant id packed
 * into four small integers when it is the service's own form, then the role id): 48 bytes a
 * grant besides the role's string, which is shared, where a row object costs 56, a map entry 40
 * to 80 and a grant id string 72. Past {@link GRANT_SCAN_LIMIT} grants they move into maps by
 * resource number and by grant id (ids as strings), and back into arrays when deletes bring them
 * under half of it.
 */
export class SubjectGrants implements GrantSet {
  /** The grants' resource numbers while few; undefined while the maps hold them. */
  private resources: number[] | undefined = [];
  /** {@link REST_STRIDE} slots a grant, in the order of `resources`. */
  private rest: (string | number)[] | undefined = [];
  /** resource number → `[grantId, roleId, …]`. */
  private byResource: Map<number, string[]> | undefined;
  /** grantId → resource number. */
  private byId: Map<string, number> | undefined;
  private count = 0;

  /** `num`: the set's number in its index (the grant-id table maps each grant to it); `ids`: the resource ids of the numbers. */
  constructor(
    readonly subjectId: string,
    readonly num: number,
    private readonly ids: ResourceIds,
  ) {}

  get size(): number {
    return this.count;
  }

  private row(id: string, resource: number, roleId: string): OwnershipGrant {
    return { id, subjectId: this.subjectId, resourceId: this.ids.idOf(resource), roleId };
  }

  /** The row of the `k`th grant of the arrays. */
  private rowAt(resources: number[], rest: (string | number)[], k: number): OwnershipGrant {
    return this.row(idAt(rest, k * REST_STRIDE), resources[k], rest[k * REST_STRIDE + ROLE] as string);
  }

  /** Position of the grant with this id in the arrays, or -1. */
  private indexOf(rest: (string | number)[], id: string): number {
    if (packId(id, GRANT_PREFIX)) {
      const w0 = PACKED[0];
      const w1 = PACKED[1];
      const w2 = PACKED[2];
      const w3 = PACKED[3];
      for (let i = 0; i < rest.length; i += REST_STRIDE) {
        if (rest[i] === w0 && rest[i + 1] === w1 && rest[i + 2] === w2 && rest[i + 3] === w3) return i / REST_STRIDE;
      }
      return -1;
    }
    for (let i = 0; i < rest.length; i += REST_STRIDE) if (rest[i] === id) return i / REST_STRIDE;
    return -1;
  }

  get(resource: number): RowBag<OwnershipGrant> | undefined {
    const resources = this.resources;
    if (resources !== undefined) {
      let found: MutableRowBag<OwnershipGrant> | undefined;
      for (let k = 0; k < resources.length; k++) if (resources[k] === resource) found = rbWith(found, this.rowAt(resources, this.rest!, k));
      return found;
    }
    const pairs = (this.byResource as Map<number, string[]>).get(resource);
    if (pairs === undefined) return undefined;
    if (pairs.length === 2) return this.row(pairs[0], resource, pairs[1]);
    let found: MutableRowBag<OwnershipGrant> | undefined;
    for (let i = 0; i < pairs.length; i += 2) found = rbWith(found, this.row(pairs[i], resource, pairs[i + 1]));
    return found;
  }

  rolesOn(resource: number, out: string[]): number {
    let n = 0;
    const resources = this.resources;
    if (resources !== undefined) {
      const rest = this.rest!;
      for (let k = 0; k < resources.length; k++) if (resources[k] === resource) out[n++] = rest[k * REST_STRIDE + ROLE] as string;
      return n;
    }
    const pairs = (this.byResource as Map<number, string[]>).get(resource);
    if (pairs !== undefined) for (let i = 1; i < pairs.length; i += 2) out[n++] = pairs[i];
    return n;
  }

  /** Whether the set holds the grant with this id. */
  has(id: string): boolean {
    const rest = this.rest;
    if (rest === undefined) return (this.byId as Map<string, number>).has(id);
    return this.indexOf(rest, id) >= 0;
  }

  /** The grant with this id, or undefined. */
  find(id: string): OwnershipGrant | undefined {
    const rest = this.rest;
    if (rest !== undefined) {
      const k = this.indexOf(rest, id);
      return k < 0 ? undefined : this.row(id, this.resources![k], rest[k * REST_STRIDE + ROLE] as string);
    }
    const resource = (this.byId as Map<string, number>).get(id);
    if (resource === undefined) return undefined;
    const pairs = (this.byResource as Map<number, string[]>).get(resource) as string[];
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === id) return this.row(id, resource, pairs[i + 1]);
    return undefined;
  }

  /** Adds a grant whose id is not in the set yet, on the resource numbered `resource`. */
  add(id: string, resource: number, roleId: string): void {
    this.count++;
    const resources = this.resources;
    const rest = this.rest;
    if (resources === undefined || rest === undefined) {
      this.file(id, resource, roleId);
      return;
    }
    resources.push(resource);
    if (packId(id, GRANT_PREFIX)) rest.push(PACKED[0], PACKED[1], PACKED[2], PACKED[3], roleId);
    else rest.push(id, 0, 0, 0, roleId);
    if (resources.length > GRANT_SCAN_LIMIT) {
      this.byResource = new Map();
      this.byId = new Map();
      this.resources = undefined;
      this.rest = undefined;
      for (let k = 0; k < resources.length; k++) this.file(idAt(rest, k * REST_STRIDE), resources[k], rest[k * REST_STRIDE + ROLE] as string);
    }
  }

  private file(id: string, resource: number, roleId: string): void {
    const m = this.byResource as Map<number, string[]>;
    const pairs = m.get(resource);
    if (pairs === undefined) m.set(resource, [id, roleId]);
    else pairs.push(id, roleId);
    (this.byId as Map<string, number>).set(id, resource);
  }

  /** Removes the grant with this id; returns the number of its resource, or -1 when absent. */
  delete(id: string): number {
    const resources = this.resources;
    const rest = this.rest;
    if (resources !== undefined && rest !== undefined) {
      const k = this.indexOf(rest, id);
      if (k < 0) return -1;
      const resource = resources[k];
      // Move the last entry into the hole.
      const last = resources.length - 1;
      resources[k] = resources[last];
      resources.length = last;
      for (let j = 0; j < REST_STRIDE; j++) rest[k * REST_STRIDE + j] = rest[last * REST_STRIDE + j];
      rest.length = last * REST_STRIDE;
      this.count--;
      return resource;
    }
    const byId = this.byId as Map<string, number>;
    const byResource = this.byResource as Map<number, string[]>;
    const resource = byId.get(id);
    if (resource === undefined) return -1;
    byId.delete(id);
    const pairs = byResource.get(resource) as string[];
    const i = pairs.indexOf(id);
    pairs.splice(i - (i % 2), 2);
    if (pairs.length === 0) byResource.delete(resource);
    this.count--;
    if (this.count <= GRANT_SCAN_LIMIT / 2) {
      this.resources = [];
      this.rest = [];
      this.byResource = undefined;
      this.byId = undefined;
      this.count = 0;
      for (const [r, ps] of byResource) for (let k = 0; k < ps.length; k += 2) this.add(ps[k], r, ps[k + 1]);
    }
    return resource;
  }

  forEachResource(visit: (resource: number) => void): void {
    const resources = this.resources;
    if (resources !== undefined) {
      for (let k = 0; k < resources.length; k++) visit(resources[k]);
      return;
    }
    for (const [r, ps] of this.byResource as Map<number, string[]>) for (let k = 0; k < ps.length; k += 2) visit(r);
  }

  /** Every grant, in no particular order. */
  rows(): OwnershipGrant[] {
    const out: OwnershipGrant[] = [];
    const resources = this.resources;
    if (resources !== undefined) {
      for (let k = 0; k < resources.length; k++) out.push(this.rowAt(resources, this.rest!, k));
      return out;
    }
    for (const [r, ps] of this.byResource as Map<number, string[]>) for (let k = 0; k < ps.length; k += 2) out.push(this.row(ps[k], r, ps[k + 1]));
    return out;
  }

  /**
   * Copies the arrays grown by `push` to their exact length (V8 grows an array by half again
   * plus 16 slots), once a build is complete.
   */
  trim(): void {
    if (this.resources !== undefined) {
      this.resources = this.resources.slice();
      this.rest = this.rest!.slice();
    } else for (const [r, ps] of this.byResource as Map<number, string[]>) if (ps.length > 2) (this.byResource as Map<number, string[]>).set(r, ps.slice());
  }

  /**
   * The set's storage as it is, for tests that check it agrees with itself
   * (services/engine/testdata/derived-state.ts); never written through.
   */
  layout(): {
    readonly resources: readonly number[] | undefined;
    readonly rest: readonly (string | number)[] | undefined;
    readonly byId: ReadonlyMap<string, number> | undefined;
    readonly count: number;
  } {
    return { resources: this.resources, rest: this.rest, byId: this.byId, count: this.count };
  }
}

/** The id of the grant whose slots in `rest` start at `i`: its string, or made from its four words. */
function idAt(rest: readonly (string | number)[], i: number): string {
  const k = rest[i];
  return typeof k === 'string' ? k : unpackId(GRANT_PREFIX, k, rest[i + 1] as number, rest[i + 2] as number, rest[i + 3] as number);
}
