/**
 * The lean path's decision bytes equal protobuf-es's (what connect-node sends for the same
 * decision, through responseOf): Connect JSON, REST JSON (int64 as numbers) and binary, for one
 * decision and for a batch, over the engine's decision table and over generated decisions whose
 * trace details hold every kind of value JSON.stringify meets.
 */
import { readFileSync } from 'node:fs';
import { create, toBinary, toJsonString, type JsonValue } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EvaluateBatchResponseSchema, EvaluateResponseSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { evaluate, type EvaluateRequest, type GateMode } from '../engine/evaluate.js';
import { TenantIndex } from '../engine/tenant-index/mod.js';
import type { Decision, Policy, TenantSnapshot, TraceStep } from '../engine/mod.js';
import { int64ToNumbers } from '../transport/gateway/json.js';
import { JSON_OPTIONS } from '../transport/server.js';
import { responseOf } from './connect.js';
import { batchBinary, batchJson, decisionBinary, decisionJson } from './response-codec.js';

function expectSameBytes(ds: Decision[]): void {
  for (const d of ds) {
    const message = responseOf(d);
    const connect = toJsonString(EvaluateResponseSchema, message, JSON_OPTIONS);
    expect(decisionJson(d, false)).toBe(connect);
    expect(decisionJson(d, true)).toBe(JSON.stringify(int64ToNumbers(EvaluateResponseSchema, JSON.parse(connect) as JsonValue)));
    expect(Buffer.from(decisionBinary(d)).toString('hex')).toBe(Buffer.from(toBinary(EvaluateResponseSchema, message)).toString('hex'));
  }
  const batch = create(EvaluateBatchResponseSchema, { results: ds.map(responseOf) });
  const connect = toJsonString(EvaluateBatchResponseSchema, batch, JSON_OPTIONS);
  expect(batchJson(ds, false)).toBe(connect);
  expect(batchJson(ds, true)).toBe(JSON.stringify(int64ToNumbers(EvaluateBatchResponseSchema, JSON.parse(connect) as JsonValue)));
  expect(Buffer.from(batchBinary(ds)).toString('hex')).toBe(Buffer.from(toBinary(EvaluateBatchResponseSchema, batch)).toString('hex'));
}

interface Table {
  defaults: { gate: GateMode; now: string };
  tenant: TenantSnapshot;
  cases: { gate?: GateMode; now?: string; request: EvaluateRequest; expectError?: string }[];
}

describe('decision bytes without protobuf-es', () => {
  it('equal protobuf-es for every decision of the table, explained and not', () => {
    const table = JSON.parse(readFileSync(new URL('../engine/testdata/decisions.json', import.meta.url), 'utf8')) as Table;
    const index = TenantIndex.fromSnapshot(table.tenant);
    const ds: Decision[] = [];
    for (const c of table.cases) {
      if (c.expectError) continue;
      for (const explain of [false, true]) {
        const d = evaluate(index, { ...c.request, explain }, { now: new Date(c.now ?? table.defaults.now), gate: c.gate ?? table.defaults.gate });
        try {
          responseOf(d);
        } catch {
          // A policy with a malformed time (the table's fail-closed rows; the control plane
          // refuses them): protobuf-es cannot write it, and neither does the codec.
          expect(() => decisionJson(d, false)).toThrow();
          expect(() => decisionBinary(d)).toThrow();
          continue;
        }
        ds.push(d);
      }
    }
    expect(ds.filter((d) => d.evaluatedPolicy).length).toBeGreaterThan(5);
    expect(ds.filter((d) => d.trace && d.trace.length > 3).length).toBeGreaterThan(50);
    expectSameBytes(ds);
  });

  it('a decision with nothing set still writes every implicit field in JSON, none in binary', () => {
    const d = { allowed: false, decidedByPolicy: false, reason: '', revision: 0 } as unknown as Decision;
    expect(decisionJson(d, true)).toBe('{"allowed":false,"decidedByPolicy":false,"reason":"","revision":0,"trace":[]}');
    expect(decisionBinary(d).length).toBe(0);
    expectSameBytes([d]);
  });

  it('equal protobuf-es for generated decisions, policies and trace details', () => {
    // Not `__proto__`: protobuf-es drops that key from a Struct; the engine's detail keys are its own.
    const key = fc.oneof(fc.string(), fc.constantFrom('constructor', 'toString', '0', '10', '-1', '')).filter((k) => k !== '__proto__');
    const leaf = fc.oneof(
      fc.string(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.double(), fc.integer(),
      fc.constantFrom(-0, NaN, Infinity, 2 ** 53, 1e21, 5e-324), fc.date({ noInvalidDate: true }),
      fc.string({ unit: 'binary', maxLength: 8 }), // lone surrogates and astral characters
    );
    const { detail } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 4 }), tie('detail')),
      detail: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
    }));
    const step: fc.Arbitrary<TraceStep> = fc.record(
      { leg: fc.string(), outcome: fc.string(), message: fc.string({ unit: 'grapheme' }), detail: detail as fc.Arbitrary<Record<string, unknown>> },
      { requiredKeys: ['leg', 'outcome', 'message'] },
    ) as fc.Arbitrary<TraceStep>;
    const timestamp = fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((t) => t.toISOString());
    const policy: fc.Arbitrary<Policy> = fc.record({
      id: fc.string(), scopeId: fc.string(),
      target: fc.oneof(fc.record({ kind: fc.constant('resource' as const), resourceId: fc.string() }), fc.record({ kind: fc.constant('collection' as const), collectionId: fc.string() })),
      actions: fc.array(fc.string(), { maxLength: 3 }),
      effect: fc.constantFrom('allow' as const, 'deny' as const),
      priority: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      subjectCondition: detail as fc.Arbitrary<never>,
      contextCondition: detail as fc.Arbitrary<never>,
      validFrom: fc.option(timestamp),
      validUntil: fc.option(timestamp),
    }, { requiredKeys: ['id', 'scopeId', 'target', 'actions', 'effect', 'priority'] });
    const decision: fc.Arbitrary<Decision> = fc.record({
      allowed: fc.boolean(), decidedByPolicy: fc.boolean(), reason: fc.string(),
      revision: fc.oneof(fc.constantFrom(0, 127, 128, 16_383, 16_384, 2 ** 31, Number.MAX_SAFE_INTEGER), fc.nat()),
      evaluatedPolicy: policy,
      trace: fc.array(step, { maxLength: 4 }),
    }, { requiredKeys: ['allowed', 'decidedByPolicy', 'reason', 'revision'] }) as fc.Arbitrary<Decision>;
    fc.assert(fc.property(fc.array(decision, { minLength: 1, maxLength: 4 }), (ds) => expectSameBytes(ds)), { numRuns: 500 });
  });

  it('a long field moves its content past a length of several bytes', () => {
    // Lengths around each varint size boundary (1, 2, 3 bytes), in a step and in the batch.
    for (const n of [100, 127, 128, 129, 16_000, 16_383, 16_384, 16_500, 2_100_000]) {
      const d: Decision = { allowed: true, decidedByPolicy: false, reason: 'role', revision: 7, trace: [{ leg: 'role', outcome: 'allow', message: 'x'.repeat(n) }] };
      expectSameBytes([d, d]);
    }
  });
});
