/**
 * ChangeService: the tenant's change log read as an audit trail (docs/audit.md).
 */
import { create, type JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { ChangeService, EntityChangeSchema, type ListChangesRequest } from '../../../gen/authz/v1/change_service_pb.js';
import { invalid } from '../../common/errors.js';
import { optionalString, requireString } from '../../common/validate.js';
import { CHANGE_KINDS, listChanges, type ChangeFilter, type ChangePosition } from '../../store/changes.js';
import { DEFAULT_PAGE, MAX_PAGE } from '../../store/read.js';
import { assertTenantReach, assertWholeTenantReach, principalOf } from '../auth/principal.js';
import type { Deps } from './deps.js';

/** RFC 3339: a date, a time and an offset (fractions of a second allowed). */
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/i;

function time(value: string, field: string): Date | undefined {
  if (value === '') return undefined;
  const t = Date.parse(value);
  if (!RFC3339.test(value) || Number.isNaN(t)) throw invalid(field, 'must be an RFC 3339 time, e.g. 2025-01-31T12:00:00Z');
  return new Date(t);
}

function revision(value: bigint | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (value < 1n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(field, 'must be a revision (1 or more)');
  return Number(value);
}

/** The request's filters, checked; each names its field when refused. */
export function changeFilter(req: ListChangesRequest): ChangeFilter {
  const tenantId = requireString(req.tenantId, 'tenantId');
  const kind = optionalString(req.kind, 'kind');
  if (kind !== undefined && !CHANGE_KINDS.includes(kind)) throw invalid('kind', `must be one of ${CHANGE_KINDS.join(', ')}`);
  const filter: ChangeFilter = {
    tenantId, kind,
    entityId: optionalString(req.entityId, 'entityId'),
    writerKeyId: optionalString(req.writerKeyId, 'writerKeyId'),
    writerSubjectId: optionalString(req.writerSubjectId, 'writerSubjectId'),
    fromTime: time(req.fromTime, 'fromTime'),
    toTime: time(req.toTime, 'toTime'),
    fromRevision: revision(req.fromRevision, 'fromRevision'),
    toRevision: revision(req.toRevision, 'toRevision'),
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined)) as unknown as ChangeFilter;
}

function pageSize(value: number): number {
  const size = value === 0 ? DEFAULT_PAGE : value;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE) throw invalid('pageSize', `must be between 1 and ${MAX_PAGE}`);
  return size;
}

export function changeService(deps: Deps): ServiceImpl<typeof ChangeService> {
  return {
    async listChanges(req, ctx) {
      const principal = principalOf(ctx);
      const filter = changeFilter(req);
      assertTenantReach(principal, filter.tenantId, 'tenantId');
      assertWholeTenantReach(principal, 'the change log covers the whole tenant', 'tenantId');
      const size = pageSize(req.pageSize);
      // The cursor is signed for these filters: it cannot page another listing.
      const listing = `changes ${JSON.stringify(filter, (_, v: unknown) => (v instanceof Date ? v.toISOString() : v))}`;
      let after: ChangePosition | undefined;
      if (req.cursor !== '') {
        const [rev, seq] = deps.db.cursors.decode(listing, req.cursor).split(':').map(Number);
        after = { revision: rev, seq };
      }
      const page = await listChanges(deps.db, filter, after, size);
      const last = page.changes[page.changes.length - 1];
      return {
        changes: page.changes.map((c) => create(EntityChangeSchema, {
          revision: BigInt(c.revision), op: c.op, kind: c.kind, entityId: c.entityId, writer: c.writer,
          time: timestampFromDate(c.time), reason: c.reason ?? '',
          before: c.before as JsonObject | undefined, after: c.after as JsonObject | undefined,
        })),
        nextCursor: page.more && last ? deps.db.cursors.encode(listing, `${last.revision}:${last.seq}`) : '',
        oldestRevision: BigInt(page.oldestRevision),
      };
    },
  };
}
