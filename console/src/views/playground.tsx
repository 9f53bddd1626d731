/**
 * The decision playground: a check (subject, scope, action, resource, context, revision) asked of
 * Evaluate with its trace, drawn as a tree, and the same check as `curl` and `authz check`. The
 * query string holds the check, so a link reproduces it: opening one fills the form and runs it.
 */
import { useEffect, useMemo, useState } from 'react';
import { useSearchParams } from 'wouter';
import { useQuery } from '@tanstack/react-query';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { client } from '../api/transport.js';
import { Page } from '../components/page.js';
import { CheckForm } from '../components/playground/check-form.js';
import {
  evaluateRequest, formFromSearch, namesACheck, searchFromForm, validateForm, type Check, type FieldError,
} from '../components/playground/check-state.js';
import { authzCheckCommand, curlCommand } from '../components/playground/commands.js';
import { CopyCommand } from '../components/playground/copy-command.js';
import { DecisionResult } from '../components/playground/decision-result.js';
import { useTenantLists } from '../components/playground/tenant-lists.js';
import { QueryState } from '../components/states.js';
import { useTenant } from '../tenant.js';

export default function Playground() {
  const tenant = useTenant();
  const [params, setParams] = useSearchParams();
  const search = params.toString();
  // The check the URL names: what was last asked (or linked to), as opposed to the form being edited.
  const { asked, askedResult } = useMemo(() => {
    const named = new URLSearchParams(search);
    const form = formFromSearch(named, tenant.scopeId);
    return { asked: form, askedResult: namesACheck(named) ? validateForm(form) : undefined };
  }, [search, tenant.scopeId]);
  const [form, setForm] = useState(asked);
  const [errors, setErrors] = useState<readonly FieldError[]>([]);
  // A new URL (a link followed, Back, a check asked) replaces the form and its problems.
  useEffect(() => {
    setForm(asked);
    setErrors(askedResult && !askedResult.ok ? askedResult.errors : []);
  }, [asked, askedResult]);

  const check = askedResult?.ok ? askedResult.check : undefined;
  const evaluation = useQuery({
    queryKey: ['decide', 'evaluate', tenant.id, search],
    queryFn: async () => client(DecisionService).evaluate(evaluateRequest(check!)),
    enabled: check !== undefined,
    // A check asked again is asked of the server again: the tenant may have changed since.
    staleTime: 0,
    retry: false,
  });
  const lists = useTenantLists(form.scopeId.trim());

  const ask = () => {
    const result = validateForm(form);
    if (!result.ok) {
      setErrors(result.errors);
      return;
    }
    setErrors([]);
    const next = searchFromForm(form);
    if (next === search) void evaluation.refetch();
    else setParams(next);
  };

  return (
    <Page title="Decision playground">
      <section aria-labelledby="check-title">
        <h2 id="check-title">Check</h2>
        <p className="help">Asks Evaluate whether the subject may perform the action, and shows the steps that led to the answer. The address of this page holds the check: share it to reproduce it.</p>
        <CheckForm form={form} onChange={setForm} errors={errors} lists={lists} onSubmit={ask} busy={evaluation.isFetching} />
      </section>
      {/* The answer is read out where the focus stays (on the button), without reading the whole trace. */}
      <p className="visually-hidden" role="status">{announcement(evaluation)}</p>
      {check && (
        <>
          <section aria-labelledby="decision-title" className="decision">
            <h2 id="decision-title">Decision</h2>
            <QueryState query={evaluation} what="the decision">
              {(response) => <DecisionResult response={response} check={check} names={lists.names} />}
            </QueryState>
          </section>
          <Commands check={check} />
        </>
      )}
    </Page>
  );
}

function announcement(evaluation: { isFetching: boolean; isError: boolean; data?: { allowed: boolean; reason: string } }): string {
  if (evaluation.isFetching) return 'Checking…';
  if (evaluation.isError) return 'The check failed.';
  if (evaluation.data) return `${evaluation.data.allowed ? 'Allowed' : 'Denied'} (${evaluation.data.reason}).`;
  return '';
}

function Commands({ check }: { check: Check }) {
  const origin = window.location.origin;
  return (
    <section aria-labelledby="commands-title">
      <h2 id="commands-title">The same check elsewhere</h2>
      <p className="help">Both read the API key from <code>$AUTHZ_API_KEY</code>; the key is never written here.</p>
      <CopyCommand id="curl-command" title="curl" command={curlCommand(origin, check)} />
      <CopyCommand id="cli-command" title="authz check" command={authzCheckCommand(origin, check)} />
    </section>
  );
}
