import { describe, expect, it } from 'vitest';
import { compileMatch, matchOutcome, matchesDefinition, validateMatchDefinition, type ResourceTags } from './match.js';
import type { JsonValue, Resource } from './model.js';

const resource: Resource = {
  id: 'resource_1',
  resourceTypeId: 'resource_type_doc',
  ownerScopeId: 'scope_proj',
  externalResourceId: 'invoice-2025-001',
  displayName: 'Invoice 1',
  attributes: { size: 10, owner: { team: 'red' }, labels: ['fin', 'q1'], tier: 'gold', archived: false, list: [{ k: 'v' }] },
  createdAt: '2025-03-01T12:00:00.000Z',
  createdBy: 'subject_a',
};
const tags: ResourceTags = new Map([
  ['env', new Set(['prod'])],
  ['team', new Set(['red', 'blue'])],
]);

const m = (def: JsonValue, r: Resource = resource) => matchesDefinition(def, { resource: r, tags: () => tags });

describe('fields', () => {
  it.each([
    [{ 'attributes.size': 10 }, true],
    [{ 'attributes.size': 11 }, false],
    [{ 'attributes.size': { eq: 10 } }, true],
    [{ 'attributes.size': { ne: 10 } }, false],
    [{ 'attributes.size': { gt: 9 } }, true],
    [{ 'attributes.size': { gt: 10 } }, false],
    [{ 'attributes.size': { gte: 10 } }, true],
    [{ 'attributes.size': { lt: 10 } }, false],
    [{ 'attributes.size': { lte: 10, gte: 10 } }, true],
    [{ 'attributes.size': { gt: 1, lt: 5 } }, false],
    [{ 'attributes.size': { gt: '1' } }, false], // number vs string never compare
    [{ createdAt: { gte: '2025-03-01' } }, true], // strings compare in code-unit order
    [{ 'attributes.tier': { in: ['gold', 'silver'] } }, true],
    [{ 'attributes.tier': { in: ['bronze'] } }, false],
    [{ 'attributes.tier': { nin: ['bronze'] } }, true],
    [{ 'attributes.tier': { nin: ['gold'] } }, false],
    [{ 'attributes.labels': { contains: 'q1' } }, true],
    [{ 'attributes.labels': { contains: 'q2' } }, false],
    [{ externalResourceId: { contains: '2025' } }, true],
    [{ externalResourceId: { startsWith: 'invoice-' } }, true],
    [{ externalResourceId: { startsWith: 'bill-' } }, false],
    [{ externalResourceId: { endsWith: '001' } }, true],
    [{ externalResourceId: { endsWith: '002' } }, false],
    [{ externalResourceId: { regex: '^invoice-\\d{4}-' } }, true],
    [{ externalResourceId: { regex: '^bill' } }, false],
    [{ 'attributes.owner.team': 'red' }, true],
    [{ 'attributes.list.0.k': 'v' }, true],
    [{ 'attributes.archived': false }, true],
    [{ displayName: 'Invoice 1', ownerScopeId: 'scope_proj', resourceTypeId: 'resource_type_doc', id: 'resource_1', createdBy: 'subject_a' }, true],
  ] as [JsonValue, boolean][])('%j → %s', (fields, want) => {
    expect(m({ fields })).toBe(want);
  });

  it('treats absent fields like MongoDB: eq null and ne/nin match them', () => {
    expect(m({ fields: { 'attributes.missing': null } })).toBe(true);
    expect(m({ fields: { 'attributes.missing': { ne: 'x' } } })).toBe(true);
    expect(m({ fields: { 'attributes.missing': { nin: ['x'] } } })).toBe(true);
    expect(m({ fields: { 'attributes.missing': 'x' } })).toBe(false);
    expect(m({ fields: { 'attributes.missing': { gt: 0 } } })).toBe(false);
    expect(m({ fields: { displayName: null } }, { ...resource, displayName: undefined })).toBe(true);
    expect(m({ fields: { 'attributes.size': null } })).toBe(false);
  });

  it('reads attributes through own properties only', () => {
    expect(m({ fields: { 'attributes.labels.length': 2 } })).toBe(false);
    expect(m({ fields: { 'attributes.tier.length': 4 } })).toBe(false);
  });
});

describe('tags, patterns, time, condition', () => {
  it('tags: one identifier or any of several, every group must match', () => {
    expect(m({ tags: { env: 'prod' } })).toBe(true);
    expect(m({ tags: { env: 'dev' } })).toBe(false);
    expect(m({ tags: { env: ['dev', 'prod'] } })).toBe(true);
    expect(m({ tags: { env: 'prod', team: 'green' } })).toBe(false);
    expect(m({ tags: { region: 'eu' } })).toBe(false);
  });

  it('reads tags lazily', () => {
    let calls = 0;
    const lazy = () => {
      calls++;
      return tags;
    };
    expect(matchesDefinition({ fields: { 'attributes.size': 10 } }, { resource, tags: lazy })).toBe(true);
    expect(calls).toBe(0);
  });

  it('patterns are regular expressions (unanchored), not globs', () => {
    expect(m({ patterns: { externalResourceId: 'invoice-20[0-9]{2}' } })).toBe(true);
    expect(m({ patterns: { externalResourceId: 'invoice-*' } })).toBe(true); // regex: "invoice" then any dashes
    expect(m({ patterns: { externalResourceId: '^inv.*\\.pdf$' } })).toBe(false);
    expect(m({ patterns: { 'attributes.size': '10' } })).toBe(false); // not a string
  });

  it('time: before/after are exclusive, between is [from, until)', () => {
    const at = resource.createdAt;
    expect(m({ time: { field: 'createdAt', before: at } })).toBe(false);
    expect(m({ time: { field: 'createdAt', before: '2025-03-01T12:00:00.001Z' } })).toBe(true);
    expect(m({ time: { field: 'createdAt', after: at } })).toBe(false);
    expect(m({ time: { field: 'createdAt', after: '2025-03-01T11:59:59.999Z' } })).toBe(true);
    expect(m({ time: { field: 'createdAt', between: [at, '2025-04-01T00:00:00Z'] } })).toBe(true);
    expect(m({ time: { field: 'createdAt', between: ['2025-01-01T00:00:00Z', at] } })).toBe(false);
    expect(m({ time: { field: 'attributes.tier', after: '2020-01-01T00:00:00Z' } })).toBe(false); // not a timestamp
  });

  it('condition reads {resource: {...fields, attributes}}', () => {
    expect(m({ condition: { '>': [{ var: 'resource.attributes.size' }, 5] } })).toBe(true);
    expect(m({ condition: { '==': [{ var: 'resource.ownerScopeId' }, 'scope_other'] } })).toBe(false);
    expect(m({ condition: { '!!': { var: 'resource.attributes.constructor' } } })).toBe(false);
    expect(m({ condition: { method: [{ var: 'resource.id' }, 'toString'] } })).toBe(false);
  });
});

describe('combinators', () => {
  const yes = { fields: { 'attributes.size': 10 } };
  const no = { fields: { 'attributes.size': 0 } };
  it('any/all/none', () => {
    expect(m({ any: [no, yes] })).toBe(true);
    expect(m({ any: [no, no] })).toBe(false);
    expect(m({ any: [] })).toBe(false);
    expect(m({ all: [yes, yes] })).toBe(true);
    expect(m({ all: [yes, no] })).toBe(false);
    expect(m({ all: [] })).toBe(true);
    expect(m({ none: [no, no] })).toBe(true);
    expect(m({ none: [no, yes] })).toBe(false);
    expect(m({ none: [] })).toBe(true);
    expect(m({})).toBe(true);
  });

  it('top-level keys all have to hold', () => {
    expect(m({ fields: { 'attributes.size': 10 }, tags: { env: 'dev' } })).toBe(false);
    expect(m({ fields: { 'attributes.size': 10 }, tags: { env: 'prod' }, none: [no] })).toBe(true);
  });
});

describe('validateMatchDefinition', () => {
  it.each([
    [{ fields: { size: { gtx: 1 } } }, 'match.fields.size.gtx: unknown operator'],
    [{ fields: { size: 1 } }, 'match.fields.size: unknown field "size"'],
    [{ fields: { 'attributes.a': { in: 'x' } } }, 'match.fields.attributes.a.in: operand must be an array of scalars'],
    [{ fields: { 'attributes.a': { regex: '(' } } }, 'match.fields.attributes.a.regex: invalid regular expression'],
    [{ fields: { 'attributes.__proto__.x': 1 } }, 'forbidden property "__proto__"'],
    [{ fields: { 'attributes.a': [1, 2] } }, 'use "in" for lists'],
    [{ tags: { env: [] } }, 'match.tags.env: must be an identifier or a non-empty array'],
    [{ patterns: { id: '[' } }, 'match.patterns.id: invalid regular expression'],
    [{ time: { field: 'createdAt' } }, 'match.time: needs before, after or between'],
    [{ time: { field: 'createdAt', between: ['2025-01-01T00:00:00Z'] } }, 'match.time.between'],
    [{ time: { field: 'createdAt', before: 'yesterday' } }, 'match.time.before: must be an ISO-8601 timestamp'],
    [{ condition: { method: [1, 'x'] } }, 'match.condition: rule: unknown or forbidden operator "method"'],
    [{ any: [{ all: [{ fieldz: {} }] }] }, 'match.any[0].all[0].fieldz: unknown key'],
    [[], 'match: must be an object'],
  ] as [JsonValue, string][])('%j', (def, message) => {
    expect(validateMatchDefinition(def)).toContain(message);
    expect(m(def)).toBe(false); // an invalid definition never matches
  });

  it('accepts every documented feature', () => {
    const def = {
      fields: { 'attributes.size': { gte: 1, lt: 100 }, displayName: 'x', externalResourceId: { regex: '^a' } },
      tags: { env: ['prod', 'dev'], team: 'red' },
      patterns: { id: '^resource_' },
      time: { field: 'createdAt', between: ['2025-01-01T00:00:00Z', '2026-01-01T00:00:00Z'] },
      condition: { '==': [{ var: 'resource.attributes.tier' }, 'gold'] },
      any: [{ fields: { id: 'a' } }],
      all: [{}],
      none: [{ tags: { env: 'dev' } }],
    };
    expect(validateMatchDefinition(def)).toBeNull();
  });

  it('limits nesting to 32 definitions deep', () => {
    const nest = (n: number): JsonValue => (n === 1 ? {} : { all: [nest(n - 1)] });
    expect(validateMatchDefinition(nest(32))).toBeNull();
    expect(m(nest(32))).toBe(true);
    expect(validateMatchDefinition(nest(33))).toMatch(/nested deeper than 32/);
    expect(m(nest(33))).toBe(false);
  });

  it('bounds work on definitions that share sub-objects', () => {
    let shared: JsonValue = {};
    for (let i = 0; i < 30; i++) shared = { any: [shared, shared] };
    expect(validateMatchDefinition(shared)).toMatch(/more than 10000 nested definitions/);
  });

  it('compiles a definition once', () => {
    const def = { fields: { 'attributes.size': 10 } };
    expect(compileMatch(def)).toBe(compileMatch(def));
  });
});

describe('regular expressions run in linear time', () => {
  const evil = 'a'.repeat(100_000) + '!';
  const big: Resource = { ...resource, externalResourceId: evil, attributes: { text: evil } };
  it('(a+)+$ against 100,000 characters via patterns', { timeout: 2000 }, () => {
    expect(m({ patterns: { externalResourceId: '(a+)+$' } }, big)).toBe(false);
    expect(m({ patterns: { externalResourceId: '(a+)+!$' } }, big)).toBe(true);
  });
  it('(a+)+$ against 100,000 characters via fields.regex', { timeout: 2000 }, () => {
    expect(m({ fields: { 'attributes.text': { regex: '^(a|aa)+$' } } }, big)).toBe(false);
    expect(m({ fields: { 'attributes.text': { regex: '(a+)+$' } } }, big)).toBe(false);
  });
});

describe('matchOutcome: errors are kept apart from non-matches', () => {
  const o = (def: JsonValue, r: Resource = resource) => matchOutcome(def, { resource: r, tags: () => tags });
  // Doubles an array once per element of attributes.long: 14 elements exceed the merge limit.
  const errs = { condition: { reduce: [{ var: 'resource.attributes.long' }, { merge: [{ var: 'accumulator' }, { var: 'accumulator' }, [0]] }, []] } };
  const long: Resource = { ...resource, attributes: { ...resource.attributes, long: Array.from({ length: 14 }, (_, i) => i) } };
  it.each([
    ['a condition hitting a run-time limit', errs, long, 'error'],
    ['the same condition over a missing field', errs, resource, 'no_match'],
    ['an invalid stored regex', { patterns: { displayName: '(' } }, resource, 'error'],
    ['an invalid definition', { nope: 1 }, resource, 'error'],
    ['a missing field', { fields: { 'attributes.missing': 'x' } }, resource, 'no_match'],
    ['any: a matching part decides', { any: [errs, { fields: { 'attributes.size': 10 } }] }, long, 'match'],
    ['any: otherwise the error stands', { any: [errs, { fields: { 'attributes.size': 11 } }] }, long, 'error'],
    ['all: a failing part decides', { all: [errs, { fields: { 'attributes.size': 11 } }] }, long, 'no_match'],
    ['top-level AND: a failing key decides', { ...errs, fields: { 'attributes.size': 11 } }, long, 'no_match'],
    ['none of an error is an error', { none: [errs] }, long, 'error'],
  ] as [string, JsonValue, Resource, string][])('%s', (_name, def, r, want) => {
    expect(o(def, r)).toBe(want);
    expect(matchesDefinition(def, { resource: r, tags: () => tags })).toBe(want === 'match');
  });
});
