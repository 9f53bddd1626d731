/**
 * Page-by-page listing over the API's cursors: one page in memory at a time, never the whole
 * list, with the cursors seen so far kept so that "Previous" goes back without refetching from
 * the start.
 */
import { useState, type ReactNode } from 'react';
import { keepPreviousData, useQuery, type QueryKey } from '@tanstack/react-query';
import { ErrorBox, Loading } from './states.js';

export const PAGE_SIZE = 50;

export interface PageOf<T> {
  readonly items: readonly T[];
  readonly nextCursor: string;
}

export function usePaged<T>(key: QueryKey, fetchPage: (cursor: string) => Promise<PageOf<T>>) {
  const [cursors, setCursors] = useState<string[]>(['']);
  const cursor = cursors[cursors.length - 1];
  const query = useQuery({ queryKey: [...key, 'page', cursor], queryFn: () => fetchPage(cursor), placeholderData: keepPreviousData });
  return {
    query,
    page: cursors.length,
    next: query.data?.nextCursor ? () => setCursors([...cursors, query.data.nextCursor]) : undefined,
    previous: cursors.length > 1 ? () => setCursors(cursors.slice(0, -1)) : undefined,
    reset: () => setCursors(['']),
  };
}

/** A listing with its pager; `children` renders one page's items. */
export function Paged<T>({ paged, what, children }: { paged: ReturnType<typeof usePaged<T>>; what: string; children: (items: readonly T[]) => ReactNode }) {
  const { query } = paged;
  if (query.isPending) return <Loading what={what} />;
  if (query.isError) return <ErrorBox error={query.error} retry={() => void query.refetch()} />;
  return (
    <div className="paged" aria-busy={query.isFetching}>
      {query.data.items.length === 0 && paged.page === 1 ? <p className="empty">No {what}.</p> : children(query.data.items)}
      {(paged.previous || paged.next) && (
        <nav className="pager" aria-label={`Pages of ${what}`}>
          <button type="button" onClick={paged.previous} disabled={!paged.previous}>Previous</button>
          <span aria-live="polite">Page {paged.page}</span>
          <button type="button" onClick={paged.next} disabled={!paged.next}>Next</button>
        </nav>
      )}
    </div>
  );
}
