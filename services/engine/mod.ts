/**
 * Public entry of the decision engine: a pure evaluator over an in-memory tenant index.
 * No I/O and no clock: the caller passes the time and the gate mode.
 */
export * from './model.js';
export { ScopeNotFoundError, ResourceNotFoundError, InvalidChangeError } from './errors.js';
export { TenantIndex, MAX_HIERARCHY_DEPTH, type ScopePath } from './index.js';
export {
  evaluate,
  resolveResource,
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
  type Matcher,
  type MatchOutcome,
  type OutcomeMatcher,
  type MatchSubject,
  type ResourceTags,
} from './match.js';
