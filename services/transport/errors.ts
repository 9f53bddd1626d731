/**
 * The one mapper at the RPC boundary: domain errors become ConnectErrors with a standard code
 * and an `authz.v1.ErrorInfo` detail; a process may classify failures of its own (the control
 * plane: an unreachable database is `unavailable`); anything else becomes `internal` with a
 * generic message (the original stays in `cause`, for logging only).
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { DomainError, type DomainErrorKind } from '../common/errors.js';
import { ErrorInfoSchema, ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';

const KIND_TO_CODE: Record<DomainErrorKind, [Code, ErrorReason]> = {
  invalid: [Code.InvalidArgument, ErrorReason.INVALID_FIELD],
  duplicate_id: [Code.InvalidArgument, ErrorReason.DUPLICATE_ID],
  limit: [Code.InvalidArgument, ErrorReason.LIMIT],
  too_large: [Code.ResourceExhausted, ErrorReason.LIMIT],
  not_found: [Code.NotFound, ErrorReason.NOT_FOUND],
  already_exists: [Code.AlreadyExists, ErrorReason.ALREADY_EXISTS],
  missing_reference: [Code.FailedPrecondition, ErrorReason.MISSING_REFERENCE],
  constraint: [Code.FailedPrecondition, ErrorReason.CONSTRAINT],
  aborted: [Code.Aborted, ErrorReason.CONSTRAINT],
  unauthenticated: [Code.Unauthenticated, ErrorReason.UNAUTHENTICATED],
  permission_denied: [Code.PermissionDenied, ErrorReason.TIER],
  unavailable: [Code.Unavailable, ErrorReason.STALE],
  revision_mismatch: [Code.Aborted, ErrorReason.REVISION_MISMATCH],
  deadline_exceeded: [Code.DeadlineExceeded, ErrorReason.STALE],
  canceled: [Code.Canceled, ErrorReason.UNSPECIFIED],
};

/** The message clients see for any failure that is not a domain error. */
export const INTERNAL_MESSAGE = 'internal error';
/** Maps a failure a process knows (not a domain error) to its ConnectError, or undefined. */
export type ErrorClassifier = (err: unknown) => ConnectError | undefined;

/**
 * A ConnectError with an `authz.v1.ErrorInfo` detail. Use it where code outside the domain
 * layer (auth, gateway) needs to fail with a specific reason.
 */
export function connectErrorWithInfo(
  message: string,
  code: Code,
  reason: ErrorReason,
  field?: string,
  metadata?: ConstructorParameters<typeof Headers>[0],
  cause?: unknown,
): ConnectError {
  return new ConnectError(
    message,
    code,
    metadata,
    [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, field: field ?? '' }) }],
    cause,
  );
}

function isDomainError(err: unknown): err is DomainError {
  if (err instanceof DomainError) return true;
  // Tolerate a second copy of the module (test runners may load one per worker).
  return (
    err instanceof Error &&
    err.name === 'DomainError' &&
    typeof (err as Partial<DomainError>).kind === 'string' &&
    (err as DomainError).kind in KIND_TO_CODE
  );
}

/**
 * Maps any thrown value to a ConnectError: a DomainError to its code with an ErrorInfo
 * detail (reason and field), a ConnectError unchanged, what `classify` knows to its answer,
 * anything else to `internal` with the generic message "internal error" and the original as
 * `cause`.
 */
export function toConnectError(err: unknown, classify?: ErrorClassifier): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isDomainError(err)) {
    const [code, reason] = KIND_TO_CODE[err.kind];
    return connectErrorWithInfo(err.message, code, reason, err.field, undefined, err);
  }
  const known = classify?.(err);
  if (known) return known;
  return new ConnectError(INTERNAL_MESSAGE, Code.Internal, undefined, undefined, err);
}

/**
 * An interceptor that maps every error a handler (or an inner interceptor) throws, unary or
 * streaming, through toConnectError, and logs internal errors with their cause (and, as
 * warnings, `unavailable` ones a classifier produced).
 */
export function errorInterceptor(logger?: Logger, classify?: ErrorClassifier): Interceptor {
  return (next) => async (req) => {
    const map = (err: unknown): ConnectError => {
      const ce = toConnectError(err, classify);
      if (ce.code === Code.Internal && logger) {
        logger.error(
          { err: ce.cause ?? ce, service: req.service.typeName, method: req.method.name },
          'rpc failed with an internal error',
        );
      } else if (ce.code === Code.Unavailable && ce.cause !== undefined && logger) {
        logger.warn({ err: ce.cause, service: req.service.typeName, method: req.method.name }, `rpc failed: ${ce.rawMessage}`);
      }
      return ce;
    };
    let res;
    try {
      res = await next(req);
    } catch (err) {
      throw map(err);
    }
    if (!res.stream) return res;
    const inner = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* inner;
        } catch (err) {
          throw map(err);
        }
      })(),
    };
  };
}
