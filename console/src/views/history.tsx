/**
 * The tenant's change log as a timeline of revisions: who wrote each, when and why, and every
 * entity it changed with the fields before and after. The filters live in the URL's query.
 */
import { Link, useSearchParams } from 'wouter';
import { Page } from '../components/page.js';
import { HistoryFilterForm } from '../components/history/filter-form.js';
import { filtersFromQuery, filtersProblem, filtersToQuery, type HistoryFilters } from '../components/history/filters.js';
import { Timeline } from '../components/history/timeline.js';
import { useTenant } from '../tenant.js';

/** How many of the latest revisions the "latest" link shows. */
const LATEST = 10n;

export default function History() {
  const tenant = useTenant();
  const [query, setQuery] = useSearchParams();
  const filters = filtersFromQuery(query);
  const queryKey = filtersToQuery(filters);
  const apply = (f: HistoryFilters) => setQuery(new URLSearchParams(filtersToQuery(f)));
  const problem = filtersProblem(filters);
  const latestFrom = tenant.revision > LATEST ? tenant.revision - LATEST + 1n : 1n;
  return (
    <Page title="History">
      <section aria-labelledby="history-filters-title">
        <h2 id="history-filters-title">Filters</h2>
        <HistoryFilterForm key={queryKey} filters={filters} onApply={apply} />
      </section>
      <section aria-labelledby="history-changes-title">
        <h2 id="history-changes-title">Revisions</h2>
        <p className="help">
          Oldest first, as the change log is kept (the API lists it in no other order). To start
          near the present, filter by revision:{' '}
          <Link href={`/history?${filtersToQuery({ ...filters, fromRevision: String(latestFrom), toRevision: '' })}`}>the latest {String(LATEST)} revisions</Link>.
        </p>
        {problem ? <p className="error" role="alert">{problem}</p> : <Timeline key={queryKey} tenantId={tenant.id} filters={filters} queryKey={queryKey} />}
      </section>
    </Page>
  );
}
