/**
 * Policies and collections. A policy on a resource hangs off the resource's node; a policy on a
 * collection is filed under the collection, and collections by resource type and scope, then by
 * the keys their match definitions require (collection-files.ts).
 */
import type { Collection, Policy, Resource } from '../model.js';
import type { ResourceTags } from '../match.js';
import { rbAdd, rbDelete, rbWith, rbWithout, type MutableRowBag, type RowBag } from './bags.js';
import { CollectionFile } from './collection-files.js';
import type { ResourceNodes } from './resource-nodes.js';
import { RowTable } from './row-table.js';

export class PolicyFamily {
  readonly collectionsByTypeScope = new Map<string, Map<string, CollectionFile>>();
  readonly policiesByCollection = new Map<string, MutableRowBag<Policy>>();
  /** Action (as a policy names it, `*` included) → the allow policies targeting a resource directly. */
  readonly directAllowsByAction = new Map<string, MutableRowBag<Policy>>();
  /** The same for deny policies: with the allows, the policies on resources of an action, found without a scan. */
  readonly directDeniesByAction = new Map<string, MutableRowBag<Policy>>();

  constructor(private readonly resources: ResourceNodes) {}

  readonly collections = new RowTable<'collection'>({
    required: ['id', 'scopeId', 'resourceTypeId'],
    index: (c) => {
      let byScope = this.collectionsByTypeScope.get(c.resourceTypeId);
      if (byScope === undefined) this.collectionsByTypeScope.set(c.resourceTypeId, (byScope = new Map()));
      let file = byScope.get(c.scopeId);
      if (file === undefined) byScope.set(c.scopeId, (file = new CollectionFile()));
      file.add(c);
      this.resources.typeSlot(c.resourceTypeId).collections++;
    },
    unindex: (c) => {
      const byScope = this.collectionsByTypeScope.get(c.resourceTypeId);
      const file = byScope?.get(c.scopeId);
      if (byScope !== undefined && file !== undefined) {
        file.remove(c);
        if (file.size === 0) byScope.delete(c.scopeId);
        if (byScope.size === 0) this.collectionsByTypeScope.delete(c.resourceTypeId);
      }
      this.resources.typeSlot(c.resourceTypeId).collections--;
    },
  });

  readonly policies = new RowTable<'policy'>({
    required: ['id', 'effect'],
    invalid: (r) => {
      const t = r.target as Record<string, unknown> | null | undefined;
      const targetOk =
        !!t &&
        typeof t === 'object' &&
        ((t.kind === 'resource' && typeof t.resourceId === 'string') || (t.kind === 'collection' && typeof t.collectionId === 'string'));
      if (!targetOk) return 'policy.target is invalid';
      if (!Array.isArray(r.actions) || !r.actions.every((a) => typeof a === 'string')) return 'policy.actions must be an array of strings';
      if (r.effect !== 'allow' && r.effect !== 'deny') return 'policy.effect is invalid';
      return null;
    },
    index: (p) => {
      if (p.target.kind === 'resource') {
        const nodes = this.resources;
        const n = nodes.nodeFor(p.target.resourceId);
        nodes.setRelation(n, 'policies', rbWith(nodes.policies(n), p));
        nodes.refreshCopies(n, p.target.resourceId);
        const byAction = p.effect === 'allow' ? this.directAllowsByAction : this.directDeniesByAction;
        for (const a of new Set(p.actions)) rbAdd(byAction, a, p);
      } else rbAdd(this.policiesByCollection, p.target.collectionId, p);
    },
    unindex: (p) => {
      if (p.target.kind === 'resource') {
        const byAction = p.effect === 'allow' ? this.directAllowsByAction : this.directDeniesByAction;
        for (const a of new Set(p.actions)) rbDelete(byAction, a, p.id);
        const nodes = this.resources;
        const n = nodes.table.get(p.target.resourceId);
        if (n !== undefined) {
          nodes.setRelation(n, 'policies', rbWithout(nodes.policies(n), p.id));
          nodes.refreshCopies(n, p.target.resourceId);
        }
        this.resources.prune(p.target.resourceId);
      } else rbDelete(this.policiesByCollection, p.target.collectionId, p.id);
    },
  });

  /** Collections of a resource type defined at exactly this scope. */
  collectionsAt(resourceTypeId: string, scopeId: string): RowBag<Collection> | undefined {
    return this.collectionsByTypeScope.get(resourceTypeId)?.get(scopeId)?.all;
  }

  /**
   * Pushes onto `out`, in id order, the collections of a resource type defined at exactly this
   * scope that may match `resource` (see CollectionFile.candidates); returns how many others
   * are defined there.
   */
  collectionsToTry(resourceTypeId: string, scopeId: string, resource: Resource, tags: () => ResourceTags, out: Collection[]): number {
    return this.collectionsByTypeScope.get(resourceTypeId)?.get(scopeId)?.candidates(resource, tags, out) ?? 0;
  }

  /** True when some collection exists for this resource type (lets a check skip the scope walk). */
  hasCollectionsOfType(resourceTypeId: string): boolean {
    return this.collectionsByTypeScope.has(resourceTypeId);
  }

  /** Allow policies targeting a resource directly that name this action (`*`: those naming `*`). */
  directAllows(action: string): RowBag<Policy> | undefined {
    return this.directAllowsByAction.get(action);
  }

  /** Deny policies targeting a resource directly that name this action (`*`: those naming `*`). */
  directDenies(action: string): RowBag<Policy> | undefined {
    return this.directDeniesByAction.get(action);
  }

  /** Ids of the resource types some collection is defined for. */
  collectionTypeIds(): Iterable<string> {
    return this.collectionsByTypeScope.keys();
  }

  /** Policies targeting a collection. */
  collectionPolicies(collectionId: string): RowBag<Policy> | undefined {
    return this.policiesByCollection.get(collectionId);
  }
}
