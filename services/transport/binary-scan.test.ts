import { create, fromJson, toBinary, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EvaluateBatchRequestSchema, EvaluateRequestSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { binaryRequestProblem } from './binary-scan.js';
import { MAX_JSON_ENTRIES, MAX_JSON_VALUE_BYTES, MAX_UNKNOWN_FIELDS } from './request-limits.js';

const evaluate = (context?: JsonObject) =>
  toBinary(EvaluateRequestSchema, fromJson(EvaluateRequestSchema, { actor: { subjectId: 'subject_a' }, scopeId: 'scope_a', action: 'read', ...(context ? { context } : {}) }));
const hex = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');
const problem = (bytes: Uint8Array) => binaryRequestProblem(EvaluateRequestSchema, bytes);

describe('binaryRequestProblem', () => {
  it('passes what protobuf-es writes', () => {
    expect(problem(evaluate({ a: [1, 'two', null, true, { b: [] }] }))).toBeNull();
    expect(binaryRequestProblem(EvaluateBatchRequestSchema, toBinary(EvaluateBatchRequestSchema, create(EvaluateBatchRequestSchema, { requests: [{ scopeId: 's' }, { action: 'a' }] })))).toBeNull();
  });

  it('refuses a declared field sent with another wire type, naming it', () => {
    expect(problem(hex('1005'))).toMatchObject({ field: 'scopeId', message: expect.stringContaining('a varint') });
    expect(problem(hex('0801'))).toMatchObject({ field: 'actor' });
    expect(problem(hex('1d01020304'))).toMatchObject({ field: 'action' });
  });

  it('refuses a varint over 10 bytes, a length past its message, a group, field number 0', () => {
    expect(problem(hex('3a0c 08 ffffffffffffffffffff01'))).toMatchObject({ field: 'consistency.minRevision', message: expect.stringContaining('longer than 10 bytes') });
    expect(problem(hex('12 05 61'))).toMatchObject({ field: 'scopeId', message: expect.stringContaining('past the end') });
    expect(problem(hex('7b'))).toMatchObject({ message: expect.stringContaining('groups') });
    expect(problem(hex('00'))).toMatchObject({ message: expect.stringContaining('field number 0') });
  });

  it('refuses malformed UTF-8 and NUL in strings, Struct keys included', () => {
    expect(problem(hex('1a 02 72ff'))).toMatchObject({ field: 'action', message: 'must be valid UTF-8' });
    expect(problem(hex('1a 03 ed a0 80'))).toMatchObject({ field: 'action', message: 'must be valid UTF-8' });
    expect(problem(hex('1a 02 7200'))).toMatchObject({ field: 'action', message: expect.stringContaining('NUL') });
    // context (5) { fields (1) { key (1) "\xff", value (2) { null_value (1) 0 } } }
    expect(problem(hex('2a 09 0a 07 0a 01 ff 12 02 08 00'))).toMatchObject({ field: 'context', message: 'must be valid UTF-8' });
  });

  it('bounds repeated fields, Struct entries and unknown fields as it goes', () => {
    const items = Buffer.alloc(2 * 1_001, hex('0a00'));
    expect(binaryRequestProblem(EvaluateBatchRequestSchema, items)).toMatchObject({ field: 'requests', limit: true, message: expect.stringContaining('at most 1000') });
    const unknown = Buffer.alloc(2 * (MAX_UNKNOWN_FIELDS + 1), hex('7800'));
    expect(problem(unknown)).toMatchObject({ limit: true, message: expect.stringContaining(`more than ${MAX_UNKNOWN_FIELDS} fields`) });
    expect(problem(Buffer.alloc(2 * MAX_UNKNOWN_FIELDS, hex('7800')))).toBeNull();
    // No JSON value within 16 KiB holds that many entries: the size refuses it first.
    const list = (n: number) => evaluate({ xs: Array.from({ length: n }, () => 0) });
    expect(problem(list(MAX_JSON_ENTRIES + 1))).toMatchObject({ field: 'context', limit: true });
  });

  it('names a too deep JSON value by the field that holds it', () => {
    let deep: JsonValue = 1;
    for (let i = 0; i < 500; i++) deep = { a: deep };
    expect(problem(evaluate({ deep } as JsonObject))).toMatchObject({ field: 'context', limit: true, message: expect.stringContaining('nests deeper') });
  });

  it('refuses a JSON value over 16 KiB of JSON before it is decoded, and never one within it', () => {
    // A lower bound of the value's JSON is counted as it is scanned: never more than the real size.
    const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);
    fc.assert(fc.property(fc.dictionary(fc.string(), json), (context) => {
      const size = Buffer.byteLength(JSON.stringify(context));
      const p = problem(evaluate(context));
      if (size <= MAX_JSON_VALUE_BYTES) expect(p).toBeNull();
      else if (p !== null) expect(p).toMatchObject({ field: 'context', message: `is larger than ${MAX_JSON_VALUE_BYTES} bytes of JSON` });
    }), { numRuns: 300 });
    const small = Array.from({ length: MAX_JSON_ENTRIES }, () => ({ a: 'b' }));
    expect(problem(evaluate({ small }))).toMatchObject({ field: 'context', limit: true, message: `is larger than ${MAX_JSON_VALUE_BYTES} bytes of JSON` });
    const justUnder = 'x'.repeat(MAX_JSON_VALUE_BYTES - '{"s":""}'.length);
    expect(problem(evaluate({ s: justUnder }))).toBeNull();
    expect(problem(evaluate({ s: `${justUnder}x` }))).toMatchObject({ field: 'context' });
  });
});
