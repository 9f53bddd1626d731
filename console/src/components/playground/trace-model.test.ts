import { describe, expect, it } from 'vitest';
import type { JsonValue } from '@bufbuild/protobuf';
import { legResult, logicVariables, splitIds, traceTree, valueAt, type StepLike, type TraceNode } from './trace-model.js';
import { actionsOf, scopePaths } from './tenant-lists.js';
import type { Scope } from '../../../../gen/authz/v1/scope_pb.js';

const step = (leg: string, result: string, message: string, details?: StepLike['details']): StepLike => ({ step: leg, result, message, details });

/** The tree as nested labels, easy to compare. */
function shape(nodes: TraceNode[]): unknown[] {
  return nodes.map((n) => (n.kind === 'step' ? n.step.message : n.kind === 'priority' ? { [`priority ${n.priority}`]: shape(n.children) } : { [n.label]: shape(n.children) }));
}

describe('traceTree', () => {
  it('groups runs of a leg, and policies by priority (highest first) where the first of them stood', () => {
    const trace = [
      step('scope', 'info', 'scope'),
      step('policy', 'pass', 'collection c matches'),
      step('policy', 'fail', 'low', { priority: 10 }),
      step('policy', 'pass', 'high', { priority: 100 }),
      step('policy', 'fail', 'low again', { priority: 10 }),
      step('policy', 'deny', 'highest matching priority 100: deny wins'),
      step('role', 'info', 'roles held'),
      step('role', 'allow', 'role has permission'),
      step('decision', 'deny', 'denied (policy_deny)'),
    ];
    const tree = traceTree(trace);
    expect(shape(tree)).toEqual([
      { scope: ['scope'] },
      { policies: ['collection c matches', { 'priority 100': ['high'] }, { 'priority 10': ['low', 'low again'] }, 'highest matching priority 100: deny wins'] },
      { roles: ['roles held', 'role has permission'] },
      { decision: ['denied (policy_deny)'] },
    ]);
    expect(tree.map((n) => (n.kind === 'leg' ? legResult(n) : ''))).toEqual(['info', 'deny', 'allow', 'deny']);
  });

  it('keeps each step\'s place in the trace', () => {
    const tree = traceTree([step('gate', 'pass', 'a'), step('gate', 'pass', 'b')]);
    const leg = tree[0];
    expect(leg.kind === 'leg' && leg.children.map((c) => (c.kind === 'step' ? c.index : -1))).toEqual([0, 1]);
  });
});

describe('splitIds', () => {
  it('finds the engine\'s ids, a policy id with its name too', () => {
    const parts = splitIds('policy policy_9af4fa4591_no-contractors (collection collection_01a22358-8484-732c-b93e-bc6ca73b1475, priority 100)');
    expect(parts.filter((p) => p.id).map((p) => p.text)).toEqual(['policy_9af4fa4591_no-contractors', 'collection_01a22358-8484-732c-b93e-bc6ca73b1475']);
    expect(parts.map((p) => p.text).join('')).toBe('policy policy_9af4fa4591_no-contractors (collection collection_01a22358-8484-732c-b93e-bc6ca73b1475, priority 100)');
  });

  it('leaves words that are not ids, and ids of words with underscores whole', () => {
    expect(splitIds('no_match at scope_type_tenant').every((p) => !p.id)).toBe(true);
    expect(splitIds('grant ownership_grant_01a22358-8484-7329-8284-8f52fa39c76f;')).toEqual([
      { text: 'grant ' }, { text: 'ownership_grant_01a22358-8484-7329-8284-8f52fa39c76f', id: true }, { text: ';' },
    ]);
  });
});

describe('conditions', () => {
  it('lists the variables a rule reads, a default\'s own variables too', () => {
    const rule: JsonValue = { and: [{ '==': [{ var: 'subject.meta.employment' }, 'contractor'] }, { in: [{ var: ['ip', { var: 'fallback' }] }, ['a']] }, { var: 'subject.meta.employment' }] };
    expect(logicVariables(rule)).toEqual(['subject.meta.employment', 'ip', 'fallback']);
  });

  it('reads a dotted path as JSON Logic does, lists by index', () => {
    const data = { subject: { meta: { employment: 'contractor', teams: ['a', 'b'] } } };
    expect(valueAt(data, 'subject.meta.employment')).toBe('contractor');
    expect(valueAt(data, 'subject.meta.teams.1')).toBe('b');
    expect(valueAt(data, 'subject.meta.missing')).toBeUndefined();
    expect(valueAt(data, 'subject.meta.employment.x')).toBeUndefined();
  });
});

describe('tenant lists', () => {
  it('writes scope paths as a model file does, leaving a scope with an unknown parent by its name', () => {
    const scope = (id: string, name: string, parentId?: string) => ({ id, name, parentId }) as Scope;
    const paths = scopePaths([scope('r', 'acme'), scope('p', 'platform', 'e'), scope('e', 'eng', 'r'), scope('x', 'far', 'unlisted')]);
    expect(Object.fromEntries(paths)).toEqual({ r: '/', e: '/eng', p: '/eng/platform', x: 'far' });
  });

  it('offers each action of the permissions once', () => {
    expect(actionsOf([{ action: 'write' }, { action: 'read' }, { action: 'write' }, { action: '*' }])).toEqual(['read', 'write']);
  });
});
