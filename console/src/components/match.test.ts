import { describe, expect, it } from 'vitest';
import { describeMatch, type MatchClause } from './match.js';

/** Clauses as indented lines, so that a test reads like the screen. */
function lines(clauses: readonly MatchClause[], indent = ''): string[] {
  return clauses.flatMap((c) => [`${indent}${c.text}`, ...(c.kind === 'group' ? lines(c.clauses, `${indent}  `) : [])]);
}

describe('describeMatch', () => {
  it('reads the seeded collection: one tag', () => {
    expect(lines(describeMatch({ tags: { classification: 'confidential' } }))).toEqual(['tag classification is "confidential"']);
  });

  it('reads tags with several identifiers allowed', () => {
    expect(lines(describeMatch({ tags: { env: ['prod', 'staging'], team: 'eng' } }))).toEqual([
      'tag env is one of "prod", "staging"',
      'tag team is "eng"',
    ]);
  });

  it('reads fields: a bare value as ==, each operator as a clause', () => {
    expect(lines(describeMatch({
      fields: {
        externalResourceId: 'roadmap',
        'attributes.level': { gte: 3, lt: 10 },
        'attributes.status': { in: ['open', 'draft'] },
        'attributes.kind': { nin: ['archive'] },
        displayName: { ne: 'Secret', contains: 'plan', startsWith: 'Q', endsWith: '26' },
        'attributes.year': { gt: 2020, lte: 2030 },
        createdBy: { regex: '^apk_' },
      },
    }))).toEqual([
      'externalResourceId == "roadmap"',
      'attributes.level >= 3',
      'attributes.level < 10',
      'attributes.status in ["open", "draft"]',
      'attributes.kind not in ["archive"]',
      'displayName != "Secret"',
      'displayName contains "plan"',
      'displayName starts with "Q"',
      'displayName ends with "26"',
      'attributes.year > 2020',
      'attributes.year <= 2030',
      'createdBy matches /^apk_/',
    ]);
  });

  it('says that eq null also matches an absent field', () => {
    expect(lines(describeMatch({ fields: { displayName: null, 'attributes.x': { eq: null } } }))).toEqual([
      'displayName is absent or null',
      'attributes.x is absent or null',
    ]);
  });

  it('quotes strings with their quotes escaped, and keeps numbers and booleans bare', () => {
    expect(lines(describeMatch({ fields: { displayName: 'say "hi"', 'attributes.n': 1.5, 'attributes.b': false } }))).toEqual([
      'displayName == "say \\"hi\\""',
      'attributes.n == 1.5',
      'attributes.b == false',
    ]);
  });

  it('reads patterns and time bounds', () => {
    expect(lines(describeMatch({
      patterns: { externalResourceId: '^doc-[0-9]+$' },
      time: { field: 'createdAt', after: '2025-01-01T00:00:00Z', before: '2026-01-01T00:00:00Z' },
    }))).toEqual([
      'externalResourceId matches /^doc-[0-9]+$/',
      'createdAt is after 2025-01-01T00:00:00Z and before 2026-01-01T00:00:00Z',
    ]);
    expect(lines(describeMatch({ time: { field: 'attributes.due', between: ['2025-01-01', '2025-02-01'] } }))).toEqual([
      'attributes.due is from 2025-01-01 (included) until 2025-02-01 (excluded)',
    ]);
  });

  it('reads a condition through the JSON Logic formatter', () => {
    expect(lines(describeMatch({ condition: { '>=': [{ var: 'resource.attributes.level' }, 3] } }))).toEqual([
      'resource.attributes.level >= 3',
    ]);
  });

  it('nests any, all and none, a nested definition of several keys as all of its clauses', () => {
    expect(lines(describeMatch({
      any: [
        { tags: { classification: 'confidential' } },
        { fields: { 'attributes.level': { gte: 3 } }, tags: { team: 'legal' } },
      ],
      none: [{ fields: { externalResourceId: 'public' } }],
    }))).toEqual([
      'any of these holds:',
      '  tag classification is "confidential"',
      '  all of these hold:',
      '    attributes.level >= 3',
      '    tag team is "legal"',
      'none of these holds:',
      '  externalResourceId == "public"',
    ]);
  });

  it('says what empty groups and an empty definition mean', () => {
    expect(lines(describeMatch({ any: [] }))).toEqual(['any of nothing: never matches']);
    expect(lines(describeMatch({ all: [] }))).toEqual(['all of nothing: always holds']);
    expect(lines(describeMatch({ none: [] }))).toEqual(['none of nothing: always holds']);
    expect(lines(describeMatch({}))).toEqual(['every resource of the type (no conditions)']);
  });

  it('shows unknown keys, unknown operators and malformed parts as JSON', () => {
    expect(lines(describeMatch({ geo: { near: 'EU' }, fields: { size: { between: [1, 2] } }, tags: 'x', any: {} }))).toEqual([
      'geo: {"near":"EU"}',
      'size between [1,2]',
      'tags: "x"',
      'any: {}',
    ]);
    expect(lines(describeMatch(null))).toEqual(['not a definition: null']);
    expect(lines(describeMatch({ time: { field: 'createdAt' } }))).toEqual(['time: {"field":"createdAt"}']);
  });
});
