/**
 * A decision's trace drawn as a tree of nested lists: a branch per leg (gate, policies, roles,
 * ownership, hierarchy…), the policies grouped by priority, and under each step every fact its
 * details hold, nested where they nest. Branches are `<details>` elements, which open and close
 * from the keyboard. Ids the tenant's first pages name are shown with their names.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { isPathKey, legResult, outcomeTone, splitIds, traceTree, type StepLike, type TraceNode } from './trace-model.js';
import { PolicyConditions } from './policy-conditions.js';

export interface TraceTreeProps {
  trace: readonly StepLike[];
  /** Id → name (a scope's path, a role's key, …). */
  names: ReadonlyMap<string, string>;
  /** Write the engine's sentences as they came, ids and all, instead of naming the ids. */
  rawMessages?: boolean;
  /** Draw policy steps' conditions with the values they read (the playground does; a compact listing does not). */
  withConditions?: boolean;
  label?: string;
}

export function TraceTree({ trace, names, rawMessages = false, withConditions = false, label = 'Trace' }: TraceTreeProps) {
  if (trace.length === 0) return <p className="empty">The answer carries no trace.</p>;
  const opts = { names, rawMessages, withConditions };
  return (
    <ol className="trace" aria-label={label}>
      {traceTree(trace).map((node, i) => <Node key={i} node={node} {...opts} />)}
    </ol>
  );
}

type Opts = Omit<TraceTreeProps, 'trace' | 'label'>;

function Node({ node, ...opts }: { node: TraceNode } & Opts) {
  if (node.kind === 'step') return <Step step={node.step} {...opts} />;
  if (node.kind === 'priority') {
    return (
      <li className="trace-group">
        <span className="trace-priority">priority {node.priority}</span>
        <ul>{node.children.map((c, i) => <Node key={i} node={c} {...opts} />)}</ul>
      </li>
    );
  }
  const only = node.children.length === 1 && node.children[0].kind === 'step' ? node.children[0].step : undefined;
  // A leg of one step without facts reads as one line: nothing to open.
  if (only && !hasDetails(only)) {
    return (
      <li className="trace-leg">
        <span className="trace-leg-name">{node.label}</span> <Outcome result={only.result} /> <Message text={only.message} {...opts} />
      </li>
    );
  }
  // A leg of one step with facts: the sentence in the title, the facts inside.
  if (only) {
    return (
      <li className="trace-leg">
        <details open>
          <summary><span className="trace-leg-name">{node.label}</span> <Outcome result={only.result} /> <Message text={only.message} {...opts} /></summary>
          <StepFacts step={only} {...opts} />
        </details>
      </li>
    );
  }
  return (
    <li className="trace-leg">
      <details open>
        <summary>
          <span className="trace-leg-name">{node.label}</span> <Outcome result={legResult(node)} />
          <span className="muted"> {countSteps(node)} steps</span>
        </summary>
        <ul>{node.children.map((c, i) => <Node key={i} node={c} {...opts} />)}</ul>
      </details>
    </li>
  );
}

const hasDetails = (step: StepLike): boolean => step.details !== undefined && Object.keys(step.details).length > 0;

function countSteps(node: TraceNode): number {
  return node.kind === 'step' ? 1 : node.children.reduce((n, c) => n + countSteps(c), 0);
}

function Step({ step, ...opts }: { step: StepLike } & Opts) {
  return (
    <li className="trace-step">
      <Outcome result={step.result} /> <Message text={step.message} {...opts} />
      <StepFacts step={step} {...opts} />
    </li>
  );
}

/** A step's details, and for a policy its conditions with what they read. */
function StepFacts({ step, ...opts }: { step: StepLike } & Opts) {
  if (!hasDetails(step)) return null;
  const policyId = step.details!.policyId;
  return (
    <>
      <Details value={step.details!} names={opts.names} />
      {opts.withConditions && typeof policyId === 'string' && <PolicyConditions policyId={policyId} details={step.details!} />}
    </>
  );
}

/** The engine's result word, coloured by what it means; the word itself carries the meaning. */
export function Outcome({ result }: { result: string }) {
  if (result === '') return null;
  return <span className={`outcome outcome-${outcomeTone(result)}`}>{result}</span>;
}

function Message({ text, names, rawMessages }: { text: string } & Opts) {
  if (rawMessages) return <span className="trace-message">{text}</span>;
  const parts = splitIds(text);
  return (
    <span className="trace-message">
      {parts.map((part, i) => {
        const name = part.id ? names.get(part.text) : undefined;
        if (name === undefined) return <span key={i}>{dropRepeat(part.text, parts[i - 1], names)}</span>;
        return <strong key={i} className="ref-name">{name}</strong>;
      })}
    </span>
  );
}

/** The text after a named id without the name the engine wrote after it (`permission p_1 (document:read:*)`). */
function dropRepeat(text: string, before: { text: string; id?: boolean } | undefined, names: ReadonlyMap<string, string>): string {
  const name = before?.id ? names.get(before.text) : undefined;
  return name !== undefined && text.startsWith(` (${name})`) ? text.slice(name.length + 3) : text;
}

/** An id with its name when one is known. */
export function Ref({ id, names }: { id: string; names: ReadonlyMap<string, string> }) {
  const name = names.get(id);
  if (name === undefined) return <code>{id}</code>;
  return <span className="ref"><strong className="ref-name">{name}</strong> <code>{id}</code></span>;
}

/** A step's details: keys and values, nested objects and lists as nested lists, paths as arrows. */
export function Details({ value, names }: { value: JsonObject; names: ReadonlyMap<string, string> }) {
  return (
    <dl className="trace-details">
      {Object.entries(value).map(([key, v]) => (
        <div key={key} className="trace-fact">
          <dt>{key}</dt>
          <dd><Value name={key} value={v} names={names} /></dd>
        </div>
      ))}
    </dl>
  );
}

function Value({ name, value, names }: { name: string; value: JsonValue; names: ReadonlyMap<string, string> }) {
  if (value === null) return <span className="muted">null</span>;
  if (typeof value === 'boolean') return <span className={value ? 'outcome-good' : 'outcome-bad'}><span aria-hidden="true">{value ? '✓ ' : '✗ '}</span>{String(value)}</span>;
  if (typeof value === 'number') return <>{value}</>;
  if (typeof value === 'string') return names.has(value) ? <Ref id={value} names={names} /> : <code>{value}</code>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span className="muted">none</span>;
    if (isPathKey(name)) {
      return <ol className="trace-path">{value.map((v, i) => <li key={i}><Value name="" value={v} names={names} /></li>)}</ol>;
    }
    return <ul className="trace-list">{value.map((v, i) => <li key={i}><Value name="" value={v} names={names} /></li>)}</ul>;
  }
  return <Details value={value} names={names} />;
}
