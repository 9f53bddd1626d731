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
