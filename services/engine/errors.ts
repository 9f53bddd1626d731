/**
 * Typed errors thrown by the engine. The RPC boundary maps them to Connect codes; nothing here
 * knows about transports.
 */

/** The evaluation or effective-permissions scope does not exist in the tenant (maps to `not_found`). */
export class ScopeNotFoundError extends Error {
  override readonly name = 'ScopeNotFoundError';
  constructor(readonly scopeId: string) {
    super(`scope ${scopeId} not found`);
  }
}

/** The resource named by an effective-permissions query does not exist (maps to `not_found`). */
export class ResourceNotFoundError extends Error {
  override readonly name = 'ResourceNotFoundError';
  constructor(readonly resourceId: string) {
    super(`resource ${resourceId} not found`);
  }
}

/**
 * A snapshot or change cannot be applied (malformed row, id mismatch). Nothing of the batch was
 * applied; the follower should resynchronise from a fresh snapshot.
 */
export class InvalidChangeError extends Error {
  override readonly name = 'InvalidChangeError';
}

/**
 * An external id names several subjects and the request does not say which (maps to
 * `invalid_argument`). `types` are their distinct types, sorted: with more than one, a
 * `subjectType` picks among them; with one, the subjects share a type and no type can.
 */
export class AmbiguousSubjectError extends Error {
  override readonly name = 'AmbiguousSubjectError';
  constructor(
    readonly externalId: string,
    readonly count: number,
    readonly types: readonly string[],
  ) {
    super(
      types.length > 1
        ? `external id ${JSON.stringify(externalId)} names ${count} subjects of types ${types.join(', ')}: give subjectType`
        : `external id ${JSON.stringify(externalId)} names ${count} subjects of type ${types[0]}: use subjectId`,
    );
  }

  /** Whether a subject type would tell the subjects apart. */
  get typeWouldPick(): boolean {
    return this.types.length > 1;
  }
}
