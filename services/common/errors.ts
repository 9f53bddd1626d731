/**
 * Domain errors. Store and use-case code throw these; one mapper at the RPC boundary
 * (control-plane/errors.ts) turns them into Connect codes. `field` is the JSON path of the
 * request field at fault (`items[3].scopeId`), when there is one.
 */
export type DomainErrorKind =
  | 'invalid' // invalid_argument (400)
  | 'duplicate_id' // invalid_argument (400): two batch items share an id
  | 'limit' // invalid_argument (400): a size or depth limit
  | 'too_large' // resource_exhausted: the request body is over the limit
  | 'not_found' // not_found (404): the addressed entity does not exist
  | 'already_exists' // already_exists (409)
  | 'missing_reference' // failed_precondition (400): a referenced entity does not exist
  | 'constraint' // failed_precondition (400): a model rule (cycle, lock, limit, ...)
  | 'aborted' // aborted (409): a sequence check failed (a batch ahead of the one it follows); send it again
  | 'unauthenticated' // unauthenticated (401)
  | 'permission_denied' // permission_denied (403)
  | 'unavailable' // unavailable (503)
  | 'revision_mismatch' // aborted (409): the tenant is not at the revision the request expected
  | 'deadline_exceeded' // deadline_exceeded (504): the caller's deadline ended a wait
  | 'canceled'; // canceled: the caller went away during a wait (nobody reads the answer)

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (field: string, message: string) => new DomainError('invalid', `${field}: ${message}`, field);
export const duplicateId = (field: string, id: string) =>
  new DomainError('duplicate_id', `${field}: id ${id} appears more than once in the batch`, field);
export const limitExceeded = (field: string, message: string) => new DomainError('limit', `${field}: ${message}`, field);
export const notFound = (what: string, id: string, field?: string) =>
  new DomainError('not_found', `${what} ${id} not found`, field);
export const alreadyExists = (what: string, id: string, field?: string) =>
  new DomainError('already_exists', `${what} ${id} already exists`, field);
export const missingReference = (field: string, what: string, id: string) =>
  new DomainError('missing_reference', `${field}: ${what} ${id} does not exist`, field);
export const constraint = (message: string, field?: string) =>
  new DomainError('constraint', field ? `${field}: ${message}` : message, field);
export const aborted = (message: string, field?: string) => new DomainError('aborted', field ? `${field}: ${message}` : message, field);
export const unauthenticated = (message: string) => new DomainError('unauthenticated', message);
export const permissionDenied = (message: string, field?: string) => new DomainError('permission_denied', message, field);
export const unavailable = (message: string) => new DomainError('unavailable', message);
export const revisionMismatch = (message: string, field?: string) => new DomainError('revision_mismatch', message, field);
export const deadlineExceeded = (message: string) => new DomainError('deadline_exceeded', message);
export const canceled = (message: string) => new DomainError('canceled', message);
