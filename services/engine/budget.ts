/**
 * The evaluation budget: how much work tenant-supplied rules (policy conditions, collection match
 * definitions, their regular expressions) may make one decision do. The process is shared by
 * every tenant (control plane) or every request (sidecar), so a stored rule must not be able to
 * keep it busy for more than milliseconds, whatever data it meets (architecture, mechanism 6).
 *
 * The unit is one *operation*: one JSON Logic node evaluated (one call of json-logic-js's
 * `apply`, 10–140 ns measured on the 2-core reference machine). Work that is linear in the size
 * of a value is converted to operations (see jsonlogic.ts and match.ts): an array converted to a
 * string (`==`, `<`, arithmetic, `cat` over an array) costs one per element, searching or copying
 * costs one per 16 elements or characters, a regular-expression search costs by input length
 * times program size.
 *
 * Three limits nest: a condition may spend {@link CONDITION_MAX_OPERATIONS}, all the conditions,
 * match definitions and searches of one decision {@link DECISION_MAX_OPERATIONS}, and all the
 * decisions of one `evaluate/batch` call {@link BATCH_MAX_OPERATIONS} (the caller passes one
 * {@link EvaluationBudget} to every `evaluate` of the batch). Running out makes the rule's outcome
 * `error`, which the engine fails closed on like any other error; once a decision's budget is
 * spent, the rules left error at once, without running. Nothing here reads a clock: the same
 * data costs the same, so decisions stay deterministic.
 */

/**
 * Operations one condition (a policy's `subjectCondition` or `contextCondition`, a collection's
 * `condition`) may spend. A rule whose literal data alone would cost more is refused at write
 * time (`validateJsonLogic`). Measured worst case about 1.5 ms.
 */
export const CONDITION_MAX_OPERATIONS = 10_000;
/** Operations one decision may spend on conditions, match definitions and regex searches (worst case about 4 ms). */
export const DECISION_MAX_OPERATIONS = 30_000;
/** Operations all the decisions of one `evaluate/batch` call (up to 1,000) may spend together (worst case about 30 ms). */
export const BATCH_MAX_OPERATIONS = 200_000;

/** Prefix of every error message of an exhausted budget (traces show it). */
export const BUDGET_EXHAUSTED = 'evaluation budget exhausted';

/**
 * Operations left to a group of decisions, such as the requests of one `evaluate/batch` call:
 * create one and pass it as `EvaluateOptions.budget` to each `evaluate` of the group.
 */
export class EvaluationBudget {
  /** Operations not yet spent (never below 0). */
  left: number;
  constructor(readonly limit: number = BATCH_MAX_OPERATIONS) {
    this.left = limit;
  }
}

/**
 * The operations of one decision, drawn from a group's {@link EvaluationBudget} when there is
 * one. Created only when a decision runs a rule, so a role-only check never touches a budget.
 */
export class DecisionBudget {
  /** Operations this decision may still spend. */
  left: number;
  private readonly start: number;
  private readonly capped: boolean;
  constructor(readonly group?: EvaluationBudget) {
    const fromGroup = group ? Math.max(0, group.left) : Infinity;
    this.capped = fromGroup < DECISION_MAX_OPERATIONS;
    this.start = this.left = this.capped ? fromGroup : DECISION_MAX_OPERATIONS;
  }

  /** Spends `n` when it is left (true), else spends nothing (false): the caller errors. */
  take(n: number): boolean {
    if (n > this.left) return false;
    this.left -= n;
    return true;
  }

  /** Why nothing (or not enough) is left, for the error message. */
  spent(): string {
    return this.capped && this.group
      ? `${BUDGET_EXHAUSTED}: the batch's ${this.group.limit} operations are spent`
      : `${BUDGET_EXHAUSTED}: the decision's ${DECISION_MAX_OPERATIONS} operations are spent`;
  }

  /** Charges what the decision spent to its group; call once, when the decision ends. */
  settle(): void {
    if (this.group) this.group.left = Math.max(0, this.group.left - (this.start - this.left));
  }
}
