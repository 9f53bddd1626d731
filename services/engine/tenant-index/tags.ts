/**
 * Tag groups, tags, tag assignments and tag bindings. An assignment to a subject or a resource
 * hangs off its node; one to a scope is filed under the scope; bindings by tag and scope.
 */
import type { Tag, TagAssignment, TagBinding } from '../model.js';
import { bagRows, rbAdd, rbAdd2, rbDelete, rbDelete2, rbWith, rbWithout, type MutableRowBag, type RowBag } from './bags.js';
import type { ResourceNodes } from './resource-nodes.js';
import { RowTable } from './row-table.js';
import type { ScopeFamily } from './scopes.js';
import type { SubjectFamily } from './subjects.js';

export class TagFamily {
  readonly scopeTags = new Map<string, MutableRowBag<TagAssignment>>();
  readonly bindingsByTagScope = new Map<string, Map<string, MutableRowBag<TagBinding>>>();
  /** Tag group id → its tags, and tag id → its assignments to resources: the resources carrying a tag without a scan of them. */
  readonly tagsByGroup = new Map<string, MutableRowBag<Tag>>();
  readonly resourceAssignmentsByTag = new Map<string, MutableRowBag<TagAssignment>>();

  constructor(
    private readonly scopes: ScopeFamily,
    private readonly subjects: SubjectFamily,
    private readonly resources: ResourceNodes,
  ) {}

  /** Read directly from their rows at evaluation time. */
  readonly groups = new RowTable<'tag_group'>({ required: ['id', 'key'] });
  readonly tags = new RowTable<'tag'>({
    required: ['id', 'tagGroupId', 'identifier'],
    index: (t) => rbAdd(this.tagsByGroup, t.tagGroupId, t),
    unindex: (t) => rbDelete(this.tagsByGroup, t.tagGroupId, t.id),
  });

  readonly assignments = new RowTable<'tag_assignment'>({
    required: ['id', 'tagId', 'targetType', 'targetId'],
    invalid: (r) => (['resource', 'subject', 'scope'].includes(r.targetType as string) ? null : 'tag_assignment.targetType is invalid'),
    slim: (a) => {
      const target =
        a.targetType === 'resource' ? this.resources.str(a.targetId) : a.targetType === 'subject' ? this.subjects.str(a.targetId) : this.scopes.str(a.targetId);
      return { id: a.id, tagId: this.tags.rows.get(a.tagId)?.id ?? a.tagId, targetType: a.targetType, targetId: target };
    },
    index: (a) => {
      if (a.targetType === 'subject') {
        const n = this.subjects.nodeFor(a.targetId);
        n.tags = rbWith(n.tags, a);
      } else if (a.targetType === 'resource') {
        const n = this.resources.nodeFor(a.targetId);
        this.resources.setRelation(n, 'tags', rbWith(this.resources.tags(n), a));
        rbAdd(this.resourceAssignmentsByTag, a.tagId, a);
      } else rbAdd(this.scopeTags, a.targetId, a);
    },
    unindex: (a) => {
      if (a.targetType === 'subject') {
        const n = this.subjects.nodes.get(a.targetId);
        if (n) n.tags = rbWithout(n.tags, a.id);
        this.subjects.prune(a.targetId);
      } else if (a.targetType === 'resource') {
        rbDelete(this.resourceAssignmentsByTag, a.tagId, a.id);
        const n = this.resources.table.get(a.targetId);
        if (n !== undefined) this.resources.setRelation(n, 'tags', rbWithout(this.resources.tags(n), a.id));
        this.resources.prune(a.targetId);
      } else rbDelete(this.scopeTags, a.targetId, a.id);
    },
  });

  readonly bindings = new RowTable<'tag_binding'>({
    required: ['id', 'tagId', 'roleId', 'scopeId'],
    index: (b) => rbAdd2(this.bindingsByTagScope, b.tagId, b.scopeId, b),
    unindex: (b) => rbDelete2(this.bindingsByTagScope, b.tagId, b.scopeId, b.id),
  });

  /** Tag bindings of a tag at exactly this scope. */
  bindingsAt(tagId: string, scopeId: string): RowBag<TagBinding> | undefined {
    return this.bindingsByTagScope.get(tagId)?.get(scopeId);
  }

  /** Ids of the existing tags a node's tag assignments name, without duplicates. */
  existingTagIds(tags: RowBag<TagAssignment> | undefined): string[] {
    const out: string[] = [];
    for (const a of bagRows(tags)) if (this.tags.rows.has(a.tagId) && !out.includes(a.tagId)) out.push(a.tagId);
    return out;
  }

  /** A resource's tag assignments (undefined when it has none or no node). */
  private resourceTagBag(resourceId: string): RowBag<TagAssignment> | undefined {
    const n = this.resources.table.get(resourceId);
    return n === undefined ? undefined : this.resources.tags(n);
  }

  /** Tags of a resource as tag group key → identifiers (tags whose group exists). */
  resourceTags(resourceId: string): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const tagId of this.existingTagIds(this.resourceTagBag(resourceId))) {
      const tag = this.tags.rows.get(tagId) as Tag;
      const group = this.groups.rows.get(tag.tagGroupId);
      if (!group) continue;
      let s = out.get(group.key);
      if (!s) out.set(group.key, (s = new Set()));
      s.add(tag.identifier);
    }
    return out;
  }

  /**
   * Ids of the resources (any type, rows present or not) carrying an existing tag of an
   * existing group with key `groupKey` whose identifier is one of `wanted`: what
   * {@link resourceTags} gives, from the tag side. Cost: the tag groups, then the tags of the
   * groups with that key and the assignments of the tags wanted.
   */
  resourceIdsTagged(groupKey: string, wanted: readonly string[]): string[] {
    const out: string[] = [];
    for (const g of this.groups.rows.values()) {
      if (g.key !== groupKey) continue;
      for (const t of bagRows(this.tagsByGroup.get(g.id))) {
        if (!wanted.includes(t.identifier)) continue;
        for (const a of bagRows(this.resourceAssignmentsByTag.get(t.id))) out.push(a.targetId);
      }
    }
    return out;
  }
}
