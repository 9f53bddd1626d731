/**
 * The access model (roles, permissions, memberships, subjects, ownership grants) beyond single
 * rows: the deletes of an entity with everything that refers to it, each row through the change
 * log and each in a transaction that has entered the entity's tenant; and the reads that
 * uniqueness checks need.
 */
import { loadByIds, query } from './read.js';
import { rowReads } from './rows.js';
import { entityManagerOf, type StoreSource } from './source.js';
import type { WriteTx } from './write.js';

/** Deletes a role with its permission grants and assignments, and the scope overrides, tag bindings and ownership grants that name it. */
export async function deleteRoleWithDependents(tx: WriteTx, roleId: string): Promise<void> {
  const rows = rowReads(tx);
  const ids = async (kind: 'rolePermission' | 'roleAssignment' | 'scopeOverride' | 'tagBinding' | 'ownershipGrant') =>
    (await rows.where(kind, { roleId })).map((r) => r.id as string);
  await tx.delete('rolePermission', await ids('rolePermission'));
  await tx.delete('roleAssignment', await ids('roleAssignment'));
  await tx.delete('scopeOverride', await ids('scopeOverride'));
  await tx.delete('tagBinding', await ids('tagBinding'));
  await tx.delete('ownershipGrant', await ids('ownershipGrant'));
  await tx.delete('role', [roleId]);
}

/** Deletes a permission and its grants to roles, and takes it out of the scope overrides that list it. */
export async function deletePermissionWithDependents(tx: WriteTx, permissionId: string): Promise<void> {
  const grants = await rowReads(tx).where('rolePermission', { permissionId });
  await tx.delete('rolePermission', grants.map((r) => r.id as string));
  const hits = await query<{ id: string }>(
    tx.em, 'select id from scope_overrides where tenant_id = ? and permission_ids @> cast(? as jsonb)', [tx.tenantId, JSON.stringify([permissionId])],
  );
  const overrides = await loadByIds(tx.em, 'scopeOverride', hits.map((h) => h.id));
  for (const o of overrides.values()) {
    const ids = ((o.permissionIds as string[] | null) ?? []).filter((x) => x !== permissionId);
    await tx.update('scopeOverride', o, { permissionIds: ids });
  }
  await tx.delete('permission', [permissionId]);
}

/** Deletes memberships with their role assignments. */
export async function deleteMembershipsWithAssignments(tx: WriteTx, membershipIds: string[]): Promise<void> {
  if (membershipIds.length === 0) return;
  const assignments = await rowReads(tx).where('roleAssignment', { membershipId: membershipIds });
  await tx.delete('roleAssignment', assignments.map((r) => r.id as string));
  await tx.delete('membership', membershipIds);
}

/**
 * Deletes a subject with its memberships (and their role assignments), its ownership grants and
 * the tag assignments that target it. The caller has made sure no API key names the subject.
 */
export async function deleteSubjectWithDependents(tx: WriteTx, subjectId: string): Promise<void> {
  const rows = rowReads(tx);
  const memberships = await rows.where('membership', { subjectId });
  await deleteMembershipsWithAssignments(tx, memberships.map((r) => r.id as string));
  const grants = await rows.where('ownershipGrant', { subjectId });
  await tx.delete('ownershipGrant', grants.map((r) => r.id as string));
  const tags = await rows.where('tagAssignment', { targetType: 'subject', targetId: subjectId });
  await tx.delete('tagAssignment', tags.map((r) => r.id as string));
  await tx.delete('subject', [subjectId]);
}

export interface AccessReads {
  /** The (subject, resource, role) triples granted on the resources. */
  ownershipGrantsOn(resourceIds: string[]): Promise<{ subjectId: string; resourceId: string; roleId: string }[]>;
}

export function accessReads(source: StoreSource): AccessReads {
  const em = entityManagerOf(source);
  return {
    async ownershipGrantsOn(resourceIds) {
      if (resourceIds.length === 0) return [];
      return query(em, 'select subject_id as "subjectId", resource_id as "resourceId", role_id as "roleId" from ownership_grants where resource_id in (?)', [resourceIds]);
    },
  };
}
