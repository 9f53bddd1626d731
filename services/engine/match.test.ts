import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { DECISION_MAX_OPERATIONS, DecisionBudget } from './budget.js';
import {
  MATCH_MAX_REGEX_PROGRAM_TOTAL,
  compileMatch,
  compileRegex,
  estimateRegexProgram,
  matchOutcome,
  matchesDefinition,
  regexCompileCost,
  regexDfaDisabled,
  regexSearchCost,
  resourceField,
  validateMatchDefinition,
  type MatchSubject,
  type ResourceTags,
} from './match.js';
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

describe('attribute paths', () => {
  it('reads the same after more distinct attribute fields than the split-path memo keeps', () => {
    const r: Resource = { ...resource, attributes: { a: { b: 1 }, n: 7 } };
    for (let i = 0; i < 10_050; i++) expect(resourceField(r, `attributes.f${i}.x`)).toBeUndefined();
    expect(resourceField(r, 'attributes.a.b')).toBe(1);
    expect(resourceField(r, 'attributes.a')).toEqual({ b: 1 });
    expect(resourceField(r, 'attributes.n.toString')).toBeUndefined();
    expect(resourceField(r, 'attributes.a.__proto__')).toBeUndefined();
    expect(m({ fields: { 'attributes.a.b': 1, 'attributes.owner': null } }, r)).toBe(true);
    expect(m({ fields: { 'attributes.owner.team': 'red' } })).toBe(true);
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

describe('regular expressions of bounded program size', () => {
  const reported = 'a{0,1000}'.repeat(600);

  it('refuses the reported pattern by its estimate, in milliseconds and without compiling it', () => {
    expect(reported.length).toBe(5_400);
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const err = validateMatchDefinition({ patterns: { displayName: reported } });
    expect(performance.now() - t0).toBeLessThan(50);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(50 * 2 ** 20);
    expect(err).toBe('match.patterns.displayName: regular expression too large: it may compile to 1201204 instructions; at most 1000 are allowed (5400 characters)');
    expect(validateMatchDefinition({ fields: { 'attributes.x': { regex: reported } } })).toMatch(/^match\.fields\.attributes\.x\.regex: regular expression too large/);
  });

  it('accepts ordinary patterns, and an alternation of the 249 country codes', () => {
    const codes = Array.from({ length: 249 }, (_, i) => String.fromCharCode(65 + (i % 26), 65 + Math.floor(i / 26)));
    for (const p of ['^invoice-\\d{4}-', '^[a-z0-9-]+\\.pdf$', '(?i)secret|confidential', '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', `^(?:${codes.join('|')})$`, '\\p{Greek}+', '[[:alpha:]]{1,64}']) {
      expect(validateMatchDefinition({ patterns: { displayName: p } }), p).toBeNull();
    }
  });

  it(`refuses a definition whose patterns together may exceed ${MATCH_MAX_REGEX_PROGRAM_TOTAL} instructions`, () => {
    const patterns = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`attributes.f${i}`, `[a-z]{${400}}x{${400}}`]));
    expect(validateMatchDefinition({ patterns })).toBe("match.patterns.attributes.f4: the definition's regular expressions may compile to more than 4000 instructions in all");
    expect(validateMatchDefinition({ patterns: { ...patterns, 'attributes.f4': undefined } })).toMatch(/must be a string/);
  });

  it('never under-estimates the compiled program (generated patterns)', () => {
    const atom: fc.Arbitrary<string> = fc.oneof(
      fc.constantFrom('a', 'b', '.', '\\d', '\\w', '\\s', '\\b', '^', '$', '\\.', '\\pL', '\\p{Greek}', '\\x41', '\\x{1F600}', '😀', '\\Qa*b\\E', '\\123', '[a-c]', '[^x]', '[]a]', '[[:digit:]x]', '[\\]\\-]', '\\A', '\\z', '{', '}', ','),
    );
    const quant = fc.oneof(
      fc.constant(''),
      fc.constantFrom('*', '+', '?', '*?', '+?', '??'),
      fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), fc.constantFrom('', ',', ',m'), fc.constantFrom('', '?')).map(([n, m, kind, lazy]) =>
        kind === '' ? `{${n}}${lazy}` : kind === ',' ? `{${n},}${lazy}` : `{${Math.min(n, m)},${Math.max(n, m)}}${lazy}`,
      ),
    );
    const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string; seq: string; item: string }>((tie) => ({
      re: fc.array(tie('seq'), { minLength: 1, maxLength: 3 }).map((alts) => alts.join('|')),
      seq: fc.array(tie('item'), { maxLength: 4 }).map((xs) => xs.join('')),
      item: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.tuple(atom, quant).map(([a, q]) => a + q),
        fc.tuple(fc.constantFrom('(', '(?:', '(?i:', '(?P<n>', '(?<m>', '(?i)('), tie('re'), quant).map(([open, inner, q]) => `${open}${inner})${q}`),
      ),
    })).re;
    let compiled = 0;
    fc.assert(
      fc.property(pattern, (p) => {
        let size: number;
        try {
          size = RE2JS.compile(p).programSize();
        } catch {
          return; // syntax errors are the compiler's to report
        }
        compiled++;
        expect(estimateRegexProgram(p), p).toBeGreaterThanOrEqual(size);
      }),
      { numRuns: 3_000 },
    );
    expect(compiled).toBeGreaterThan(1_000);
  });

  it('a stored oversize pattern errors at evaluation, without compiling it', () => {
    const subject: MatchSubject = { resource, tags: () => tags };
    const t0 = performance.now();
    expect(matchOutcome({ any: [{ patterns: { displayName: reported } }, { fields: { 'attributes.size': 10 } }] }, subject)).toBe('error');
    expect(performance.now() - t0).toBeLessThan(50);
    expect(subject.error).toMatch(/^invalid match definition: match\.any\[0\]\.patterns\.displayName: regular expression too large/);
  });

  it('an invalid pattern anywhere still makes the whole definition error, and says which', () => {
    const subject: MatchSubject = { resource, tags: () => tags };
    expect(matchOutcome({ any: [{ fields: { 'attributes.size': 10 } }, { patterns: { displayName: '(' } }] }, subject)).toBe('error');
    expect(subject.error).toMatch(/^invalid match definition: match\.any\[1\]\.patterns\.displayName: invalid regular expression/);
  });

  it('compiled patterns search without the lazy DFA (linear in input × program, bounded memory)', () => {
    const re = compileRegex('(a|b)*a(a|b){8}c');
    expect(re).not.toBeNull();
    expect(regexDfaDisabled(re!)).toBe(true);
    expect(re!.test('b'.repeat(10) + 'a'.repeat(9) + 'c')).toBe(true);
    expect(re!.test('ab'.repeat(10) + 'c')).toBe(false);
    expect(compileRegex(reported)).toBeNull();
  });
});

describe('match definitions draw on the decision budget', () => {
  const withBudget = (left: number): MatchSubject => {
    const budget = new DecisionBudget();
    budget.left = left;
    return { resource, tags: () => tags, budget };
  };

  it('a search costs by input length × program size', () => {
    expect(regexSearchCost(10, 0)).toBe(Math.ceil((32 * 10) / 6));
    expect(regexSearchCost(1_000, 16_384)).toBeGreaterThan(DECISION_MAX_OPERATIONS);
    const s = withBudget(10_000);
    expect(matchOutcome({ patterns: { externalResourceId: '^invoice-\\d{4}-' } }, s)).toBe('match');
    const re = compileRegex('^invoice-\\d{4}-')!;
    // Compiling is charged on every use, cached or not (the cache is shared by every tenant).
    const compiling = regexCompileCost(estimateRegexProgram('^invoice-\\d{4}-'));
    expect(s.budget!.left).toBe(10_000 - compiling - regexSearchCost(re.programSize(), resource.externalResourceId.length));
    matchOutcome({ patterns: { externalResourceId: '^invoice-\\d{4}-' } }, s);
    expect(s.budget!.left).toBe(10_000 - 2 * compiling - 2 * regexSearchCost(re.programSize(), resource.externalResourceId.length));
  });

  it('a search the decision cannot pay for errors, saying why', () => {
    const big: Resource = { ...resource, attributes: { text: 'a'.repeat(16_000) } };
    const s: MatchSubject = { resource: big, tags: () => tags, budget: new DecisionBudget() };
    expect(matchOutcome({ patterns: { 'attributes.text': '(a|b)*(a|c){20}z' } }, s)).toBe('error');
    expect(s.error).toMatch(/^evaluation budget exhausted: the decision's 30000 operations are spent \(a regular expression search over 16000 characters costs \d+\)$/);
    // Without a budget (a direct caller), the same search runs.
    expect(matchesDefinition({ patterns: { 'attributes.text': '(a|b)*(a|c){20}z' } }, { resource: big, tags: () => tags })).toBe(false);
  });

  it('every part evaluated costs at least one operation; with nothing left the definition errors', () => {
    const s = withBudget(0);
    expect(matchOutcome({ fields: { 'attributes.size': 10 } }, s)).toBe('error');
    expect(s.error).toBe("evaluation budget exhausted: the decision's 30000 operations are spent");
    expect(matchOutcome({}, s)).toBe('match'); // nothing to evaluate
    const c = withBudget(5);
    expect(matchOutcome({ fields: { 'attributes.size': 10, 'attributes.tier': 'gold' } }, c)).toBe('match');
    expect(c.budget!.left).toBe(3);
  });

  it('a condition draws on it like a policy condition', () => {
    const s = withBudget(50);
    const cond = { condition: { some: [{ var: 'resource.attributes.list' }, { '==': [{ var: 'k' }, 'x'] }] } };
    const many: Resource = { ...resource, attributes: { list: Array.from({ length: 100 }, () => ({ k: 'v' })) } };
    expect(matchOutcome(cond, { ...s, resource: many })).toBe('error');
  });
});

describe('a collection condition is bounded like a policy condition', () => {
  it('is refused at write time, naming the condition and the path inside it', () => {
    const arr = () => Array.from({ length: 330 }, () => 0);
    const cubic = { some: [arr(), { some: [arr(), { some: [arr(), { '==': [{ var: '' }, 1] }] }] }] };
    expect(validateMatchDefinition({ all: [{ condition: cubic }] })).toMatch(/^match\.all\[0\]\.condition: rule\.some\[1\]: costs up to 545492 operations/);
  });
});
