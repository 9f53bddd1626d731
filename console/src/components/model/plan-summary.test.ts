import { describe, expect, it } from 'vitest';
import { countsSentence, fileValue, pathSteps, summarisePlan, type PlanChange } from './plan-summary.js';

const change = (kind: string, action: string, key: string, fields: string[] = [], path = ''): PlanChange => ({ kind, action, key, fields, reason: '', path });

describe('summarisePlan', () => {
  it('groups the writes by kind in the plan order and counts keeps without listing them', () => {
    const s = summarisePlan([
      change('scope', 'create', 'scope /support'),
      change('role', 'keep', 'role viewer'),
      change('resource', 'update', 'resource document/roadmap', ['displayName']),
      change('scope', 'create', 'scope /support/eu'),
      change('subject', 'delete', 'subject bob'),
    ]);
    expect(s.groups.map((g) => [g.kind, g.changes.map((c) => c.key)])).toEqual([
      ['scope', ['scope /support', 'scope /support/eu']],
      ['resource', ['resource document/roadmap']],
      ['subject', ['subject bob']],
    ]);
    expect(s.counts).toEqual({ create: 2, update: 1, replace: 0, delete: 1, keep: 1 });
    expect(s.writes).toBe(4);
    expect(countsSentence(s.counts)).toBe('2 to create, 1 to update, 0 to replace, 1 to delete');
  });

  it('finds nothing to write in a plan of keeps', () => {
    const s = summarisePlan([change('role', 'keep', 'role viewer')]);
    expect(s.groups).toEqual([]);
    expect(s.writes).toBe(0);
  });
});

describe('fileValue', () => {
  const doc = { resources: [{ type: 'document', externalId: 'roadmap', displayName: 'Roadmap 2' }], tagGroups: [{ key: 'c', tags: [{ identifier: 'x', label: 'X' }] }] };

  it('reads the new value of a field at a plan path', () => {
    expect(pathSteps('tagGroups[0].tags[1]')).toEqual(['tagGroups', 0, 'tags', 1]);
    expect(fileValue(doc, 'resources[0]', 'displayName')).toBe('Roadmap 2');
    expect(fileValue(doc, 'tagGroups[0].tags[0]', 'label')).toBe('X');
  });

  it('answers undefined for a field the file leaves out, a missing entry or no path', () => {
    expect(fileValue(doc, 'resources[0]', 'attributes')).toBeUndefined();
    expect(fileValue(doc, 'resources[3]', 'displayName')).toBeUndefined();
    expect(fileValue(doc, '', 'displayName')).toBeUndefined();
  });
});
