import { describe, expect, it } from 'vitest';
import { changeAction, diffFields, entityName, formatValue } from './diff.js';

describe('diffFields', () => {
  it('marks each field of an update added, removed, changed or unchanged, opening nested objects', () => {
    const before = { id: 's1', type: 'user', metadata: { team: 'eng', level: 1 } };
    const after = { id: 's1', type: 'service', metadata: { team: 'ops', region: 'eu' } };
    expect(diffFields(before, after)).toEqual([
      { path: ['id'], change: 'unchanged', before: 's1', after: 's1' },
      { path: ['type'], change: 'changed', before: 'user', after: 'service' },
      { path: ['metadata', 'team'], change: 'changed', before: 'eng', after: 'ops' },
      { path: ['metadata', 'region'], change: 'added', after: 'eu' },
      { path: ['metadata', 'level'], change: 'removed', before: 1 },
    ]);
  });

  it('lists every field of a create as added and of a delete as removed', () => {
    const entity = { id: 'r1', name: 'viewer', tags: ['a'] };
    expect(diffFields(undefined, entity).map((f) => [f.path.join('.'), f.change])).toEqual([['id', 'added'], ['name', 'added'], ['tags', 'added']]);
    expect(diffFields(entity, undefined).map((f) => [f.path.join('.'), f.change])).toEqual([['id', 'removed'], ['name', 'removed'], ['tags', 'removed']]);
  });

  it('compares arrays and objects by value, not identity, and arrays whole', () => {
    const d = diffFields({ actions: ['read', 'write'], cond: { '==': [1, 2] } }, { actions: ['read', 'write'], cond: { '==': [1, 3] } });
    expect(d).toEqual([
      { path: ['actions'], change: 'unchanged', before: ['read', 'write'], after: ['read', 'write'] },
      { path: ['cond', '=='], change: 'changed', before: [1, 2], after: [1, 3] },
    ]);
  });

  it('keeps a change of shape (object to scalar) and an empty object as one field', () => {
    expect(diffFields({ target: { kind: 'resource' } }, { target: 'all' })).toEqual([
      { path: ['target'], change: 'changed', before: { kind: 'resource' }, after: 'all' },
    ]);
    expect(diffFields(undefined, { metadata: {} })).toEqual([{ path: ['metadata'], change: 'added', after: {} }]);
    expect(diffFields({ metadata: {} }, { metadata: {} })).toEqual([]);
  });

  it('tells null from absent', () => {
    expect(diffFields({ parentId: null }, { parentId: 'p' })).toEqual([{ path: ['parentId'], change: 'changed', before: null, after: 'p' }]);
    expect(diffFields({ a: 1 }, { a: 1, b: null })).toContainEqual({ path: ['b'], change: 'added', after: null });
  });
});

describe('formatValue', () => {
  it('writes text as it is and anything else, and the empty text, as JSON', () => {
    expect(formatValue('eng')).toBe('eng');
    expect(formatValue('')).toBe('""');
    expect(formatValue(100)).toBe('100');
    expect(formatValue(['*'])).toBe('["*"]');
    expect(formatValue(null)).toBe('null');
  });
});

describe('changeAction and entityName', () => {
  it('reads an upsert without a before as a create', () => {
    expect(changeAction('upsert', undefined)).toBe('create');
    expect(changeAction('upsert', { id: 'x' })).toBe('update');
    expect(changeAction('delete', { id: 'x' })).toBe('delete');
  });

  it('names an entity by its first naming field, after before before', () => {
    expect(entityName(undefined, { id: 'scope_1', name: 'eng' })).toBe('eng');
    expect(entityName({ id: 's', externalId: 'alice' }, undefined)).toBe('alice');
    expect(entityName(undefined, { id: 'x', name: '', key: 'viewer' })).toBe('viewer');
    expect(entityName(undefined, { id: 'x' })).toBe('');
  });
});
