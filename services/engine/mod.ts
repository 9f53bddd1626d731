/**
 * Public entry of the decision engine: a pure evaluator over an in-memory tenant index.
 * No I/O and no clock: the caller passes the time and the gate mode.
 */
export * from './model.js';
export { ScopeNotFoundError, ResourceNotFoundError, InvalidChangeError, AmbiguousSubjectError } from './errors.js';
export { subjectByExternalId } from './subject-ref.js';
export { TenantIndex, MAX_HIERARCHY_DEPTH, type ScopePath, type TenantIndexBuilder } from './tenant-index/mod.js';
export {
  evaluate,
  resolveResource,
  DECISION_REASONS,
  conditionContext,
  type Decision,
  type DecisionReason,
  type EvaluateOptions,
  type EvaluateRequest,
  type GateMode,
  type ResourceRef,
  type TraceLeg,
  type TraceStep,
} from './evaluate.js';
export {
  EvaluationBudget,
  CONDITION_MAX_OPERATIONS,
  DECISION_MAX_OPERATIONS,
  BATCH_MAX_OPERATIONS,
  BUDGET_EXHAUSTED,
} from './budget.js';
export { lookupResources, type ListedResource, type LookupResourcesQuery, type LookupResourcesPage } from './lookup.js';
export { grantOf, lookupSubjects, type LookupSubjectsQuery, type LookupSubjectsPage, type SubjectGrant } from './lookup-subjects.js';
export { effectivePermissions, type EffectivePermission, type EffectivePermissionsQuery } from './effective.js';
export {
  validateJsonLogic,
  compileJsonLogic,
  applyJsonLogic,
  conditionPasses,
  conditionOutcome,
  logicTruthy,
  type ConditionOutcome,
  missingVariables,
  JSON_LOGIC_MAX_DEPTH,
  JSON_LOGIC_MAX_ARRAY_LENGTH,
  JSON_LOGIC_MAX_OBJECT_KEYS,
  type CompiledLogic,
  type LogicResult,
} from './jsonlogic.js';
export {
  validateMatchDefinition,
  compileMatch,
  compileMatchOutcome,
  matchesDefinition,
  matchOutcome,
  MATCH_MAX_DEPTH,
  REGEX_MAX_PROGRAM_SIZE,
  MATCH_MAX_REGEX_PROGRAM_TOTAL,
  estimateRegexProgram,
  regexSearchCost,
  type Matcher,
  type MatchOutcome,
  type OutcomeMatcher,
  type MatchSubject,
  type ResourceTags,
} from './match.js';
