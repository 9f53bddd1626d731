/** Tags beyond single rows: the reads that the uniqueness and per-target limits of tags need. */
import { query } from './read.js';
import { entityManagerOf, type StoreSource } from './source.js';

export interface TagReads {
  /** The (tenant, key) pairs of the tag groups with any of the keys. */
  tagGroupsWithKeys(keys: string[]): Promise<{ tenantId: string; key: string }[]>;
  /** The (group, identifier) pairs of the tags of the groups with any of the identifiers. */
  tagsWithIdentifiers(groupIds: string[], identifiers: string[]): Promise<{ groupId: string; identifier: string }[]>;
  /** The distinct groups of the tags. */
  groupsOfTags(tagIds: string[]): Promise<string[]>;
  /** Every tag assignment on the targets, with the group of its tag. */
  assignmentsOn(targetIds: string[]): Promise<{ targetId: string; tagId: string; groupId: string }[]>;
}

export function tagReads(source: StoreSource): TagReads {
  const em = entityManagerOf(source);
  return {
    async tagGroupsWithKeys(keys) {
      if (keys.length === 0) return [];
      return query(em, 'select tenant_id as "tenantId", key from tag_groups where key in (?)', [keys]);
    },
    async tagsWithIdentifiers(groupIds, identifiers) {
      if (groupIds.length === 0 || identifiers.length === 0) return [];
      return query(em, 'select tag_group_id as "groupId", identifier from tags where tag_group_id in (?) and identifier in (?)', [groupIds, identifiers]);
    },
    async groupsOfTags(tagIds) {
      if (tagIds.length === 0) return [];
      return (await query<{ g: string }>(em, 'select distinct tag_group_id as g from tags where id in (?)', [tagIds])).map((r) => r.g);
    },
    async assignmentsOn(targetIds) {
      if (targetIds.length === 0) return [];
      return query(em, `
        select a.target_id as "targetId", a.tag_id as "tagId", t.tag_group_id as "groupId"
        from tag_assignments a join tags t on t.id = a.tag_id where a.target_id in (?)`, [targetIds]);
    },
  };
}
