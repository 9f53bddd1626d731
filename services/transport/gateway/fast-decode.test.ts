import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { fromJson, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { ImportBatchRequestSchema } from '../../../gen/authz/v1/import_service_pb.js';
import { BatchCreateResourcesRequestSchema } from '../../../gen/authz/v1/resource_service_pb.js';
import { EvaluateRequestSchema } from '../../../gen/authz/v1/decision_service_pb.js';
import { CreateTagGroupRequestSchema } from '../../../gen/authz/v1/tag_service_pb.js';
import { decodeFast } from './fast-decode.js';

const decoded = (desc: DescMessage, json: JsonValue) => fromJson(desc, json, { ignoreUnknownFields: false });

/** decodeFast must equal fromJson wherever it answers (property by property, no extra keys). */
function same(desc: DescMessage, generated: JsonValue) {
  // As a body arrives: parsed JSON text (plain objects, own keys only).
  const json = JSON.parse(JSON.stringify(generated)) as JsonValue;
  const fast = decodeFast(desc, json);
  // A `__proto__` key inside a Struct is left to fromJson; everything else is decoded fast.
  if (hasProtoKey(json)) {
    expect(fast).toBeUndefined();
  } else {
    expect(fast, JSON.stringify(json)).toBeDefined();
    expect(fast).toStrictEqual(decoded(desc, json));
  }
}

/** Whether a `__proto__` key occurs anywhere (JSON.parse makes it an own key; fromJson drops it). */
const hasProtoKey = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && (Array.isArray(v) ? v.some(hasProtoKey) : Object.keys(v).some((k) => k === '__proto__' || hasProtoKey((v as Record<string, unknown>)[k])));

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constant('__proto__'));
const struct = fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constant('__proto__')), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) as fc.Arbitrary<Record<string, JsonValue>>;
const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const compact = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
const resourceRef = fc.record({ type: text, externalId: text }, { requiredKeys: [] });
const subjectRef = fc.record({ externalId: text, type: text }, { requiredKeys: [] });
const entity = fc.oneof(
  fc.record({ type: text, externalId: text, scopeId: optional(text), displayName: optional(text), attributes: optional(struct) }).map((v) => ({ resource: compact(v) })),
  fc.record({ type: text, externalId: text, metadata: optional(struct) }).map((v) => ({ subject: compact(v) })),
  fc.record({ parent: resourceRef, child: resourceRef, cascade: text, relationshipType: optional(text) }).map((v) => ({ resourceEdge: compact(v) })),
  fc.record({ resource: resourceRef, scopeId: text, linkType: text, metadata: optional(struct) }).map((v) => ({ scopeLink: compact(v) })),
  fc.record({ subject: subjectRef, resource: resourceRef, role: text }).map((v) => ({ ownershipGrant: v })),
  fc.record({ subject: subjectRef, scopeId: optional(text), roles: fc.array(text, { maxLength: 3 }) }).map((v) => ({ membership: compact(v) })),
  fc.constant({}),
);

describe('decodeFast', () => {
  it('equals fromJson on import batches', () => {
    fc.assert(fc.property(
      fc.record({ tenantId: text, importId: text, sequence: fc.nat(), firstLine: fc.nat(), entities: fc.array(entity, { maxLength: 6 }) }, { requiredKeys: [] }),
      (json) => same(ImportBatchRequestSchema, json as JsonValue),
    ), { numRuns: 300 });
  });

  it('equals fromJson on resource batches', () => {
    const item = fc.record({ id: text, resourceTypeId: text, ownerScopeId: text, externalResourceId: text, displayName: text, attributes: struct }, { requiredKeys: [] });
    fc.assert(fc.property(fc.array(item, { maxLength: 5 }), (items) => same(BatchCreateResourcesRequestSchema, { items } as JsonValue)), { numRuns: 200 });
  });

  it('equals fromJson on a message with int32 and bool fields', () => {
    same(CreateTagGroupRequestSchema, { scopeId: 's', name: 'n', key: 'k', maxAppliedPerTarget: 3, isLocked: true });
    same(CreateTagGroupRequestSchema, {});
  });

  it('leaves to fromJson what it does not take', () => {
    const entity = { resource: { type: 'doc', externalId: 'x' } };
    for (const json of [
      { importId: null }, // null: the field's default, by the proto JSON rules
      { import_id: 'x' }, // the proto name
      { sequence: '3' }, // an integer as a string
      { sequence: -1 }, // out of range for uint32
      { sequence: 1.5 },
      { entities: [null] },
      { entities: {} },
      { entities: [{ ...entity, subject: { type: 'user', externalId: 'y' } }] }, // two members of one oneof
      { entities: [{ resource: { type: 'doc', nope: 1 } }] }, // a key no field has
      { entities: [{ resource: { type: 'doc', attributes: [] } }] }, // a Struct must be an object
      { entities: [{ resource: { type: 7 } }] },
      { entities: [{ resource: { attributes: JSON.parse('{"a": [{"__proto__": {"x": 1}}]}') } }] }, // a key the reflective decoder does not keep
      [entity],
      'text',
    ]) {
      expect(decodeFast(ImportBatchRequestSchema, json as JsonValue), JSON.stringify(json)).toBeUndefined();
    }
    // Enums, 64-bit integers and other well-known types go the reflective way.
    expect(decodeFast(EvaluateRequestSchema, { actor: { subjectId: 'a' }, consistency: { minRevision: 3 } })).toBeUndefined();
    expect(decodeFast(EvaluateRequestSchema, { actor: { subjectId: 'a' }, scopeId: 's', action: 'read' })).toStrictEqual(
      decoded(EvaluateRequestSchema, { actor: { subjectId: 'a' }, scopeId: 's', action: 'read' }),
    );
  });
});
