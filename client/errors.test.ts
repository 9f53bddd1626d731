import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { EvaluateResponseSchema } from '../gen/authz/v1/decision_service_pb.js';
import { ErrorInfoSchema, ErrorReason } from '../gen/authz/v1/error_reason_pb.js';
import { AuthzError, codeName } from './errors.js';
import { toRestJson } from './rest-json.js';

describe('AuthzError.from', () => {
  it('keeps a ConnectError\'s code and message, and reads reason and field from its ErrorInfo', () => {
    const info = create(ErrorInfoSchema, { reason: ErrorReason.MISSING_REFERENCE, field: 'items[2].scopeId' });
    const e = AuthzError.from(new ConnectError('items[2].scopeId: scope s not found', Code.FailedPrecondition, undefined, [{ desc: ErrorInfoSchema, value: info }]));
    expect([e.code, e.codeName, e.reason, e.field, e.message, e.name]).toEqual([
      Code.FailedPrecondition,
      'failed_precondition',
      'MISSING_REFERENCE',
      'items[2].scopeId',
      'items[2].scopeId: scope s not found',
      'AuthzError',
    ]);
  });

  it('leaves reason and field undefined without an ErrorInfo, or with an empty one', () => {
    const bare = AuthzError.from(new ConnectError('no', Code.Internal));
    expect([bare.codeName, bare.reason, bare.field]).toEqual(['internal', undefined, undefined]);
    const empty = AuthzError.from(new ConnectError('no', Code.Internal, undefined, [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema) }]));
    expect([empty.reason, empty.field]).toEqual([undefined, undefined]);
  });

  it('makes any other failure `unknown`, keeping it as the cause, and returns an AuthzError as it is', () => {
    const cause = new Error('socket hang up');
    const e = AuthzError.from(cause);
    expect([e.codeName, e.message, e.cause]).toEqual(['unknown', 'socket hang up', cause]);
    expect(AuthzError.from(e)).toBe(e);
  });

  it('spells every code as the REST surface does', () => {
    expect([Code.NotFound, Code.Unauthenticated, Code.ResourceExhausted, Code.DeadlineExceeded].map(codeName)).toEqual(['not_found', 'unauthenticated', 'resource_exhausted', 'deadline_exceeded']);
  });
});

describe('toRestJson', () => {
  it('writes implicit fields and 64-bit integers as numbers, and leaves Struct values as they are', () => {
    const r = create(EvaluateResponseSchema, {
      allowed: false,
      revision: 42n,
      trace: [{ step: 'policy', result: 'fail', message: 'm', details: { priority: 10, big: '12345678901234567890' } }],
      evaluatedPolicy: { id: 'policy_1', priority: 0, effect: 'deny' },
    });
    expect(toRestJson(EvaluateResponseSchema, r)).toEqual({
      allowed: false,
      decidedByPolicy: false,
      reason: '',
      revision: 42,
      trace: [{ step: 'policy', result: 'fail', message: 'm', details: { priority: 10, big: '12345678901234567890' } }],
      evaluatedPolicy: expect.objectContaining({ id: 'policy_1', priority: 0, effect: 'deny', actions: [] }),
    });
  });
});
