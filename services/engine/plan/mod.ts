/** PlanResources: the plan compiler, its condition tree and its SQL rendering (all pure). */
export { planResources, type PlanResourcesQuery, type PlanOptions, type ResourcePlan, type PlanKindName } from './compile.js';
export { evaluateTree, widen, hasResidual, type PlanNode, type PlanRow, type PlanField, type PlanOperator, type PlanScalar } from './tree.js';
export { planToSql, planColumns, DEFAULT_PLAN_COLUMNS, InvalidColumnError, type PlanColumns, type PlanSql } from './sql.js';
