/**
 * A resource policy and a collection as cards: every field of the message, with JSON Logic
 * conditions and match definitions written as expressions and their JSON in a disclosure.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { ResourceCollection, ResourcePolicy } from '../../../gen/authz/v1/policy_pb.js';
import { formatTime, prettyJson } from '../format.js';
import { formatLogic } from './logic.js';
import { describeMatch, type MatchClause } from './match.js';
import { CollectionName, ResourceLink, ResourceTypeName } from './names.js';

export function PolicyCard({ policy: p }: { policy: ResourcePolicy }) {
  const effectClass = p.effect === 'deny' ? 'deny' : p.effect === 'allow' ? 'allow' : undefined;
  return (
    <article className="card" aria-labelledby={`policy-${p.id}`}>
      <h3 id={`policy-${p.id}`}>
        <span className={effectClass}>{p.effect}</span> {p.actions.join(', ')} on <Target policy={p} />
      </h3>
      <dl className="facts">
        <dt>Effect</dt><dd><span className={effectClass}>{p.effect}</span></dd>
        <dt>Priority</dt><dd>{p.priority}</dd>
        <dt>Actions</dt><dd><ul className="inline-list">{p.actions.map((a) => <li key={a}><code>{a}</code>{a === '*' && <span className="muted"> (every action)</span>}</li>)}</ul></dd>
        <dt>Target</dt><dd><Target policy={p} /></dd>
        <dt>Subject condition</dt><dd><Condition rule={p.subjectCondition} /></dd>
        <dt>Context condition</dt><dd><Condition rule={p.contextCondition} /></dd>
        <dt>Valid</dt><dd>{validity(p)}</dd>
        <dt>Id</dt><dd><code>{p.id}</code></dd>
        <dt>Created</dt><dd>{formatTime(p.createdAt)} by <code>{p.createdBy}</code></dd>
      </dl>
    </article>
  );
}

function Target({ policy: p }: { policy: ResourcePolicy }) {
  const t = p.target;
  if (t?.kind === 'collection' && t.collectionId) return <>collection <CollectionName id={t.collectionId} /></>;
  if (t?.kind === 'resource' && t.resourceId) return <>resource <ResourceLink id={t.resourceId} /></>;
  return <code>{prettyJson(t ?? null)}</code>;
}

function validity(p: ResourcePolicy): string {
  if (p.validFrom && p.validUntil) return `from ${formatTime(p.validFrom)} until ${formatTime(p.validUntil)}`;
  if (p.validFrom) return `from ${formatTime(p.validFrom)}`;
  if (p.validUntil) return `until ${formatTime(p.validUntil)}`;
  return 'always';
}

/** A JSON Logic rule as an expression; absent or `{}` means no condition. */
function Condition({ rule }: { rule?: JsonObject }) {
  if (rule === undefined || Object.keys(rule).length === 0) return <span className="muted">none (always holds)</span>;
  return (
    <>
      <code className="logic">{formatLogic(rule)}</code>
      <RawJson value={rule} />
    </>
  );
}

function RawJson({ value }: { value: unknown }) {
  return (
    <details className="raw">
      <summary>JSON</summary>
      <pre>{prettyJson(value)}</pre>
    </details>
  );
}

export function CollectionCard({ collection: c }: { collection: ResourceCollection }) {
  return (
    <article className="card" aria-labelledby={`collection-${c.id}`}>
      <h3 id={`collection-${c.id}`}>{c.name}</h3>
      <dl className="facts">
        <dt>Resource type</dt><dd><ResourceTypeName id={c.resourceTypeId} /></dd>
        {c.description && <><dt>Description</dt><dd>{c.description}</dd></>}
        <dt>Matches</dt>
        <dd>
          <p className="match-lead">The resources of that type for which all of these hold:</p>
          <MatchClauses clauses={describeMatch(c.matchDefinition ?? {})} />
          <RawJson value={c.matchDefinition ?? {}} />
        </dd>
        <dt>Id</dt><dd><code>{c.id}</code></dd>
        <dt>Created</dt><dd>{formatTime(c.createdAt)} by <code>{c.createdBy}</code></dd>
      </dl>
    </article>
  );
}

function MatchClauses({ clauses }: { clauses: readonly MatchClause[] }) {
  return (
    <ul className="match">
      {clauses.map((c, i) => (
        <li key={i}>
          {c.kind === 'group' ? <>{c.text}<MatchClauses clauses={c.clauses} /></> : <code className="logic">{c.text}</code>}
        </li>
      ))}
    </ul>
  );
}
