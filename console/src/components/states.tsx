import type { ReactNode } from 'react';
import type { UseQueryResult } from '@tanstack/react-query';
import { describeError } from '../api/transport.js';

export function Loading({ what }: { what: string }) {
  return <p className="loading" role="status" aria-live="polite">Loading {what}…</p>;
}

export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  const { title, detail } = describeError(error);
  return (
    <div className="error" role="alert">
      <strong>{title}</strong>
      <p>{detail}</p>
      {retry && <button type="button" onClick={retry}>Try again</button>}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** Loading, error, or the data. */
export function QueryState<T>({ query, what, children }: { query: UseQueryResult<T>; what: string; children: (data: T) => ReactNode }) {
  if (query.isPending) return <Loading what={what} />;
  if (query.isError) return <ErrorBox error={query.error} retry={() => void query.refetch()} />;
  return <>{children(query.data)}</>;
}
