import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema, ErrorReason } from '../../gen/authz/v1/error_reason_pb.js';
import { toConnectError } from '../transport/errors.js';
import { storeErrors } from './errors.js';

describe('database outages', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const outages: [string, unknown][] = [
    ['connection refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['admin shutdown (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['cannot connect now (57P03)', withCode('57P03')],
    ['too many connections (53300)', withCode('53300')],
    ['connection exception (08006)', withCode('08006')],
    ['database refusing connections', withCode('55000', 'database "x" is not currently accepting connections')],
    ['a wrapped cause', Object.assign(new Error('query failed'), { cause: withCode('ECONNRESET') })],
    ['pool timeout', Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' })],
    ['terminated mid-query', new Error('Connection terminated unexpectedly')],
  ];
  for (const [what, err] of outages) {
    it(`${what} → unavailable, retryable, without internals`, () => {
      const ce = toConnectError(err, storeErrors);
      expect(Code[ce.code]).toBe('Unavailable');
      expect(ce.findDetails(ErrorInfoSchema)[0]?.reason).toBe(ErrorReason.DATABASE_UNAVAILABLE);
      expect(ce.rawMessage).not.toContain('5432');
    });
  }
  it('a query the database refuses for its content stays internal', () => {
    for (const err of [withCode('42P01', 'relation does not exist'), withCode('22P05', 'unsupported Unicode escape sequence'), new Error('boom')]) {
      expect(Code[toConnectError(err, storeErrors).code]).toBe('Internal');
    }
  });
});
