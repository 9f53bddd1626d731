/**
 * The one error type the client throws: the service's Connect code, its `authz.v1.ErrorInfo`
 * reason and the request field at fault, read from the error's details so callers can branch on
 * them without parsing messages.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, ErrorReason } from '../gen/authz/v1/error_reason_pb.js';

/** Connect's code names, as the REST error body spells them (`not_found`). */
const CODE_NAMES: Record<Code, string> = {
  [Code.Canceled]: 'canceled',
  [Code.Unknown]: 'unknown',
  [Code.InvalidArgument]: 'invalid_argument',
  [Code.DeadlineExceeded]: 'deadline_exceeded',
  [Code.NotFound]: 'not_found',
  [Code.AlreadyExists]: 'already_exists',
  [Code.PermissionDenied]: 'permission_denied',
  [Code.ResourceExhausted]: 'resource_exhausted',
  [Code.FailedPrecondition]: 'failed_precondition',
  [Code.Aborted]: 'aborted',
  [Code.OutOfRange]: 'out_of_range',
  [Code.Unimplemented]: 'unimplemented',
  [Code.Internal]: 'internal',
  [Code.Unavailable]: 'unavailable',
  [Code.DataLoss]: 'data_loss',
  [Code.Unauthenticated]: 'unauthenticated',
};

/** The name of a Connect code as the REST surface spells it. */
export function codeName(code: Code): string {
  return CODE_NAMES[code] ?? 'unknown';
}

/** An ErrorReason's name without its prefix (`INVALID_FIELD`), or undefined for UNSPECIFIED. */
function reasonName(reason: ErrorReason): string | undefined {
  if (reason === ErrorReason.UNSPECIFIED) return undefined;
  return ErrorReason[reason] ?? String(reason);
}

export interface AuthzErrorInit {
  /** The ErrorInfo reason's name, e.g. `INVALID_FIELD`. */
  reason?: string;
  /** The request field at fault, as a JSON path (`items[3].scopeId`). */
  field?: string;
  cause?: unknown;
}

/**
 * A failed call: `code` is the Connect code (`codeName` its REST spelling), `reason` and `field`
 * come from the service's `authz.v1.ErrorInfo` detail when it sent one. `message` is the
 * service's text without a code prefix.
 */
export class AuthzError extends Error {
  readonly code: Code;
  readonly reason: string | undefined;
  readonly field: string | undefined;

  constructor(message: string, code: Code, init: AuthzErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AuthzError';
    this.code = code;
    this.reason = init.reason;
    this.field = init.field;
  }

  /** The code as the REST surface spells it (`not_found`). */
  get codeName(): string {
    return codeName(this.code);
  }

  /** Any thrown value as an AuthzError (a ConnectError keeps its code, reason and field). */
  static from(err: unknown): AuthzError {
    if (err instanceof AuthzError) return err;
    const connect = ConnectError.from(err);
    const [info] = connect.findDetails(ErrorInfoSchema);
    return new AuthzError(connect.rawMessage, connect.code, {
      reason: info ? reasonName(info.reason) : undefined,
      field: info?.field || undefined,
      cause: err,
    });
  }
}
