import type { ServiceImpl } from '@connectrpc/connect';
import { ImportService } from '../../../gen/authz/v1/import_service_pb.js';
import { principalOf } from '../auth/principal.js';
import { writerOfCall } from '../auth/writer.js';
import { getImport, importBatch } from '../import/batch.js';
import type { Deps } from './deps.js';
import { setRevision } from './writes.js';

/** ImportService: bulk imports in numbered batches (services/control-plane/import). */
export function importService(deps: Deps): ServiceImpl<typeof ImportService> {
  return {
    async importBatch(req, ctx) {
      const out = await importBatch(deps.db, principalOf(ctx), writerOfCall(ctx), req);
      setRevision(ctx, out.tenantRevision);
      return { importId: out.importId, sequence: out.sequence, applied: out.applied, revision: BigInt(out.revision), nextLine: out.nextLine, counts: out.counts };
    },
    async getImport(req, ctx) {
      const p = await getImport(deps.db, principalOf(ctx), req.tenantId, req.importId);
      return { importId: p.importId, lastSequence: p.lastSequence, nextLine: p.nextLine, revision: BigInt(p.revision), counts: p.counts };
    },
  };
}
