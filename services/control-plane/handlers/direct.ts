/**
 * The control plane's bulk writes on the REST gateway's direct path (transport/gateway/direct.ts):
 * `POST /resources/batch` and `POST /tenants/{tenant_id}/import`. The same use cases as their
 * connect-node handlers, called with the caller the server admitted from the headers; the
 * answers written without response messages (a resource batch's JSON is made while PostgreSQL
 * inserts the rows).
 */
import { create } from '@bufbuild/protobuf';
import { ImportBatchResponseSchema, ImportService, type ImportBatchRequest } from '../../../gen/authz/v1/import_service_pb.js';
import { ResourceService, type BatchCreateResourcesRequest } from '../../../gen/authz/v1/resource_service_pb.js';
import { rowsToJsonText } from '../../store/kinds.js';
import type { DirectCall, DirectMethod } from '../../transport/gateway/direct.js';
import { TENANT_ATTRIBUTE } from '../../transport/tracing.js';
import type { Principal } from '../auth/principal.js';
import { reasonOfNodeHeaders, writerOf } from '../auth/writer.js';
import type { Writer } from '../../store/write.js';
import { importBatch } from '../import/batch.js';
import { createRows } from './batch-create.js';
import type { Deps } from './deps.js';
import { resources } from './resource.js';

/** The admitted caller, on the call's span as the auth interceptor puts it. */
function principalOf(call: DirectCall): Principal {
  const principal = call.caller as Principal;
  if (principal.tenantId) call.span?.setAttribute(TENANT_ATTRIBUTE, principal.tenantId);
  return principal;
}

/** The writer of a direct call: its caller, and the reason from its headers. */
function writerOfDirect(call: DirectCall): Writer {
  return writerOf(call.caller as Principal, reasonOfNodeHeaders(call.headers));
}

export function directMethods(deps: Deps): DirectMethod[] {
  return [
    {
      method: ResourceService.method.batchCreateResources,
      async serve(call) {
        const items = (call.message as BatchCreateResourcesRequest).items;
        let restBody = '';
        const { rows, revision } = await createRows(deps, principalOf(call), resources(), items, true, writerOfDirect(call), (written) => (restBody = rowsToJsonText('resource', written)));
        if (restBody === '') restBody = rowsToJsonText('resource', rows);
        return { restBody, revision };
      },
    },
    {
      method: ImportService.method.importBatch,
      async serve(call) {
        const out = await importBatch(deps.db, principalOf(call), writerOfDirect(call), call.message as ImportBatchRequest);
        const message = create(ImportBatchResponseSchema, {
          importId: out.importId, sequence: out.sequence, applied: out.applied, revision: BigInt(out.revision), nextLine: out.nextLine, counts: out.counts,
        });
        return { message, revision: out.tenantRevision };
      },
    },
  ];
}
