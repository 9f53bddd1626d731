/**
 * Bulk imports (ImportService): where each import of a tenant stands, and the reads that resolve
 * a batch's references by external id and check its rules, each one query for the whole batch
 * (index probes per key, whatever the tables' sizes).
 */
import { query } from './read.js';
import { MAX_DEPTH } from './scopes.js';
import { entityManagerOf, type StoreSource } from './source.js';
import type { WriteTx } from './write.js';
import type { ImportCounts as ImportCountsMessage } from '../../gen/authz/v1/import_service_pb.js';

/** What an import has written, by kind: the fields of the ImportCounts message. */
export type ImportCounts = Omit<ImportCountsMessage, '$typeName' | '$unknown'>;

export const NO_COUNTS: Readonly<ImportCounts> = {
  resources: 0, subjects: 0, resourceEdges: 0, scopeLinks: 0, ownershipGrants: 0, memberships: 0, roleAssignments: 0,
};

/** Where an import stands after its last committed batch. */
export interface ImportProgress {
  importId: string;
  lastSequence: number;
  nextLine: number;
  revision: number;
  counts: ImportCounts;
}

interface ProgressRow {
  import_id: string;
  last_sequence: string;
  next_line: string;
  revision: string;
  counts: ImportCounts;
}

const progressOf = (r: ProgressRow): ImportProgress => ({
  importId: r.import_id,
  lastSequence: Number(r.last_sequence),
  nextLine: Number(r.next_line),
  revision: Number(r.revision),
  counts: { ...NO_COUNTS, ...r.counts },
});

/** The import's progress, or undefined when it has committed no batch. */
export async function importProgress(source: StoreSource, tenantId: string, importId: string): Promise<ImportProgress | undefined> {
  const [row] = await query<ProgressRow>(entityManagerOf(source),
    'select import_id, last_sequence, next_line, revision, counts from imports where tenant_id = ? and import_id = ?', [tenantId, importId]);
  return row === undefined ? undefined : progressOf(row);
}

/**
 * Records a committed batch in the transaction that wrote it (which has entered the tenant):
 * the import's row moves to `progress`, created with the first batch.
 */
export async function recordImportBatch(tx: WriteTx, tenantId: string, progress: ImportProgress, by: string): Promise<void> {
  const now = new Date();
  await query(tx.em, `
    insert into imports (tenant_id, import_id, last_sequence, next_line, revision, counts, created_at, created_by, updated_at)
    values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)
    on conflict (tenant_id, import_id) do update set last_sequence = excluded.last_sequence, next_line = excluded.next_line,
      revision = excluded.revision, counts = excluded.counts, updated_at = excluded.updated_at`,
  [tenantId, progress.importId, progress.lastSequence, progress.nextLine, progress.revision, JSON.stringify(progress.counts), now, by, now]);
}

/** A stored row an import refers to, with what its rules need. */
export interface KeyedResource {
  id: string;
  typeId: string;
  externalId: string;
  ownerScopeId: string;
}

export interface ImportReads {
  /** Every resource type of the tenant. */
  resourceTypes(tenantId: string): Promise<{ id: string; key: string; scopeId: string }[]>;
  /** Every (parent type, child type) pair the tenant's type hierarchy allows. */
  resourceTypeEdges(tenantId: string): Promise<{ parentTypeId: string; childTypeId: string }[]>;
  /** The tenant's roles with any of the keys. */
  rolesWithKeys(tenantId: string, keys: string[]): Promise<{ id: string; key: string; scopeId: string }[]>;
  /** The tenant's resources with any of the (type id, external id) keys. */
  resourcesByKey(tenantId: string, keys: { typeId: string; externalId: string }[]): Promise<KeyedResource[]>;
  /** The tenant's subjects with any of the external ids (several may share one). */
  subjectsByExternalId(tenantId: string, externalIds: string[]): Promise<{ id: string; type: string; externalId: string }[]>;
  /** The stored edges on the way up from the resources, at most MAX_DEPTH levels. */
  edgesAbove(resourceIds: string[]): Promise<{ parent: string; child: string }[]>;
  /** The stored edges below the resources, at most MAX_DEPTH levels down. */
  edgesBelow(resourceIds: string[]): Promise<{ parent: string; child: string }[]>;
  /** The scopes the subjects are members of. */
  membershipsOf(subjectIds: string[]): Promise<{ subjectId: string; scopeId: string }[]>;
  /** The ownership grants between the (subject, resource) pairs. */
  grantsBetween(pairs: { subjectId: string; resourceId: string }[]): Promise<{ subjectId: string; resourceId: string; roleId: string }[]>;
  /** The scope links of the resources. */
  scopeLinksOf(resourceIds: string[]): Promise<{ resourceId: string; scopeId: string; linkType: string }[]>;
}

export function importReads(source: StoreSource): ImportReads {
  const em = entityManagerOf(source);
  const json = (x: unknown) => JSON.stringify(x);
  return {
    resourceTypes: (tenantId) => query(em, 'select id, key, scope_id as "scopeId" from resource_types where tenant_id = ?', [tenantId]),
    resourceTypeEdges: (tenantId) =>
      query(em, 'select parent_type_id as "parentTypeId", child_type_id as "childTypeId" from resource_type_edges where tenant_id = ?', [tenantId]),
    async rolesWithKeys(tenantId, keys) {
      if (keys.length === 0) return [];
      return query(em, 'select id, key, scope_id as "scopeId" from roles where tenant_id = ? and key in (select value from json_array_elements_text(?::json))', [tenantId, json(keys)]);
    },
    async resourcesByKey(tenantId, keys) {
      if (keys.length === 0) return [];
      return query(em, `
        select r.id, r.resource_type_id as "typeId", r.external_resource_id as "externalId", r.owner_scope_id as "ownerScopeId"
        from json_to_recordset(?::json) as k(t text, x text)
        cross join lateral (
          select id, resource_type_id, external_resource_id, owner_scope_id from resources
          where tenant_id = ? and resource_type_id = k.t and external_resource_id = k.x
        ) r`, [json(keys.map((k) => ({ t: k.typeId, x: k.externalId }))), tenantId]);
    },
    async subjectsByExternalId(tenantId, externalIds) {
      if (externalIds.length === 0) return [];
      return query(em, `
        select s.id, s.type, s.external_id as "externalId" from json_array_elements_text(?::json) as k(x)
        cross join lateral (select id, type, external_id from subjects where tenant_id = ? and external_id = k.x) s`, [json(externalIds), tenantId]);
    },
    async edgesAbove(ids) {
      if (ids.length === 0) return [];
      return query(em, `
        with recursive up(parent, child, depth) as (
          select e.parent_resource_id, e.child_resource_id, 1 from json_array_elements_text(?::json) as k(id)
            join resource_edges e on e.child_resource_id = k.id
          union all
          select e.parent_resource_id, e.child_resource_id, u.depth + 1 from resource_edges e join up u on e.child_resource_id = u.parent where u.depth <= ?
        ) select distinct parent, child from up`, [json(ids), MAX_DEPTH]);
    },
    async edgesBelow(ids) {
      if (ids.length === 0) return [];
      return query(em, `
        with recursive down(parent, child, depth) as (
          select e.parent_resource_id, e.child_resource_id, 1 from json_array_elements_text(?::json) as k(id)
            join resource_edges e on e.parent_resource_id = k.id
          union all
          select e.parent_resource_id, e.child_resource_id, d.depth + 1 from resource_edges e join down d on e.parent_resource_id = d.child where d.depth <= ?
        ) select distinct parent, child from down`, [json(ids), MAX_DEPTH]);
    },
    async membershipsOf(subjectIds) {
      if (subjectIds.length === 0) return [];
      return query(em, `
        select m.subject_id as "subjectId", m.scope_id as "scopeId" from json_array_elements_text(?::json) as k(id)
        join memberships m on m.subject_id = k.id`, [json(subjectIds)]);
    },
    async grantsBetween(pairs) {
      if (pairs.length === 0) return [];
      return query(em, `
        select g.subject_id as "subjectId", g.resource_id as "resourceId", g.role_id as "roleId"
        from json_to_recordset(?::json) as k(s text, r text)
        cross join lateral (select subject_id, resource_id, role_id from ownership_grants where subject_id = k.s and resource_id = k.r) g`,
      [json(pairs.map((p) => ({ s: p.subjectId, r: p.resourceId })))]);
    },
    async scopeLinksOf(resourceIds) {
      if (resourceIds.length === 0) return [];
      return query(em, `
        select l.resource_id as "resourceId", l.scope_id as "scopeId", l.link_type as "linkType" from json_array_elements_text(?::json) as k(id)
        join resource_scope_links l on l.resource_id = k.id`, [json(resourceIds)]);
    },
  };
}
