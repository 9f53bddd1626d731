import { describe, expect, it } from 'vitest';
import { stylesFor } from './io.js';
import { decisionLine, explainDecision, renderTree, traceTree, type DecisionJson, type TraceStepJson } from './explain.js';

const plain = stylesFor(false);

const policy = (id: string, priority: number, result: string, details: Record<string, unknown> = {}): TraceStepJson => ({
  step: 'policy',
  result,
  message: `policy ${id} (direct, priority ${priority}, deny): …`,
  details: { policyId: id, priority, effect: 'deny', ...details } as TraceStepJson['details'],
});

describe('the explain tree', () => {
  it('groups policies by priority, highest first, where the first of them stood, around the leg\'s other steps', () => {
    const trace: TraceStepJson[] = [
      { step: 'policy', result: 'pass', message: 'collection c1 at s matches the resource', details: { collectionId: 'c1', match: 'match' } },
      policy('p1', 1, 'pass'),
      policy('p10', 10, 'fail', { contextCondition: false, missingContext: ['ip'] }),
      policy('p5', 5, 'pass'),
      policy('p10b', 10, 'pass'),
      { step: 'policy', result: 'deny', message: 'highest matching priority 10: deny wins' },
    ];
    expect(renderTree(traceTree(trace, plain), plain)).toEqual([
      '└─ policies',
      '   ├─ ✓ collection c1 at s matches the resource',
      '   ├─ priority 10',
      '   │  ├─ ✗ policy p10 (direct, priority 10, deny): …',
      '   │  │  ├─ contextCondition: ✗',
      '   │  │  └─ missingContext: ip',
      '   │  └─ ✓ policy p10b (direct, priority 10, deny): …',
      '   ├─ priority 5',
      '   │  └─ ✓ policy p5 (direct, priority 5, deny): …',
      '   ├─ priority 1',
      '   │  └─ ✓ policy p1 (direct, priority 1, deny): …',
      '   └─ ✗ highest matching priority 10: deny wins',
    ]);
  });

  it('makes one branch per run of a leg, a single step on its label\'s line, paths joined by arrows', () => {
    const trace: TraceStepJson[] = [
      { step: 'scope', result: 'info', message: 'scope s2; ancestors nearest first: s1', details: { scopePath: ['s2', 's1'] } },
      { step: 'gate', result: 'pass', message: 'gate off' },
      { step: 'role', result: 'skip', message: 'role r0 from membership m0 at s1: blocked by an override at s2' },
      { step: 'role', result: 'info', message: 'roles held: r1 (membership m1 at s1)', details: { roles: [{ roleId: 'r1', source: 'role', viaId: 'm1', sourceScopeId: 's1' }] } },
      { step: 'hierarchy', result: 'fail', message: 'walked a → b; stopped: no parent; nothing inherited', details: { hierarchyPath: ['a', 'b'] } },
      { step: 'custom-leg', result: 'odd', message: 'a leg this renderer does not know' },
    ];
    expect(renderTree(traceTree(trace, plain), plain)).toEqual([
      '├─ scope  • scope s2; ancestors nearest first: s1',
      '│  └─ scopePath: s2 → s1',
      '├─ gate  ✓ gate off',
      '├─ roles',
      '│  ├─ - role r0 from membership m0 at s1: blocked by an override at s2',
      '│  └─ • roles held: r1 (membership m1 at s1)',
      '│     └─ roles:',
      '│        └─ roleId=r1 source=role viaId=m1 sourceScopeId=s1',
      '├─ hierarchy  ✗ walked a → b; stopped: no parent; nothing inherited',
      '│  └─ hierarchyPath: a → b',
      '└─ custom-leg  • a leg this renderer does not know',
    ]);
  });

  it('leaves out details the sentence already states, and empty lists', () => {
    const trace: TraceStepJson[] = [
      { step: 'ownership', result: 'allow', message: 'ownership grant g1 (role r1) permission p1 (doc:edit:*) covers the request', details: { grantId: 'g1', roleId: 'r1', permissionId: 'p1', extra: 7, none: [] } },
    ];
    expect(renderTree(traceTree(trace, plain), plain)).toEqual([
      '└─ ownership  ✓ ownership grant g1 (role r1) permission p1 (doc:edit:*) covers the request',
      '   └─ extra: 7',
    ]);
  });

  it('heads the tree with the answer, its reason, revision and deciding policy', () => {
    const denied: DecisionJson = { allowed: false, reason: 'policy_deny', revision: 12, decidedByPolicy: true, evaluatedPolicy: { id: 'p10', effect: 'deny', priority: 10 }, trace: [] };
    expect(decisionLine(denied, plain)).toBe('✗ denied  reason policy_deny  revision 12\ndecided by policy p10 (deny, priority 10)');
    expect(explainDecision({ allowed: true, reason: 'role', revision: 3, trace: [{ step: 'decision', result: 'allow', message: 'allowed (role)' }] }, plain)).toBe(
      '✓ allowed  reason role  revision 3\n└─ decision  ✓ allowed (role)',
    );
  });

  it('colours outcomes only when asked', () => {
    const coloured = explainDecision({ allowed: false, reason: 'no_match', revision: 1, trace: [{ step: 'gate', result: 'fail', message: 'unreachable' }] }, stylesFor(true));
    expect(coloured).toContain('\x1b[31m✗\x1b[39m unreachable');
    expect(coloured).toContain('\x1b[1m');
    expect(explainDecision({ allowed: false, reason: 'no_match', revision: 1, trace: [{ step: 'gate', result: 'fail', message: 'unreachable' }] }, plain)).not.toContain('\x1b[');
  });
});
