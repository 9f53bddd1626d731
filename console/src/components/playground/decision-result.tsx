/** The answer of a check: allowed or denied, why, at which revision, the deciding policy, and the trace. */
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { EvaluateResponse } from '../../../../gen/authz/v1/decision_service_pb.js';
import { SubjectService } from '../../../../gen/authz/v1/subject_service_pb.js';
import { client, describeError } from '../../api/transport.js';
import type { Check } from './check-state.js';
import { ConditionInputsProvider } from './policy-conditions.js';
import { Ref, TraceTree } from './trace-tree.js';

export function DecisionResult({ response, check, names }: { response: EvaluateResponse; check: Check; names: ReadonlyMap<string, string> }) {
  const [rawMessages, setRawMessages] = useState(false);
  const subject = useConditionSubject(response, check);
  const policy = response.evaluatedPolicy;
  const knownPolicies = new Map(policy ? [[policy.id, policy]] : []);
  return (
    <>
      <p className={`verdict ${response.allowed ? 'verdict-allow' : 'verdict-deny'}`}>
        <span className={response.allowed ? 'allow' : 'deny'}>{response.allowed ? '✓ Allowed' : '✗ Denied'}</span>
      </p>
      <dl className="facts">
        <dt>Reason</dt><dd><code>{response.reason || '-'}</code></dd>
        <dt>Revision</dt><dd>{String(response.revision)}{check.atRevision !== undefined && <span className="muted"> (asked as of revision {check.atRevision})</span>}</dd>
        {response.decidedByPolicy && policy && (
          <>
            <dt>Deciding policy</dt>
            <dd>
              <Ref id={policy.id} names={names} /> <span className={policy.effect === 'deny' ? 'deny' : 'allow'}>{policy.effect}</span>, priority {policy.priority},
              actions {policy.actions.map((a) => <code key={a}>{a}</code>)}
            </dd>
          </>
        )}
      </dl>
      <div className="trace-head">
        <h3 id="trace-title">Trace</h3>
        <label className="inline">
          <input type="checkbox" checked={rawMessages} onChange={(e) => setRawMessages(e.target.checked)} /> Sentences with ids instead of names
        </label>
      </div>
      <ConditionInputsProvider value={{
        knownPolicies, subject: subject.data, subjectProblem: subject.isError ? describeError(subject.error).detail : undefined,
        context: check.context, past: check.atRevision !== undefined,
      }}>
        <TraceTree trace={response.trace} names={names} rawMessages={rawMessages} withConditions label="Trace of the decision" />
      </ConditionInputsProvider>
    </>
  );
}

/** The subject a policy's subjectCondition read, fetched only when the trace shows such a condition. */
function useConditionSubject(response: EvaluateResponse, check: Check) {
  const fromTrace = response.trace.find((s) => s.step === 'subject' && typeof s.details?.subjectId === 'string')?.details?.subjectId as string | undefined;
  const subjectId = fromTrace ?? ('subjectId' in check.actor ? check.actor.subjectId : undefined);
  const needed = response.trace.some((s) => s.details !== undefined && 'subjectCondition' in s.details);
  return useQuery({
    queryKey: ['decide', 'subject', subjectId],
    queryFn: async () => (await client(SubjectService).getSubject({ id: subjectId! })).subject!,
    enabled: needed && subjectId !== undefined,
  });
}
