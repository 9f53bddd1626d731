/**
 * Resources, their parent edges and their scope links. A resource has no row object: its
 * fields live in its node (see resource-nodes.ts) and its row is rebuilt when asked for.
 */
import type { Resource, ResourceEdge, ResourceScopeLink } from '../model.js';
import { bagRows, rbAdd, rbDelete, rbWith, rbWithout, type MutableRowBag } from './bags.js';
import { EMPTY_ATTRIBUTES, ResourceNodes, isEmptyObject, type MutableParentLink } from './resource-nodes.js';
import { RowTable } from './row-table.js';
import type { ScopeFamily } from './scopes.js';
import type { SubjectFamily } from './subjects.js';
import type { KindStore } from './types.js';

export class ResourceFamily {
  /** Creator id → the subject's own id string (see `creatorStr`). */
  private readonly creators = new Map<string, string>();
  /**
   * Parent resource id → the links of its children (the child's own link objects, by edge id):
   * a listing finds the descendants of a resource without a scan. One map entry per resource
   * that has children, one more map per parent with several.
   */
  readonly childrenByParent = new Map<string, MutableRowBag<MutableParentLink>>();

  constructor(
    private readonly nodes: ResourceNodes,
    private readonly scopes: ScopeFamily,
    private readonly subjects: SubjectFamily,
  ) {}

  readonly resources: KindStore<'resource'> = {
    required: ['id', 'resourceTypeId', 'ownerScopeId', 'externalResourceId'],
    invalid: () => null,
    get: (id) => this.nodes.resource(id),
    upsert: (row) => {
      const old = this.nodes.resource(row.id);
      if (old) this.unindexResource(old);
      this.indexResource(row);
    },
    remove: (id) => {
      const old = this.nodes.resource(id);
      if (old) this.unindexResource(old);
    },
    count: () => this.nodes.existing,
  };

  /** Edge id → its link, the only thing the index keeps of an edge (see `edgeRow`). */
  readonly edgeLinks = new Map<string, MutableParentLink>();
  /** `relationshipType` values as first seen: a tenant uses a few, on every edge. */
  private readonly relationshipTypes = new Map<string, string>();

  readonly edges: KindStore<'resource_edge'> = {
    required: ['id', 'parentResourceId', 'childResourceId', 'cascade'],
    invalid: (r) => (r.cascade !== 'inherit' && r.cascade !== 'none' ? 'resource_edge.cascade is invalid' : null),
    get: (id) => {
      const link = this.edgeLinks.get(id);
      return link === undefined ? undefined : this.edgeRow(link);
    },
    upsert: (e) => {
      const old = this.edgeLinks.get(e.id);
      if (old !== undefined) this.unindexEdge(old);
      this.indexEdge(e);
    },
    remove: (id) => {
      const old = this.edgeLinks.get(id);
      if (old !== undefined) this.unindexEdge(old);
    },
    count: () => this.edgeLinks.size,
  };

  /** An edge row, made from its link (a new object on every call; `relationshipType` only when the row had it). */
  edgeRow(link: MutableParentLink): ResourceEdge {
    const out: Record<string, unknown> = {
      id: link.id,
      parentResourceId: this.nodes.idOf(link.parent),
      childResourceId: this.nodes.idOf(link.child),
      cascade: link.inherit ? 'inherit' : 'none',
    };
    if (link.relationshipType !== undefined) out.relationshipType = link.relationshipType;
    return out as unknown as ResourceEdge;
  }

  private indexEdge(e: ResourceEdge): void {
    const nodes = this.nodes;
    const n = nodes.nodeFor(e.childResourceId);
    const parent = nodes.nodeFor(e.parentResourceId);
    nodes.addRefs(parent, 1);
    const link: MutableParentLink = { id: e.id, inherit: e.cascade === 'inherit', relationshipType: this.relationshipType(e), parent, child: n };
    nodes.setRelation(n, 'parents', rbWith(nodes.parents(n), link));
    rbAdd(this.childrenByParent, e.parentResourceId, link);
    nodes.refreshUp(n, e.childResourceId);
    this.edgeLinks.set(e.id, link);
  }

  private unindexEdge(link: MutableParentLink): void {
    const nodes = this.nodes;
    const parentId = nodes.idOf(link.parent);
    const childId = nodes.idOf(link.child);
    rbDelete(this.childrenByParent, parentId, link.id);
    nodes.setRelation(link.child, 'parents', rbWithout(nodes.parents(link.child), link.id));
    nodes.refreshUp(link.child, childId);
    nodes.addRefs(link.parent, -1);
    this.edgeLinks.delete(link.id);
    nodes.prune(parentId);
    nodes.prune(childId);
  }

  /** A row's `relationshipType` as given, a string shared with the edges that carry the same one. */
  private relationshipType(e: ResourceEdge): unknown {
    const v = (e as { relationshipType?: unknown }).relationshipType;
    if (typeof v !== 'string') return v;
    let s = this.relationshipTypes.get(v);
    if (s === undefined) {
      if (this.relationshipTypes.size >= 256) this.relationshipTypes.clear();
      this.relationshipTypes.set(v, (s = v));
    }
    return s;
  }

  readonly links = new RowTable<'resource_scope_link'>({
    required: ['id', 'resourceId', 'scopeId'],
    slim: (l) => ({ id: l.id, resourceId: this.nodes.str(l.resourceId), scopeId: this.scopes.str(l.scopeId), linkType: l.linkType }),
    index: (l) => {
      const nodes = this.nodes;
      const n = nodes.nodeFor(l.resourceId);
      nodes.setRelation(n, 'links', rbWith(nodes.links(n), l));
      nodes.refreshCopies(n, l.resourceId);
    },
    unindex: (l: ResourceScopeLink) => {
      const nodes = this.nodes;
      const n = nodes.table.get(l.resourceId);
      if (n !== undefined) {
        nodes.setRelation(n, 'links', rbWithout(nodes.links(n), l.id));
        nodes.refreshCopies(n, l.resourceId);
      }
      nodes.prune(l.resourceId);
    },
  });

  /** Files a resource row's fields in its node. */
  private indexResource(r: Resource): void {
    const nodes = this.nodes;
    const n = nodes.nodeFor(r.id);
    nodes.setExists(n, true);
    nodes.existing++;
    const type = nodes.typeSlot(r.resourceTypeId);
    nodes.setType(n, type);
    type.resources++;
    nodes.setExt(n, r.externalResourceId);
    nodes.setOwner(n, this.scopes.str(r.ownerScopeId));
    nodes.setDisplayName(n, r.displayName);
    nodes.setRowFields(n, nodes.rowFields(isEmptyObject(r.attributes) ? EMPTY_ATTRIBUTES : r.attributes, typeof r.createdBy === 'string' ? this.creatorStr(r.createdBy) : r.createdBy));
    nodes.setCreatedAt(n, (r as { createdAt?: unknown }).createdAt);
    nodes.addPatterns(n, nodes.patternCounts.get(r.externalResourceId) ?? 0);
    nodes.refreshCopies(n, r.id);
    nodes.addExternal(n);
  }

  /** Clears a resource row's fields from its node (`r`: the row rebuilt from it). */
  private unindexResource(r: Resource): void {
    const nodes = this.nodes;
    const n = nodes.table.get(r.id);
    if (n !== undefined) {
      // While the node still carries its external id (the table confirms keys through it).
      nodes.removeExternal(n);
      nodes.setExists(n, false);
      nodes.existing--;
      const type = nodes.type(n);
      if (type !== undefined) type.resources--;
      nodes.setType(n, undefined);
      nodes.setExt(n, undefined);
      nodes.setOwner(n, undefined);
      nodes.setDisplayName(n, undefined);
      nodes.setRowFields(n, ResourceNodes.NO_ROW_FIELDS);
      nodes.setCreatedAt(n, undefined);
      nodes.addPatterns(n, -(nodes.patternCounts.get(r.externalResourceId) ?? 0));
      nodes.refreshCopies(n, r.id);
    }
    nodes.prune(r.id);
  }

  /**
   * One string per creator: a tenant's resources are created by few subjects. A small map
   * (cleared when full, so it stays small and in cache) in front of the subjects map.
   */
  private creatorStr(id: string): string {
    let s = this.creators.get(id);
    if (s === undefined) {
      if (this.creators.size >= 4096) this.creators.clear();
      this.creators.set(id, (s = this.subjects.str(id)));
    }
    return s;
  }
}
