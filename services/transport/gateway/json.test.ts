/**
 * checkMessage's quick answer (`passes`) may only say yes where the full check accepts: over
 * generated values shaped like the decision requests and every request message of the API,
 * mutated field by field, the quick yes always implies the full check's yes. And the requests
 * the decision path sees every time get the quick yes (that is its point).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { DescMessage } from '@bufbuild/protobuf';
import { EvaluateBatchRequestSchema, EvaluateRequestSchema } from '../../../gen/authz/v1/decision_service_pb.js';
import { CreateSubjectRequestSchema } from '../../../gen/authz/v1/subject_service_pb.js';
import { CreateResourcePolicyRequestSchema } from '../../../gen/authz/v1/policy_service_pb.js';
import { BatchCreateResourcesRequestSchema } from '../../../gen/authz/v1/resource_service_pb.js';
import { ImportEntitySchema } from '../../../gen/authz/v1/import_service_pb.js';
import { checkMessage, checkMessageFully, jsonStringsStorable, passes } from './json.js';
import { stringProblem } from '../guard.js';

const accepted = (desc: DescMessage, v: unknown) => {
  try {
    checkMessageFully(desc, v);
    return true;
  } catch {
    return false;
  }
};

/** A value for a field's slot: right types, wrong types, edge numbers, bad strings, nesting. */
const anyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.string(), fc.constantFrom('', 'a\u0000b', '\ud800', 'ok', '12', '-1', '1e3', ' 7 ', 'true'),
    fc.boolean(), fc.constant(null),
    fc.integer(), fc.constantFrom(-1, 0, 2 ** 31, 2 ** 32, -(2 ** 31) - 1, 2 ** 53, 1.5, -0, Number.MAX_VALUE),
    fc.double(),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('subjectId', 'subjectType', 'resourceId', 'minRevision', 'fullyConsistent', 'x', '__proto__', 'a'), tie('v'), { maxKeys: 3 }),
  ),
})).v;

/** An object with some of the message's JSON names (and a few strangers), each set to anything. */
function shaped(desc: DescMessage, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const keys = [...desc.fields.flatMap((f) => [f.jsonName, f.name]), 'bogus'];
  const slot = (k: string): fc.Arbitrary<unknown> => {
    const f = desc.fields.find((x) => x.jsonName === k || x.name === k);
    if (depth < 2 && f?.fieldKind === 'message') return fc.oneof(shaped(f.message, depth + 1), anyValue);
    return anyValue;
  };
  return fc.uniqueArray(fc.constantFrom(...keys), { maxLength: 5 }).chain((ks) =>
    ks.length === 0 ? fc.constant({}) : fc.tuple(...ks.map(slot)).map((vs) => Object.fromEntries(ks.map((k, i) => [k, vs[i]]))));
}

describe('checkMessage quick answer', () => {
  for (const desc of [EvaluateRequestSchema, EvaluateBatchRequestSchema, CreateSubjectRequestSchema, CreateResourcePolicyRequestSchema, BatchCreateResourcesRequestSchema, ImportEntitySchema]) {
    it(`never says yes where the full check says no: ${desc.typeName}`, () => {
      fc.assert(fc.property(fc.oneof(shaped(desc), anyValue), (v) => {
        if (passes(desc, v)) expect(accepted(desc, v), JSON.stringify(v)).toBe(true);
      }), { numRuns: 3000, seed: 20261126 });
    });
  }

  it('says yes to the requests of the decision path', () => {
    const asks = [
      { actor: { subjectId: 'subject_a' }, scopeId: 'scope_s', action: 'read' },
      { actor: { subjectId: 'subject_a', subjectType: 'user' }, scopeId: 'scope_s', action: 'read', resource: { resourceId: 'resource_r' }, explain: true },
      { actor: { subjectId: 'subject_a' }, scopeId: 'scope_s', action: 'read', resource: { externalResourceId: 'd1', resourceType: 'doc' }, consistency: { minRevision: 12 } },
    ];
    for (const a of asks) {
      expect(passes(EvaluateRequestSchema, a)).toBe(true);
      expect(accepted(EvaluateRequestSchema, a)).toBe(true);
    }
    // The long way for what it does not know: a context (Struct), a revision as a string.
    expect(passes(EvaluateRequestSchema, { ...asks[0], context: { a: 1 } })).toBe(false);
    expect(passes(EvaluateRequestSchema, { ...asks[0], consistency: { minRevision: '12' } })).toBe(false);
  });
});

describe('checkMessage and oneofs', () => {
  it('refuses two members of one oneof, naming the second (proto JSON sets at most one)', () => {
    const both = { resource: { type: 'doc', externalId: 'a' }, subject: { type: 'user', externalId: 'b' } };
    expect(() => checkMessage(ImportEntitySchema, both, 'entities[4]')).toThrow(
      'entities[4].subject: only one of resource, subject, resourceEdge, scopeLink, ownershipGrant, membership may be set; resource is set too',
    );
    expect(passes(ImportEntitySchema, both)).toBe(false);
    // A null member is not set.
    expect(() => checkMessage(ImportEntitySchema, { resource: { type: 'doc' }, subject: null })).not.toThrow();
  });
});

describe('jsonStringsStorable', () => {
  /** Every string of a parsed JSON value, keys too. */
  const strings = (v: unknown, out: string[] = []): string[] => {
    if (typeof v === 'string') out.push(v);
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) (out.push(k), strings(x, out));
    return out;
  };
  it('a UTF-8 body without a backslash parses to storable strings only', () => {
    // Arbitrary bytes inside a string and as a key: NULs, control bytes, surrogates encoded in
    // UTF-8 (ED A0 80), truncated sequences.
    const bytes = fc.uint8Array({ maxLength: 24 }).chain((b) => fc.constantFrom(...[0x00, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x5c, 0x22]).map((x) => Uint8Array.from([...b, x])));
    fc.assert(fc.property(bytes, bytes, (a, b) => {
      const body = Buffer.concat([Buffer.from('{"'), a, Buffer.from('":"'), b, Buffer.from('"}')]);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        return;
      }
      if (jsonStringsStorable(body)) for (const s of strings(parsed)) expect(stringProblem(s)).toBeNull();
    }), { numRuns: 20000, seed: 20261126 });
  });

  it('a body with an escaped NUL or lone surrogate is still refused, naming the field', () => {
    for (const bad of ['"a\\u0000b"', '"\\ud800"']) {
      const body = Buffer.from(`{"actor":{"subjectId":${bad}},"scopeId":"s","action":"read"}`);
      expect(jsonStringsStorable(body)).toBe(false);
      expect(() => checkMessage(EvaluateRequestSchema, JSON.parse(body.toString()), '', jsonStringsStorable(body))).toThrow(/actor\.subjectId/);
    }
  });
});
