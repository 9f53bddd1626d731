import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { EntityChangeSchema } from '../../../../gen/authz/v1/change_service_pb.js';
import { NO_FILTERS, filtersFromQuery, filtersProblem, filtersToQuery, filtersToRequest, isoToLocalInput, localInputToIso } from './filters.js';
import { groupByRevision } from './timeline-groups.js';

describe('the filters in the URL query', () => {
  it('round-trips through the query, leaving unset filters out', () => {
    const f = { ...NO_FILTERS, kind: 'scope', fromRevision: '2', fromTime: '2026-01-31T12:00:00.000Z' };
    const query = filtersToQuery(f);
    expect(query).toBe('kind=scope&fromTime=2026-01-31T12%3A00%3A00.000Z&fromRevision=2');
    expect(filtersFromQuery(new URLSearchParams(query))).toEqual(f);
    expect(filtersToQuery(NO_FILTERS)).toBe('');
  });

  it('ignores query parameters that are not filters', () => {
    expect(filtersFromQuery(new URLSearchParams('atRevision=3&kind=role'))).toEqual({ ...NO_FILTERS, kind: 'role' });
  });

  it('becomes ListChanges fields, revisions as int64 and unset revisions absent', () => {
    const r = filtersToRequest({ ...NO_FILTERS, entityId: 'scope_1', fromRevision: '2', toRevision: '5' });
    expect(r).toMatchObject({ entityId: 'scope_1', kind: '', fromRevision: 2n, toRevision: 5n });
    expect(filtersToRequest(NO_FILTERS).fromRevision).toBeUndefined();
  });

  it('says what is wrong before asking the server', () => {
    expect(filtersProblem({ ...NO_FILTERS, fromRevision: 'two' })).toBe('From revision must be a whole number, got "two".');
    expect(filtersProblem({ ...NO_FILTERS, toTime: 'yesterday' })).toBe('To time is not a time: "yesterday".');
    expect(filtersProblem({ ...NO_FILTERS, fromRevision: '3', toTime: '2026-01-01T00:00:00Z' })).toBe('');
  });
});

describe('datetime-local fields', () => {
  it('convert between local time and UTC, a "to" time covering its whole second', () => {
    const local = '2026-03-04T10:11:12';
    const iso = localInputToIso(local);
    expect(new Date(iso).getTime()).toBe(new Date(local).getTime());
    expect(isoToLocalInput(iso)).toBe(local);
    expect(new Date(localInputToIso(local, true)).getTime() - new Date(iso).getTime()).toBe(999);
    expect(localInputToIso('')).toBe('');
    expect(isoToLocalInput('')).toBe('');
  });
});

describe('groupByRevision', () => {
  it('makes one group per revision, in the log order, with its writer and reason', () => {
    const change = (revision: bigint, entityId: string, reason = '') => create(EntityChangeSchema, { revision, entityId, reason, op: 'upsert', kind: 'scope' });
    const groups = groupByRevision([change(2n, 'a', 'seed'), change(2n, 'b', 'seed'), change(3n, 'c', 'fix')]);
    expect(groups.map((g) => [g.revision, g.reason, g.changes.map((c) => c.entityId)])).toEqual([[2n, 'seed', ['a', 'b']], [3n, 'fix', ['c']]]);
    expect(groupByRevision([])).toEqual([]);
  });
});
