/**
 * A policy step's conditions as rules, with the values each rule reads. The trace says whether a
 * condition passed; the rule comes from the answer's deciding policy or from GetResourcePolicy,
 * and the values from what the condition is evaluated over: `{subject: {id, type, externalId,
 * meta}}` for a subjectCondition, the request's context for a contextCondition.
 */
import { createContext, useContext, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { PolicyService } from '../../../../gen/authz/v1/policy_service_pb.js';
import type { ResourcePolicy } from '../../../../gen/authz/v1/policy_pb.js';
import type { Subject } from '../../../../gen/authz/v1/subject_pb.js';
import { client } from '../../api/transport.js';
import { prettyJson } from '../../format.js';
import { formatLogic } from '../logic.js';
import { ErrorBox, Loading } from '../states.js';
import { logicVariables, valueAt } from './trace-model.js';

export interface ConditionInputs {
  /** The policies the answer carries already (its deciding policy), by id. */
  readonly knownPolicies: ReadonlyMap<string, ResourcePolicy>;
  readonly subject?: Subject;
  /** Why the subject could not be read, when it could not. */
  readonly subjectProblem?: string;
  readonly context?: JsonObject;
  /** The check asked about a past revision: the subject shown is today's. */
  readonly past: boolean;
}

const Inputs = createContext<ConditionInputs>({ knownPolicies: new Map(), past: false });

export function ConditionInputsProvider({ value, children }: { value: ConditionInputs; children: ReactNode }) {
  return <Inputs.Provider value={value}>{children}</Inputs.Provider>;
}

/** The data a subjectCondition is evaluated over, built as the engine builds it. */
export function subjectConditionData(subject: Subject): JsonObject {
  return { subject: { id: subject.id, type: subject.type, externalId: subject.externalId, meta: subject.metadata ?? {} } };
}

export function PolicyConditions({ policyId, details }: { policyId: string; details: JsonObject }) {
  const inputs = useContext(Inputs);
  const known = inputs.knownPolicies.get(policyId);
  const hasCondition = 'subjectCondition' in details || 'contextCondition' in details;
  const query = useQuery({
    queryKey: ['decide', 'policy', policyId],
    queryFn: async () => (await client(PolicyService).getResourcePolicy({ id: policyId })).resourcePolicy!,
    enabled: known === undefined && hasCondition,
  });
  if (!hasCondition) return null;
  const policy = known ?? query.data;
  if (!policy) {
    if (query.isError) return <ErrorBox error={query.error} retry={() => void query.refetch()} />;
    return <Loading what={`the conditions of ${policyId}`} />;
  }
  return (
    <div className="conditions">
      {policy.subjectCondition && (
        <Condition
          name="subjectCondition"
          rule={policy.subjectCondition}
          result={details.subjectCondition}
          data={inputs.subject ? subjectConditionData(inputs.subject) : undefined}
          source={inputs.subject ? (inputs.past ? 'the subject as it is now (the check was at a past revision)' : 'the subject') : undefined}
          problem={inputs.subjectProblem}
        />
      )}
      {policy.contextCondition && (
        <Condition name="contextCondition" rule={policy.contextCondition} result={details.contextCondition} data={inputs.context ?? {}} source="the context sent" contextual />
      )}
    </div>
  );
}

function Condition({ name, rule, result, data, source, problem, contextual = false }: {
  name: string; rule: JsonObject; result: JsonValue | undefined; data: JsonObject | undefined; source: string | undefined; problem?: string; contextual?: boolean;
}) {
  const variables = logicVariables(rule);
  return (
    <div className="condition">
      <p className="condition-head">
        <code>{name}</code>{' '}
        {typeof result === 'boolean' && <span className={result ? 'outcome outcome-good' : 'outcome outcome-bad'}>{result ? 'passed' : 'failed'}</span>}
      </p>
      <p className="condition-rule"><code>{formatLogic(rule)}</code></p>
      <details className="raw-json">
        <summary>The rule as JSON Logic</summary>
        <pre tabIndex={0}>{prettyJson(rule)}</pre>
      </details>
      {data === undefined && problem && <p className="help">The values it read are not shown: {problem}</p>}
      {variables.length > 0 && data !== undefined && (
        <>
          <p className="help">Values it read, from {source}:</p>
          <dl className="condition-values">
            {variables.map((v) => (
              <div key={v} className="trace-fact">
                <dt><code>{v}</code></dt>
                <dd>{shownValue(v, valueAt(data, v), contextual)}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </div>
  );
}

function shownValue(variable: string, value: JsonValue | undefined, contextual: boolean): ReactNode {
  if (value !== undefined) return <code>{JSON.stringify(value)}</code>;
  // The server adds `time` to a context without one, so the page cannot know what it read.
  if (contextual && (variable === 'time' || variable.startsWith('time.'))) return <span className="muted">filled in by the server's clock</span>;
  return <span className="muted">absent</span>;
}
