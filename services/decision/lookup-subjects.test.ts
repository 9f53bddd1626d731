/**
 * LookupSubjects requests: validation naming the field, and the cursor, which pages only the
 * listing it was returned for: any change to the query, or a cursor of a LookupResources listing,
 * is `invalid_argument` on `cursor` (the digest covers the listing's kind).
 */
import { describe, expect, it } from 'vitest';
import { DomainError } from '../common/errors.js';
import { decodeCursor, encodeCursor, listingDigest } from './cursor.js';
import { parseLookupResources } from './lookup.js';
import { parseLookupSubjects, type LookupSubjectsLike } from './lookup-subjects.js';

const base: LookupSubjectsLike = {
  scopeId: 'scope_1', action: 'read', resource: { resourceId: 'resource_1' }, subjectType: 'user', context: { ip: '10.0.0.1' },
};

/** The field a request error names, or undefined when it parses. */
function fieldOf(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    if (e instanceof DomainError && e.kind === 'invalid') return e.field;
    throw e;
  }
}

describe('parseLookupSubjects', () => {
  it('names the field of a bad request', () => {
    expect(fieldOf(() => parseLookupSubjects(base))).toBeUndefined();
    expect(fieldOf(() => parseLookupSubjects({ ...base, scopeId: '' }))).toBe('scopeId');
    expect(fieldOf(() => parseLookupSubjects({ ...base, action: undefined }))).toBe('action');
    expect(fieldOf(() => parseLookupSubjects({ ...base, resource: { externalResourceId: 'x' } }))).toBe('resource.resourceType');
    expect(fieldOf(() => parseLookupSubjects({ ...base, resource: { resourceId: 'r', externalResourceId: 'x' } }))).toBe('resource');
    for (const pageSize of [-1, 1001, 2.5]) expect(fieldOf(() => parseLookupSubjects({ ...base, pageSize }))).toBe('pageSize');
    expect(parseLookupSubjects({ ...base, pageSize: 0 }).query.pageSize).toBe(100);
    expect(parseLookupSubjects({ ...base, pageSize: 1000 }).query.pageSize).toBe(1000);
    expect(parseLookupSubjects({ ...base, resource: null }).query.resource).toBeUndefined();
    for (const cursor of ['not a cursor', 'bm90IGpzb24', Buffer.from('{"v":1,"r":-1,"a":"x","q":"y"}').toString('base64url')]) {
      expect(fieldOf(() => parseLookupSubjects({ ...base, cursor })), cursor).toBe('cursor');
    }
  });

  it('takes the cursor of its own listing only: any change to the query refuses it, explain does not', () => {
    const first = parseLookupSubjects(base);
    const cursor = encodeCursor({ r: 7, a: 'subject_5', q: first.digest });
    expect(parseLookupSubjects({ ...base, cursor, explain: true, pageSize: 3 }).cursor).toEqual({ r: 7, a: 'subject_5', q: first.digest });
    const changes: LookupSubjectsLike[] = [
      { scopeId: 'scope_2' }, { action: 'write' }, { resource: { resourceId: 'resource_2' } }, { resource: { externalResourceId: 'resource_1', resourceType: 'doc' } },
      { resource: undefined }, { subjectType: 'service' }, { subjectType: undefined }, { context: { ip: '10.0.0.2' } }, { context: undefined },
    ];
    for (const change of changes) expect(fieldOf(() => parseLookupSubjects({ ...base, ...change, cursor })), JSON.stringify(change)).toBe('cursor');
  });

  it('refuses a cursor of a LookupResources listing, and LookupResources refuses its cursors', () => {
    const resources = parseLookupResources({ actor: { subjectId: 'subject_1' }, scopeId: 'scope_1', action: 'read' });
    const subjects = parseLookupSubjects(base);
    expect(fieldOf(() => parseLookupSubjects({ ...base, cursor: encodeCursor({ r: 1, a: 'x', q: resources.digest }) }))).toBe('cursor');
    expect(fieldOf(() => parseLookupResources({ actor: { subjectId: 'subject_1' }, scopeId: 'scope_1', action: 'read', cursor: encodeCursor({ r: 1, a: 'x', q: subjects.digest }) }))).toBe('cursor');
  });
});

describe('the listing cursor', () => {
  it('digests the listing kind: the same query of the other kind has another digest, and its cursor is refused', () => {
    const query = ['scope_1', 'read', null];
    const resources = listingDigest('resources', query);
    const subjects = listingDigest('subjects', query);
    expect(resources).not.toBe(subjects);
    const cursor = encodeCursor({ r: 3, a: 'x', q: resources });
    expect(decodeCursor(cursor, 'resources', resources, 'the query')).toEqual({ r: 3, a: 'x', q: resources });
    expect(fieldOf(() => decodeCursor(cursor, 'subjects', subjects, 'the query'))).toBe('cursor');
  });
});
