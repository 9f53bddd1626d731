/**
 * The change log's filters as a form. Its values are the URL's query: submitting navigates, the
 * view reads the filters back from the URL, so a filtered history is a link.
 */
import { useState, type FormEvent } from 'react';
import { CHANGE_KINDS, NO_FILTERS, filtersProblem, isoToLocalInput, localInputToIso, type HistoryFilters } from './filters.js';

export function HistoryFilterForm({ filters, onApply }: { filters: HistoryFilters; onApply: (f: HistoryFilters) => void }) {
  const [draft, setDraft] = useState(filters);
  const [problem, setProblem] = useState('');
  const set = (key: keyof HistoryFilters) => (value: string) => setDraft({ ...draft, [key]: value });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const trimmed = Object.fromEntries(Object.entries(draft).map(([k, v]) => [k, v.trim()])) as unknown as HistoryFilters;
    const p = filtersProblem(trimmed);
    setProblem(p);
    if (p === '') onApply(trimmed);
  };
  const clear = () => {
    setDraft(NO_FILTERS);
    setProblem('');
    onApply(NO_FILTERS);
  };
  return (
    <form className="history-filters" onSubmit={submit} aria-describedby={problem ? 'history-filter-problem' : undefined}>
      <div className="filter-grid">
        <div>
          <label htmlFor="filter-kind">Kind</label>
          <select id="filter-kind" value={draft.kind} onChange={(e) => set('kind')(e.target.value)}>
            <option value="">Any kind</option>
            {CHANGE_KINDS.map((k) => <option key={k} value={k}>{k}</option>)}
          </select>
        </div>
        <TextField id="filter-entity" label="Entity id" value={draft.entityId} onChange={set('entityId')} />
        <TextField id="filter-writer-key" label="Writer key id" value={draft.writerKeyId} onChange={set('writerKeyId')} />
        <TextField id="filter-writer-subject" label="Writer subject id" value={draft.writerSubjectId} onChange={set('writerSubjectId')} />
        <TextField id="filter-from-revision" label="From revision" value={draft.fromRevision} onChange={set('fromRevision')} numeric />
        <TextField id="filter-to-revision" label="To revision" value={draft.toRevision} onChange={set('toRevision')} numeric />
        <div>
          <label htmlFor="filter-from-time">From time</label>
          <input id="filter-from-time" type="datetime-local" step={1} value={isoToLocalInput(draft.fromTime)} onChange={(e) => set('fromTime')(localInputToIso(e.target.value))} />
        </div>
        <div>
          <label htmlFor="filter-to-time">To time</label>
          <input id="filter-to-time" type="datetime-local" step={1} value={isoToLocalInput(draft.toTime)} onChange={(e) => set('toTime')(localInputToIso(e.target.value, true))} />
        </div>
      </div>
      <p className="help">Times are in your time zone; both ends of a range are included.</p>
      {problem && <p id="history-filter-problem" className="error" role="alert">{problem}</p>}
      <div className="button-row">
        <button type="submit">Show changes</button>
        <button type="button" onClick={clear}>Clear filters</button>
      </div>
    </form>
  );
}

function TextField({ id, label, value, onChange, numeric = false }: { id: string; label: string; value: string; onChange: (v: string) => void; numeric?: boolean }) {
  return (
    <div>
      <label htmlFor={id}>{label}</label>
      <input id={id} type="text" inputMode={numeric ? 'numeric' : undefined} autoComplete="off" spellCheck={false} value={value} onChange={(e) => onChange(e.target.value)} />
    </div>
  );
}
