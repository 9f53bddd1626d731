/**
 * Applying a plan: a confirm step, then ApplyTenantModel with the plan's revision as the
 * expected one, so that a tenant changed since the plan is refused and nothing is written
 * (the server answers `aborted`, REVISION_MISMATCH); then the new revision and its history entry.
 */
import { useEffect, useRef, useState } from 'react';
import { Link } from 'wouter';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Code, ConnectError } from '@connectrpc/connect';
import { TenantModelService } from '../../../../gen/authz/v1/tenant_model_service_pb.js';
import { client } from '../../api/transport.js';
import { ErrorBox } from '../states.js';
import { exportQueryKey } from './export-panel.js';

export interface PlannedModel {
  readonly document: string;
  readonly fileName: string;
  readonly prune: boolean;
  /** The revision the plan was made at: the apply's expected revision. */
  readonly revision: bigint;
  /** How many changes write something. */
  readonly writes: number;
}

export function ApplyStep({ tenantId, tenantName, plan, onPlanAgain, planningAgain }: {
  tenantId: string; tenantName: string; plan: PlannedModel; onPlanAgain: () => void; planningAgain: boolean;
}) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const apply = useMutation({
    mutationFn: () => client(TenantModelService).applyTenantModel({
      tenantId, document: plan.document, fileName: plan.fileName, prune: plan.prune, expectedRevision: plan.revision,
    }),
    onSettled: () => {
      // The tenant (its revision in the navigation), its export and its history have moved.
      void queryClient.invalidateQueries({ queryKey: ['tenant', tenantId] });
      void queryClient.invalidateQueries({ queryKey: exportQueryKey(tenantId) });
      void queryClient.invalidateQueries({ queryKey: ['changes', tenantId] });
    },
  });
  if (plan.writes === 0) {
    return <p className="notice">Nothing to apply: the tenant stays at revision {String(plan.revision)}.</p>;
  }
  if (apply.isSuccess) return <Applied revision={apply.data.revision} />;
  if (apply.isError) {
    const err = ConnectError.from(apply.error);
    if (err.code === Code.Aborted) return <StalePlan message={err.rawMessage} revision={plan.revision} onPlanAgain={onPlanAgain} planningAgain={planningAgain} />;
    return <ErrorBox error={apply.error} retry={() => apply.reset()} />;
  }
  if (!confirming) {
    return (
      <div className="button-row">
        <button type="button" className="primary" onClick={() => setConfirming(true)}>Apply this plan…</button>
      </div>
    );
  }
  return (
    <Confirm
      question={`Apply ${plan.writes} ${plan.writes === 1 ? 'change' : 'changes'} to tenant ${tenantName}?`}
      revision={plan.revision}
      busy={apply.isPending}
      onApply={() => apply.mutate()}
      onCancel={() => setConfirming(false)}
    />
  );
}

function useFocusOnMount<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}

function Confirm({ question, revision, busy, onApply, onCancel }: { question: string; revision: bigint; busy: boolean; onApply: () => void; onCancel: () => void }) {
  const heading = useFocusOnMount<HTMLHeadingElement>();
  return (
    <section className="confirm" aria-labelledby="confirm-title">
      <h3 id="confirm-title" tabIndex={-1} ref={heading}>{question}</h3>
      <p>
        Every change of the plan is written in one transaction, as one revision. The apply is refused,
        and nothing written, if the tenant is no longer at revision {String(revision)}.
      </p>
      <div className="button-row">
        <button type="button" className="primary" onClick={onApply} disabled={busy}>{busy ? 'Applying…' : 'Apply now'}</button>
        <button type="button" onClick={onCancel} disabled={busy}>Cancel</button>
      </div>
    </section>
  );
}

function Applied({ revision }: { revision: bigint }) {
  const heading = useFocusOnMount<HTMLHeadingElement>();
  const r = String(revision);
  return (
    <section className="notice applied" aria-labelledby="applied-title">
      <h3 id="applied-title" tabIndex={-1} ref={heading}>Applied: the tenant is at revision {r}</h3>
      <p><Link href={`/history?fromRevision=${r}&toRevision=${r}`}>See revision {r} in the history</Link></p>
    </section>
  );
}

function StalePlan({ message, revision, onPlanAgain, planningAgain }: { message: string; revision: bigint; onPlanAgain: () => void; planningAgain: boolean }) {
  return (
    <div className="error" role="alert">
      <strong>The tenant changed after this plan (made at revision {String(revision)}): nothing was applied</strong>
      <p>{message}</p>
      <button type="button" onClick={onPlanAgain} disabled={planningAgain}>{planningAgain ? 'Planning…' : 'Plan again'}</button>
    </div>
  );
}
