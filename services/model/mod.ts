/**
 * The tenant model file, for any tool (the `authz` command line, editors' helpers, tests): read
 * and check a file, plan it against another (an export of a tenant), write the normal form, the
 * JSON Schema, an engine snapshot for decisions without a server. No database, no network.
 */
import { universeOf } from './entities.js';
import { sectionsOf } from './normalize.js';
import type { ModelError } from './parse.js';
import { planModel, type ModelPlan } from './plan.js';
import { checkModelText, type CheckedModel } from './validate.js';

export { API_VERSION, MODEL_KIND, SCHEMA_FILE, SECTIONS, tenantModelJsonSchema, type Section, type TenantModel } from './format.js';
export { checkModelText, checkParsedModel, type CheckContext, type CheckedModel } from './validate.js';
export { formatModelError, formatPath, parseModelText, type ModelError, type ParsedModel, type PathPart } from './parse.js';
export { normaliseModel, renderModel, sectionsOf, type ModelFormat } from './normalize.js';
export { planModel, type ChangeAction, type ModelChange, type ModelPlan, type PlanOptions, type PlanProblem } from './plan.js';
export { ENTITY_KINDS, type Entities, type Entity, type EntityKind } from './entities.js';
export { modelSnapshot, type ModelSnapshot } from './snapshot.js';
export { policyIdFor } from './from-state.js';
export { DECISION_TESTS_KIND, DECISION_TESTS_SCHEMA_FILE, decisionTestsJsonSchema, type CheckCase, type DecisionTests, type LookupCase, type PermissionsCase, type ResourcesLookup, type SubjectsLookup } from './tests-format.js';
export { checkDecisionTestsText, type CheckedDecisionTests, type ReadFile } from './tests-check.js';

/** A plan of one model's text against another's (a tenant's export), both checked first. */
export interface TextPlan {
  desired: CheckedModel;
  current: CheckedModel;
  /** Undefined when either text has errors. */
  plan?: ModelPlan;
  /** The errors of both texts, each with its file. */
  errors: ModelError[];
}

/**
 * Plans `desiredText` (the file) against `currentText` (the tenant, as export writes it), as
 * the server would: references of the file's left-out sections resolve against the current model.
 */
export function planModelTexts(desiredText: string, currentText: string, options: { prune?: boolean; file?: string; currentFile?: string } = {}): TextPlan {
  const current = checkModelText(currentText, options.currentFile ?? 'current.yaml');
  if (!current.model) return { desired: current, current, errors: current.errors };
  const desired = checkModelText(desiredText, options.file ?? 'model.yaml', { universe: universeOf(current.model) });
  if (!desired.model) return { desired, current, errors: desired.errors };
  const plan = planModel(desired.entities!, current.entities!, { prune: options.prune ?? false, managed: new Set(sectionsOf(desired.model)) });
  return { desired, current, plan, errors: [] };
}
