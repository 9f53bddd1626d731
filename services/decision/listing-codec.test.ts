/**
 * The lean path's listing bytes equal protobuf-es's (what connect-node sends for the same page,
 * through connect.ts's resourceMessage and subjectMessage): Connect JSON, REST JSON (the
 * revision as a number, the cursor moved out of the body, as the gateway answers) and binary,
 * for pages the engine lists from the decision table's tenant (explained grants of every reason)
 * and for generated pages (every combination of grant fields, empty pages and strings, cursors,
 * unicode and lone surrogates, revisions around each varint size).
 */
import { readFileSync } from 'node:fs';
import { create, toBinary, toJsonString, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LookupResourcesResponseSchema, LookupSubjectsResponseSchema } from '../../gen/authz/v1/decision_service_pb.js';
import { lookupResources, lookupSubjects, TenantIndex, type ResourceRef, type SubjectGrant, type TenantSnapshot, type TraceStep } from '../engine/mod.js';
import { int64ToNumbers } from '../transport/gateway/json.js';
import { JSON_OPTIONS } from '../transport/server.js';
import { resourceMessage, subjectMessage } from './connect.js';
import { resourcesBinary, resourcesJson, subjectsBinary, subjectsJson } from './listing-codec.js';
import type { LookupResourcesOut } from './lookup.js';
import type { LookupSubjectsOut } from './lookup-subjects.js';

/** The REST body the gateway makes of connect-node's JSON (gateway.ts restPayload). */
function restOf(schema: typeof LookupResourcesResponseSchema | typeof LookupSubjectsResponseSchema, connect: string): string {
  const obj = int64ToNumbers(schema, JSON.parse(connect) as JsonValue) as JsonObject;
  delete obj.nextCursor;
  return JSON.stringify(obj);
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function expectSameResources(page: LookupResourcesOut): void {
  const message = create(LookupResourcesResponseSchema, { resources: page.resources.map(resourceMessage), nextCursor: page.nextCursor, revision: BigInt(page.revision) });
  const connect = toJsonString(LookupResourcesResponseSchema, message, JSON_OPTIONS);
  expect(resourcesJson(page, 'connect')).toBe(connect);
  expect(resourcesJson(page, 'rest')).toBe(restOf(LookupResourcesResponseSchema, connect));
  expect(hex(resourcesBinary(page))).toBe(hex(toBinary(LookupResourcesResponseSchema, message)));
}

function expectSameSubjects(page: LookupSubjectsOut): void {
  const message = create(LookupSubjectsResponseSchema, { subjects: page.subjects.map(subjectMessage), nextCursor: page.nextCursor, revision: BigInt(page.revision) });
  const connect = toJsonString(LookupSubjectsResponseSchema, message, JSON_OPTIONS);
  expect(subjectsJson(page, 'connect')).toBe(connect);
  expect(subjectsJson(page, 'rest')).toBe(restOf(LookupSubjectsResponseSchema, connect));
  expect(hex(subjectsBinary(page))).toBe(hex(toBinary(LookupSubjectsResponseSchema, message)));
}

interface Table {
  defaults: { now: string };
  tenant: TenantSnapshot;
  cases: { request: { scopeId: string; action: string; resource?: ResourceRef }; expectError?: string }[];
}

describe('listing bytes without protobuf-es', () => {
  it('equal protobuf-es for the pages the engine lists from the decision table, explained and not', () => {
    const table = JSON.parse(readFileSync(new URL('../engine/testdata/decisions.json', import.meta.url), 'utf8')) as Table;
    const index = TenantIndex.fromSnapshot(table.tenant);
    const options = { now: new Date(table.defaults.now), gate: 'off' as const };
    const reasons = new Set<string>();
    let resources = 0;
    for (const c of table.cases) {
      if (c.expectError) continue;
      const { scopeId, action, resource } = c.request;
      for (const explain of [false, true]) {
        let page;
        try {
          page = lookupSubjects(index, { scopeId, action, resource, pageSize: 3, explain }, options);
        } catch {
          continue; // an unknown scope: answered as an error, no page
        }
        const out: LookupSubjectsOut = {
          subjects: page.subjects.map(({ subject, grant }) => ({ id: subject.id, externalId: subject.externalId, type: subject.type, grant })),
          nextCursor: page.last === undefined ? '' : `cursor-after-${page.last}`,
          revision: page.revision,
        };
        for (const s of out.subjects) if (s.grant) reasons.add(s.grant.reason);
        expectSameSubjects(out);
      }
      for (const subject of table.tenant.rows.subject ?? []) {
        try {
          const page = lookupResources(index, { actor: { subjectId: subject.id }, scopeId, action, pageSize: 5 }, options);
          resources += page.resources.length;
          expectSameResources({ resources: page.resources, nextCursor: page.last ?? '', revision: page.revision });
        } catch {
          // an unknown scope or an ambiguous subject: answered as an error, no page
        }
      }
    }
    expect([...reasons].sort()).toEqual(['inherited', 'ownership', 'policy_allow', 'role']);
    expect(resources).toBeGreaterThan(100);
  });

  it('an empty last page still writes every implicit field in JSON, none in binary', () => {
    expect(subjectsJson({ subjects: [], nextCursor: '', revision: 0 }, 'connect')).toBe('{"subjects":[],"nextCursor":"","revision":"0"}');
    expect(subjectsJson({ subjects: [], nextCursor: '', revision: 0 }, 'rest')).toBe('{"subjects":[],"revision":0}');
    expect(resourcesBinary({ resources: [], nextCursor: '', revision: 0 }).length).toBe(0);
    expectSameSubjects({ subjects: [], nextCursor: '', revision: 0 });
    expectSameResources({ resources: [], nextCursor: '', revision: 0 });
    expectSameSubjects({ subjects: [{ id: '', externalId: '', type: '' }], nextCursor: 'c', revision: 1 });
    expectSameResources({ resources: [{ id: '', externalResourceId: '', resourceType: '', ownerScopeId: '' }], nextCursor: '', revision: 2 ** 53 - 1 });
  });

  it('equal protobuf-es for generated pages', () => {
    // Lone surrogates and astral characters, and the ordinary ids.
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 8 }), fc.constant(''));
    const revision = fc.oneof(fc.constantFrom(0, 1, 127, 128, 16_383, 16_384, 2 ** 31, Number.MAX_SAFE_INTEGER), fc.nat());
    const leaf = fc.oneof(fc.string(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.double(), fc.integer(), fc.date({ noInvalidDate: true }));
    const detail = fc.dictionary(fc.string().filter((k) => k !== '__proto__'), fc.oneof(leaf, fc.array(leaf, { maxLength: 3 }), fc.dictionary(fc.string().filter((k) => k !== '__proto__'), leaf, { maxKeys: 3 })), { maxKeys: 4 });
    const step = fc.record({ leg: fc.string(), outcome: fc.string(), message: text, detail }, { requiredKeys: ['leg', 'outcome', 'message'] }) as fc.Arbitrary<TraceStep>;
    // Every optional id may be absent, empty or set, in any combination.
    const grant = fc.record({
      reason: fc.oneof(fc.constantFrom('role', 'ownership', 'inherited', 'policy_allow', ''), fc.string()),
      roleId: text, membershipId: text, tagBindingId: text, ownershipGrantId: text, sourceScopeId: text, ancestorResourceId: text, policyId: text,
      trace: fc.array(step, { maxLength: 3 }),
    }, { requiredKeys: ['reason', 'trace'] }) as fc.Arbitrary<SubjectGrant>;
    const subject = fc.record({ id: text, externalId: text, type: text, grant }, { requiredKeys: ['id', 'externalId', 'type'] });
    const resource = fc.record({ id: text, externalResourceId: text, resourceType: text, ownerScopeId: text });
    fc.assert(fc.property(fc.array(subject, { maxLength: 6 }), text, revision, (subjects, nextCursor, r) => expectSameSubjects({ subjects, nextCursor, revision: r })), { numRuns: 400 });
    fc.assert(fc.property(fc.array(resource, { maxLength: 6 }), text, revision, (resources, nextCursor, r) => expectSameResources({ resources, nextCursor, revision: r })), { numRuns: 400 });
  });

  it('a page of 1,000 and a long field move their content past a length of several bytes', () => {
    const subjects = Array.from({ length: 1000 }, (_, i) => ({ id: `subject_${String(i).padStart(7, '0')}`, externalId: `u${i}`, type: 'user' }));
    expectSameSubjects({ subjects, nextCursor: 'eyJ2IjoxfQ', revision: 12_345 });
    for (const n of [100, 127, 128, 16_383, 16_384, 2_100_000]) {
      const grant: SubjectGrant = { reason: 'role', roleId: 'role_1', trace: [{ leg: 'role', outcome: 'allow', message: 'x'.repeat(n) }] };
      expectSameSubjects({ subjects: [{ id: 's', externalId: 'e', type: 't', grant }, { id: 'ü', externalId: '😀', type: 't' }], nextCursor: '', revision: 7 });
      expectSameResources({ resources: [{ id: 'r', externalResourceId: 'x'.repeat(n), resourceType: 'doc', ownerScopeId: 's' }], nextCursor: 'c'.repeat(n % 1000), revision: 7 });
    }
  });
});
