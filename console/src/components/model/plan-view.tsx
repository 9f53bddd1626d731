/** A plan as a diff of the tenant: what an apply would create, update, replace or delete, by kind. */
import { useEffect, useRef } from 'react';
import { countsSentence, fileValue, summarisePlan, type PlanChange } from './plan-summary.js';

const MARKS: Record<string, string> = { create: '+', update: '~', replace: '-/+', delete: '-' };

export function PlanView({ revision, changes, document }: { revision: bigint; changes: readonly PlanChange[]; document: unknown }) {
  const heading = useRef<HTMLHeadingElement>(null);
  // A new plan takes the focus, so that a keyboard or screen-reader user lands on its answer.
  useEffect(() => heading.current?.focus(), [changes]);
  const plan = summarisePlan(changes);
  const kept = plan.counts.keep > 0 ? `; ${plan.counts.keep} kept (not in the file; prune deletes what the file’s sections leave out, where the API can)` : '';
  return (
    <section className="plan" aria-labelledby="plan-title">
      <h3 id="plan-title" tabIndex={-1} ref={heading}>Plan at revision {String(revision)}</h3>
      <p className="plan-counts">
        {plan.writes === 0 ? `No changes${kept}.` : `${countsSentence(plan.counts)}${kept}.`}{' '}
        <span className="muted">Expected revision for the apply: {String(revision)}.</span>
      </p>
      {plan.groups.map((g) => (
        <section key={g.kind} className="plan-kind" aria-labelledby={`plan-kind-${g.kind}`}>
          <h4 id={`plan-kind-${g.kind}`}>{g.kind} <span className="muted">({g.changes.length})</span></h4>
          <ul className="plan-changes" aria-label={`Changes of kind ${g.kind}`}>
            {g.changes.map((c, i) => <PlanChangeItem key={`${c.key}-${i}`} change={c} document={document} />)}
          </ul>
        </section>
      ))}
    </section>
  );
}

function PlanChangeItem({ change, document }: { change: PlanChange; document: unknown }) {
  const explained = change.reason !== '' && change.action !== 'create' && change.action !== 'update';
  return (
    <li className={`plan-change plan-${change.action}`}>
      <span className="mark" aria-hidden="true">{MARKS[change.action] ?? ''}</span>
      <span className={`badge badge-${change.action}`}>{change.action}</span> <code>{change.key}</code>
      {change.path && <span className="muted"> at {change.path}</span>}
      {change.fields.length > 0 && (
        <ul className="plan-fields" aria-label={`Fields that change in ${change.key}`}>
          {change.fields.map((f) => <FieldLine key={f} field={f} value={fileValue(document, change.path, f)} />)}
        </ul>
      )}
      {explained && <p className="help">{change.reason}</p>}
    </li>
  );
}

function FieldLine({ field, value }: { field: string; value: unknown }) {
  return (
    <li>
      <code>{field}</code>
      {value !== undefined && <> → <code>{typeof value === 'string' ? value : JSON.stringify(value)}</code></>}
    </li>
  );
}
