/**
 * The tenant's model as code (docs/policy-as-code.md), as `authz export`, `plan` and `apply` do
 * it: the export to read or download; a file to upload or paste, read here, planned by the
 * server and shown as a diff; then applied, after a confirm step, at the plan's revision.
 */
import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import { TenantModelService } from '../../../gen/authz/v1/tenant_model_service_pb.js';
import { client } from '../api/transport.js';
import { Page } from '../components/page.js';
import { ErrorBox } from '../components/states.js';
import { ApplyStep, type PlannedModel } from '../components/model/apply-step.js';
import { ExportPanel } from '../components/model/export-panel.js';
import { ModelEditor } from '../components/model/model-editor.js';
import { PlanView } from '../components/model/plan-view.js';
import { readModel, type ModelProblem } from '../components/model/read-model.js';
import { summarisePlan } from '../components/model/plan-summary.js';
import { useTenant } from '../tenant.js';

/** What a plan was asked for: the text as sent, so that the apply sends exactly what was planned. */
interface PlanRequest {
  readonly document: string;
  readonly fileName: string;
  readonly prune: boolean;
  /** The document as read, to show what the file sets a changed field to. */
  readonly value: unknown;
}

export default function Model() {
  const tenant = useTenant();
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState('');
  const [prune, setPrune] = useState(false);
  const [problems, setProblems] = useState<readonly ModelProblem[]>([]);
  const plan = useMutation({
    mutationFn: async (req: PlanRequest) => ({
      req,
      answer: await client(TenantModelService).planTenantModel({ tenantId: tenant.id, document: req.document, fileName: req.fileName, prune: req.prune }),
    }),
  });
  // Any edit makes the plan shown no longer the plan of the text: it goes, and must be made again.
  const edited = () => {
    setProblems([]);
    plan.reset();
  };
  const runPlan = () => {
    const name = fileName || 'model.yaml';
    const read = readModel(text, name);
    if (!read.ok) {
      setProblems(read.problems);
      plan.reset();
      return;
    }
    setProblems([]);
    plan.mutate({ document: text, fileName: name, prune, value: read.value });
  };
  const planned: PlannedModel | undefined = plan.data && {
    document: plan.data.req.document, fileName: plan.data.req.fileName, prune: plan.data.req.prune,
    revision: plan.data.answer.revision, writes: summarisePlan(plan.data.answer.changes).writes,
  };
  return (
    <Page title="Model as code">
      <p className="help">
        The tenant as a file of names and keys: export it, edit it, plan it against the tenant and apply it as one revision,
        as <code>authz export</code>, <code>authz plan</code> and <code>authz apply</code> do.
      </p>
      <div className="model-split">
        <section aria-labelledby="export-title">
          <h2 id="export-title">Export</h2>
          <ExportPanel tenantId={tenant.id} onEdit={(doc, name) => { setText(doc); setFileName(name); edited(); }} />
        </section>
        <section aria-labelledby="plan-apply-title">
          <h2 id="plan-apply-title">Plan and apply</h2>
          <ModelEditor
            text={text} fileName={fileName} prune={prune} problems={problems} planning={plan.isPending}
            onText={(t) => { setText(t); edited(); }}
            onFile={(t, name) => { setText(t); setFileName(name); edited(); }}
            onPrune={(p) => { setPrune(p); edited(); }}
            onPlan={runPlan}
          />
          {plan.isError && <div className="model-error"><ErrorBox error={plan.error} /></div>}
          {plan.data && planned && (
            <>
              <PlanView revision={plan.data.answer.revision} changes={plan.data.answer.changes} document={plan.data.req.value} />
              <ApplyStep
                key={`${planned.revision}-${plan.submittedAt}`}
                tenantId={tenant.id} tenantName={tenant.name} plan={planned}
                onPlanAgain={() => plan.mutate(plan.data.req)} planningAgain={plan.isPending}
              />
            </>
          )}
        </section>
      </div>
    </Page>
  );
}
