import type { ServiceImpl } from '@connectrpc/connect';
import { SubjectService } from '../../../gen/authz/v1/subject_service_pb.js';
import type { CreateSubjectRequest } from '../../../gen/authz/v1/subject_service_pb.js';
import { constraint, invalid } from '../../common/errors.js';
import { deleteSubjectWithDependents } from '../../store/access.js';
import { rowToMessage } from '../../store/kinds.js';
import { rowReads } from '../../store/rows.js';
import type { WriteTx } from '../../store/write.js';
import { SUBJECT_TYPES } from '../../common/vocabulary.js';
import { jsonObject, oneOf, optionalString, requireString } from '../../common/validate.js';
import { createMany, type CreateSpec } from './batch-create.js';
import type { Deps } from './deps.js';
import { getOne, listMany, requireTenant } from './reads.js';
import { deleteOne, loadForWrite, writeOne } from './writes.js';


export const subjects: CreateSpec<CreateSubjectRequest, 'subject'> = {
  kind: 'subject',
  tenantRef: (item, principal) => ['tenant', item.tenantId || principal.tenantId, 'tenantId'],
  async preload(b, items) {
    await b.preload('tenant', items.map((i) => i.tenantId || b.principal.tenantId));
  },
  async build(b, item, p) {
    const id = b.id('subject', item.id, `${p}id`);
    const type = oneOf(item.type, SUBJECT_TYPES, `${p}type`);
    const externalId = requireString(item.externalId, `${p}externalId`);
    const tenantId = optionalString(item.tenantId, `${p}tenantId`) ?? b.principal.tenantId;
    if (!tenantId) throw invalid(`${p}tenantId`, 'is required when the API key names no tenant');
    await b.ref('tenant', tenantId, `${p}tenantId`);
    await b.tenant(tenantId, `${p}tenantId`);
    return { ...b.base(id, tenantId), type, externalId, metadata: jsonObject(item.metadata, `${p}metadata`) ?? null };
  },
};

/**
 * Deletes a subject with its memberships (and their role assignments), its ownership grants
 * and the tag assignments that target it. The subject of an API key is refused: keys are
 * revoked, never deleted, and keep naming their subject.
 */
async function deleteSubject(tx: WriteTx, subjectId: string): Promise<void> {
  const [key] = await rowReads(tx).where('apiKey', { subjectId });
  if (key) {
    throw constraint(
      `subject ${subjectId} is the subject of API key ${key.id as string}; the subject of an API key cannot be deleted (revoke the key instead)`,
      'id',
    );
  }
  await deleteSubjectWithDependents(tx, subjectId);
}

export function subjectService(deps: Deps): ServiceImpl<typeof SubjectService> {
  return {
    async createSubject(req, ctx) {
      return { subject: (await createMany(deps, ctx, subjects, [req], false))[0] };
    },
    async batchCreateSubjects(req, ctx) {
      return { subjects: await createMany(deps, ctx, subjects, req.items, true) };
    },
    async getSubject(req, ctx) {
      return { subject: await getOne(deps, ctx, 'subject', requireString(req.id, 'id')) };
    },
    async listSubjects(req, ctx) {
      const tenantId = requireString(req.tenantId, 'tenantId');
      await requireTenant(deps, ctx, tenantId, 'tenantId');
      const where: Record<string, string> = { tenantId };
      const externalId = optionalString(req.externalId, 'externalId');
      if (externalId !== undefined) where.externalId = externalId;
      const { items, nextCursor } = await listMany(deps, 'subject', where, req);
      return { subjects: items, nextCursor };
    },
    /** Replaces the metadata when the request carries it; without it the subject is unchanged. */
    async updateSubject(req, ctx) {
      const id = requireString(req.id, 'id');
      const metadata = jsonObject(req.metadata, 'metadata');
      const row = await writeOne(deps, ctx, async (tx, principal) => {
        const current = await loadForWrite(tx, principal, 'subject', id);
        if (metadata === undefined) return current;
        await tx.update('subject', current, { metadata });
        return { ...current, metadata };
      });
      return { subject: rowToMessage('subject', row) };
    },
    async deleteSubject(req, ctx) {
      return deleteOne(deps, ctx, 'subject', req.id, deleteSubject);
    },
  };
}
