import type { ServiceImpl } from '@connectrpc/connect';
import { TagService } from '../../../gen/authz/v1/tag_service_pb.js';
import type {
  CreateTagAssignmentRequest, CreateTagBindingRequest, CreateTagGroupRequest, CreateTagRequest,
} from '../../../gen/authz/v1/tag_service_pb.js';
import { constraint, invalid } from '../../common/errors.js';
import { rowToMessage, type KindName, type Row } from '../../store/kinds.js';
import { listRows } from '../../store/rows.js';
import { tagReads } from '../../store/tags.js';
import { TAG_TARGET_TYPES as TARGET_TYPES } from '../../common/vocabulary.js';
import { oneOf, optionalString, requireString } from '../../common/validate.js';
import { Uniques, createMany, distinct, enterScope, refIn, type Batch, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { preloadScopeChains, requireUsableRole, type ChainCache } from './hierarchy-rules.js';
import { getOne, listMany, reach, tenantOfRef } from './reads.js';
import { deleteOne, loadForWrite, writeOne } from './writes.js';

const TARGET_KIND: Record<(typeof TARGET_TYPES)[number], KindName> = { resource: 'resource', subject: 'subject', scope: 'scope' };

function maxApplied(n: number | undefined, field: string): number {
  const v = n ?? 0;
  if (!Number.isInteger(v) || v < 0) throw invalid(field, 'must be 0 (no limit) or more');
  return v;
}

/** The tag's group, which must not be locked. */
async function unlockedGroup(b: Batch, groupId: string, field: string, what: string): Promise<Row> {
  const group = await b.ref('tagGroup', groupId, field);
  if (group.isLocked) throw constraint(`tag group "${group.key as string}" (${groupId}) is locked: it takes no new ${what}`, field);
  return group;
}

export function tagGroups(): CreateSpec<CreateTagGroupRequest, 'tagGroup'> {
  const unique = new Uniques(); // (tenantId, key)
  return {
    kind: 'tagGroup',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      for (const g of await tagReads(b.tx).tagGroupsWithKeys(distinct(items.map((i) => i.key)))) unique.held([g.tenantId, g.key]);
    },
    async build(b, item, p) {
      const id = b.id('tagGroup', item.id, `${p}id`);
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const name = requireString(item.name, `${p}name`);
      const key = requireString(item.key, `${p}key`);
      const description = optionalString(item.description, `${p}description`) ?? '';
      const maxAppliedPerTarget = maxApplied(item.maxAppliedPerTarget, `${p}maxAppliedPerTarget`);
      const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
      unique.claim([tenantId, key], `${p}key`, `a tag group with key "${key}"`);
      return {
        ...b.base(id, tenantId), scopeId, name, key, description, origin: 'user', maxAppliedPerTarget, isLocked: item.isLocked,
      };
    },
  };
}

export function tags(): CreateSpec<CreateTagRequest, 'tag'> {
  const unique = new Uniques(); // (tagGroupId, identifier)
  return {
    kind: 'tag',
    tenantRef: (item) => ['tagGroup', item.tagGroupId, 'tagGroupId'],
    async preload(b, items) {
      const groups = distinct(items.map((i) => i.tagGroupId));
      const identifiers = distinct(items.map((i) => i.identifier));
      await b.preload('tagGroup', groups);
      await b.preload('scope', items.map((i) => i.scopeId));
      for (const t of await tagReads(b.tx).tagsWithIdentifiers(groups, identifiers)) unique.held([t.groupId, t.identifier]);
    },
    async build(b, item, p) {
      const id = b.id('tag', item.id, `${p}id`);
      const tagGroupId = requireString(item.tagGroupId, `${p}tagGroupId`);
      const identifier = requireString(item.identifier, `${p}identifier`);
      const label = optionalString(item.label, `${p}label`) ?? '';
      const explicitScope = optionalString(item.scopeId, `${p}scopeId`);
      const group = await unlockedGroup(b, tagGroupId, `${p}tagGroupId`, 'tags');
      const tenantId = group.tenantId as string;
      await b.tenant(tenantId, `${p}tagGroupId`);
      if (explicitScope) await refIn(b, 'scope', explicitScope, `${p}scopeId`, tenantId);
      unique.claim([tagGroupId, identifier], `${p}identifier`, `a tag "${identifier}" in tag group ${tagGroupId}`);
      return { ...b.base(id, tenantId), scopeId: explicitScope ?? (group.scopeId as string), tagGroupId, identifier, label };
    },
  };
}

/**
 * Assignments respect the group's lock and `maxAppliedPerTarget`; the count per (target, group)
 * starts from the store (one query for the whole batch) and grows with the batch's own items.
 */
export function tagAssignments(): CreateSpec<CreateTagAssignmentRequest, 'tagAssignment'> {
  const counts = new Map<string, number>(); // `${targetId}\0${groupId}` -> tags of the group on the target
  const unique = new Uniques(); // (tagId, targetId)
  return {
    kind: 'tagAssignment',
    tenantRef: (item) => ['tag', item.tagId, 'tagId'],
    async preload(b, items) {
      const tagIds = distinct(items.map((i) => i.tagId));
      const tags = tagReads(b.tx);
      await b.preload('tag', tagIds);
      await b.preload('tagGroup', await tags.groupsOfTags(tagIds));
      for (const t of TARGET_TYPES) {
        await b.preload(TARGET_KIND[t], items.filter((i) => i.targetType === t).map((i) => i.targetId));
      }
      for (const a of await tags.assignmentsOn(distinct(items.map((i) => i.targetId)))) {
        unique.held([a.tagId, a.targetId]);
        const k = `${a.targetId}\0${a.groupId}`;
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
    },
    async build(b, item, p) {
      const id = b.id('tagAssignment', item.id, `${p}id`);
      const tagId = requireString(item.tagId, `${p}tagId`);
      const targetType = oneOf(item.targetType, TARGET_TYPES, `${p}targetType`);
      const targetId = requireString(item.targetId, `${p}targetId`);
      const tag = await b.ref('tag', tagId, `${p}tagId`);
      const tenantId = tag.tenantId as string;
      await b.tenant(tenantId, `${p}tagId`);
      const group = await unlockedGroup(b, tag.tagGroupId as string, `${p}tagId`, 'assignments');
      await refIn(b, TARGET_KIND[targetType], targetId, `${p}targetId`, tenantId);
      unique.claim([tagId, targetId], `${p}targetId`, `an assignment of tag ${tagId} to ${targetType} ${targetId}`);
      const k = `${targetId}\0${group.id as string}`;
      const count = counts.get(k) ?? 0;
      const max = group.maxAppliedPerTarget as number;
      if (max > 0 && count + 1 > max) {
        throw constraint(
          `${targetType} ${targetId} already carries ${count} tag(s) of group "${group.key as string}", which allows at most ${max} per target`,
          `${p}tagId`,
        );
      }
      counts.set(k, count + 1);
      return { ...b.base(id, tenantId), tagId, targetType, targetId };
    },
  };
}

/**
 * A tag binding acts as a membership at its scope for every subject carrying the tag, so its
 * role must be usable there, as for a role assignment: defined at that scope or an ancestor.
 */
export function tagBindings(): CreateSpec<CreateTagBindingRequest, 'tagBinding'> {
  const chains: ChainCache = new Map();
  return {
    kind: 'tagBinding',
    tenantRef: (item) => ['scope', item.scopeId, 'scopeId'],
    async preload(b, items) {
      await b.preload('scope', items.map((i) => i.scopeId));
      await b.preload('tag', items.map((i) => i.tagId));
      await b.preload('role', items.map((i) => i.roleId));
      await preloadScopeChains(b, chains, items.map((i) => i.scopeId));
    },
    async build(b, item, p) {
      const id = b.id('tagBinding', item.id, `${p}id`);
      const tagId = requireString(item.tagId, `${p}tagId`);
      const roleId = requireString(item.roleId, `${p}roleId`);
      const scopeId = requireString(item.scopeId, `${p}scopeId`);
      const tenantId = (await enterScope(b, scopeId, `${p}scopeId`)).tenantId as string;
      await refIn(b, 'tag', tagId, `${p}tagId`, tenantId);
      const role = await refIn(b, 'role', roleId, `${p}roleId`, tenantId);
      await requireUsableRole(b, role, scopeId, `the binding's scope ${scopeId}`, chains, `${p}roleId`);
      return { ...b.base(id, tenantId), tagId, roleId, scopeId };
    },
  };
}

export function tagService(deps: Deps): ServiceImpl<typeof TagService> {
  const remove = (kind: KindName) => (req: { id: string }, ctx: Parameters<typeof deleteOne>[1]) => deleteOne(deps, ctx, kind, req.id);
  return {
    async createTagGroup(req, ctx) {
      return { tagGroup: (await createMany(deps, ctx, tagGroups(), [req], false))[0] };
    },
    async batchCreateTagGroups(req, ctx) {
      return { tagGroups: await createMany(deps, ctx, tagGroups(), req.items, true) };
    },
    async getTagGroup(req, ctx) {
      return { tagGroup: await getOne(deps, ctx, 'tagGroup', requireString(req.id, 'id')) };
    },
    async listTagGroups(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'tagGroup', { scopeId }, req);
      return { tagGroups: items, nextCursor };
    },
    async updateTagGroup(req, ctx) {
      const id = requireString(req.id, 'id');
      const patch: Row = {};
      if (req.name !== undefined) patch.name = requireString(req.name, 'name');
      if (req.description !== undefined) patch.description = optionalString(req.description, 'description') ?? '';
      if (req.maxAppliedPerTarget !== undefined) patch.maxAppliedPerTarget = maxApplied(req.maxAppliedPerTarget, 'maxAppliedPerTarget');
      if (req.isLocked !== undefined) patch.isLocked = req.isLocked;
      const row = await writeOne(deps, ctx, async (tx, principal) => {
        const cur = await loadForWrite(tx, principal, 'tagGroup', id);
        if (Object.keys(patch).length > 0) await tx.update('tagGroup', cur, patch);
        return { ...cur, ...patch };
      });
      return { tagGroup: rowToMessage('tagGroup', row) };
    },
    async createTag(req, ctx) {
      return { tag: (await createMany(deps, ctx, tags(), [req], false))[0] };
    },
    async batchCreateTags(req, ctx) {
      return { tags: await createMany(deps, ctx, tags(), req.items, true) };
    },
    async getTag(req, ctx) {
      return { tag: await getOne(deps, ctx, 'tag', requireString(req.id, 'id')) };
    },
    async listTags(req, ctx) {
      const tagGroupId = requireString(req.tagGroupId, 'tagGroupId');
      await tenantOfRef(deps, ctx, 'tagGroup', tagGroupId, 'tagGroupId');
      const { items, nextCursor } = await listMany(deps, 'tag', { tagGroupId }, req);
      return { tags: items, nextCursor };
    },
    async createTagAssignment(req, ctx) {
      return { tagAssignment: (await createMany(deps, ctx, tagAssignments(), [req], false))[0] };
    },
    async batchCreateTagAssignments(req, ctx) {
      return { tagAssignments: await createMany(deps, ctx, tagAssignments(), req.items, true) };
    },
    async listTagAssignments(req, ctx) {
      // The target may be a resource, a subject or a scope: reach is checked on the rows found.
      const targetId = requireString(req.targetId, 'targetId');
      const { rows, nextCursor } = await listRows(deps.db, 'tagAssignment', { targetId }, req);
      for (const r of rows) reach(ctx, r);
      return { tagAssignments: rows.map((r) => rowToMessage('tagAssignment', r)), nextCursor };
    },
    deleteTagAssignment: remove('tagAssignment'),
    async createTagBinding(req, ctx) {
      return { tagBinding: (await createMany(deps, ctx, tagBindings(), [req], false))[0] };
    },
    async batchCreateTagBindings(req, ctx) {
      return { tagBindings: await createMany(deps, ctx, tagBindings(), req.items, true) };
    },
    async listTagBindings(req, ctx) {
      const scopeId = requireString(req.scopeId, 'scopeId');
      await tenantOfRef(deps, ctx, 'scope', scopeId, 'scopeId');
      const { items, nextCursor } = await listMany(deps, 'tagBinding', { scopeId }, req);
      return { tagBindings: items, nextCursor };
    },
    deleteTagBinding: remove('tagBinding'),
  };
}
