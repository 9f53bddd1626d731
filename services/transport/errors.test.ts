import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import {
  alreadyExists, constraint, DomainError, duplicateId, invalid, limitExceeded, missingReference, notFound,
  permissionDenied, unauthenticated, unavailable,
} from '../common/errors.js';
import { ErrorInfoSchema, ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { toConnectError } from './errors.js';

describe('toConnectError', () => {
  const cases: Array<[DomainError, Code, ErrorReason, string]> = [
    [invalid('ownerScopeId', 'required'), Code.InvalidArgument, ErrorReason.INVALID_FIELD, 'ownerScopeId'],
    [duplicateId('items[3].id', 'scope_1'), Code.InvalidArgument, ErrorReason.DUPLICATE_ID, 'items[3].id'],
    [limitExceeded('items', 'at most 1000'), Code.InvalidArgument, ErrorReason.LIMIT, 'items'],
    [new DomainError('too_large', 'body too large'), Code.ResourceExhausted, ErrorReason.LIMIT, ''],
    [notFound('scope', 'scope_1', 'id'), Code.NotFound, ErrorReason.NOT_FOUND, 'id'],
    [alreadyExists('scope', 'scope_1', 'id'), Code.AlreadyExists, ErrorReason.ALREADY_EXISTS, 'id'],
    [missingReference('typeId', 'scope type', 'x'), Code.FailedPrecondition, ErrorReason.MISSING_REFERENCE, 'typeId'],
    [constraint('cycle'), Code.FailedPrecondition, ErrorReason.CONSTRAINT, ''],
    [unauthenticated('no key'), Code.Unauthenticated, ErrorReason.UNAUTHENTICATED, ''],
    [permissionDenied('tier'), Code.PermissionDenied, ErrorReason.TIER, ''],
    [unavailable('behind'), Code.Unavailable, ErrorReason.STALE, ''],
  ];
  for (const [err, code, reason, field] of cases) {
    it(`${err.kind} → ${Code[code]}`, () => {
      const ce = toConnectError(err);
      expect(ce.code).toBe(code);
      expect(ce.rawMessage).toBe(err.message);
      expect(ce.cause).toBe(err);
      const [info] = ce.findDetails(ErrorInfoSchema);
      expect(info.reason).toBe(reason);
      expect(info.field).toBe(field);
    });
  }

  it('passes ConnectErrors through unchanged', () => {
    const ce = new ConnectError('x', Code.Aborted);
    expect(toConnectError(ce)).toBe(ce);
  });

  it('turns anything else into a generic internal error, keeping the cause', () => {
    const boom = new Error('password=hunter2');
    const ce = toConnectError(boom);
    expect(ce.code).toBe(Code.Internal);
    expect(ce.rawMessage).toBe('internal error');
    expect(ce.cause).toBe(boom);
    expect(toConnectError('a string').code).toBe(Code.Internal);
  });

  it('recognises a DomainError from another copy of the module', () => {
    const foreign = Object.assign(new Error('scope x not found'), { name: 'DomainError', kind: 'not_found', field: 'id' });
    expect(toConnectError(foreign).code).toBe(Code.NotFound);
  });
});
