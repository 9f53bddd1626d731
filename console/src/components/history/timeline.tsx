/**
 * The change log under some filters, a page at a time (the API's cursor), shown as revisions.
 * The log lists changes oldest first and has no other order.
 */
import { useRef } from 'react';
import { ChangeService, type EntityChange } from '../../../../gen/authz/v1/change_service_pb.js';
import { client } from '../../api/transport.js';
import { Paged, usePaged, type PageOf } from '../paged.js';
import { filtersToRequest, type HistoryFilters } from './filters.js';
import { RevisionEntry } from './revision-entry.js';
import { groupByRevision } from './timeline-groups.js';

/** Changes per page: the API's default; a model apply of a few dozen entities fits on one. */
const CHANGES_PER_PAGE = 100;

interface ChangesPage extends PageOf<EntityChange> {
  readonly oldestRevision: bigint;
}

export function Timeline({ tenantId, filters, queryKey }: { tenantId: string; filters: HistoryFilters; queryKey: string }) {
  const paged = usePaged(['changes', tenantId, queryKey], async (cursor): Promise<ChangesPage> => {
    const r = await client(ChangeService).listChanges({ tenantId, ...filtersToRequest(filters), pageSize: CHANGES_PER_PAGE, cursor });
    return { items: r.changes, nextCursor: r.nextCursor, oldestRevision: r.oldestRevision };
  });
  // The page's answer carries the log's oldest revision beside the changes (usePaged keeps what fetchPage returned).
  const oldest = (paged.query.data as ChangesPage | undefined)?.oldestRevision;
  // The last revision of each page seen, to say when a page starts in the middle of a revision.
  // The component is remounted when the filters change, so the pages are those of one listing.
  const lastRevisionOfPage = useRef(new Map<number, bigint>());
  return (
    <>
      {oldest !== undefined && <OldestRevision oldest={oldest} />}
      <Paged paged={paged} what="changes">
        {(changes) => {
          const groups = groupByRevision(changes);
          // While the next page loads, the previous one is still shown: it is not this page's.
          const settled = !paged.query.isPlaceholderData;
          if (settled && groups.length > 0) lastRevisionOfPage.current.set(paged.page, groups[groups.length - 1].revision);
          const previousLast = settled ? lastRevisionOfPage.current.get(paged.page - 1) : undefined;
          return (
            <ol className="timeline" aria-label="Revisions">
              {groups.map((g, i) => (
                <RevisionEntry
                  key={String(g.revision)}
                  group={g}
                  continuesFromPrevious={i === 0 && paged.page > 1 && previousLast === g.revision}
                  mayContinue={i === groups.length - 1 && paged.next !== undefined}
                />
              ))}
            </ol>
          );
        }}
      </Paged>
    </>
  );
}

function OldestRevision({ oldest }: { oldest: bigint }) {
  return (
    <p className="notice oldest-revision">
      Oldest revision in the log: <strong>{String(oldest)}</strong>.{' '}
      {oldest > 1n ? 'Older revisions were compacted away.' : 'Nothing has been compacted away yet: the log starts at the tenant’s first revision.'}
    </p>
  );
}
