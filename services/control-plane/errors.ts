import { Code } from '@connectrpc/connect';
import { ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { isDatabaseUnavailable } from '../store/db.js';
import { connectErrorWithInfo, type ErrorClassifier } from '../transport/errors.js';

/** The message clients see while the database cannot be reached (a transaction in flight was rolled back). */
export const DATABASE_UNAVAILABLE_MESSAGE = 'the database is unavailable; nothing was written; retry with backoff';

/**
 * The control plane's failures beyond domain errors: the database cannot be reached or cannot
 * serve (`unavailable`, reason DATABASE_UNAVAILABLE, so that clients retry); everything else
 * stays `internal`.
 */
export const storeErrors: ErrorClassifier = (err) =>
  isDatabaseUnavailable(err)
    ? connectErrorWithInfo(DATABASE_UNAVAILABLE_MESSAGE, Code.Unavailable, ErrorReason.DATABASE_UNAVAILABLE, undefined, undefined, err)
    : undefined;
