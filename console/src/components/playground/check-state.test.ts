import { describe, expect, it } from 'vitest';
import {
  emptyForm, evaluateRequest, formFromSearch, namesACheck, playgroundHref, restBody, searchFromForm, validateForm, type CheckForm,
} from './check-state.js';

const form = (over: Partial<CheckForm>): CheckForm => ({ ...emptyForm('scope_root'), ...over });

describe('the check in the query string', () => {
  it('reads each name of the playground URL, and writes them back the same', () => {
    const search = 'externalId=alice&scopeId=scope_eng&action=write&resourceType=document&externalResourceId=roadmap&context=%7B%22ip%22%3A%2210.0.0.1%22%7D&atRevision=2';
    const f = formFromSearch(new URLSearchParams(search));
    expect(f).toMatchObject({ subjectBy: 'externalId', subject: 'alice', scopeId: 'scope_eng', action: 'write', resourceBy: 'external', resourceType: 'document', externalResourceId: 'roadmap', context: '{"ip":"10.0.0.1"}', atRevision: '2' });
    expect(searchFromForm(f)).toBe(search);
  });

  it('takes a subject id and a resource id, and fills a missing scope with the default', () => {
    const f = formFromSearch(new URLSearchParams('subjectId=subject_1&action=read&resourceId=resource_9'), 'scope_root');
    expect(f).toMatchObject({ subjectBy: 'subjectId', subject: 'subject_1', scopeId: 'scope_root', resourceBy: 'id', resourceId: 'resource_9' });
    expect(searchFromForm(f)).toBe('subjectId=subject_1&scopeId=scope_root&action=read&resourceId=resource_9');
  });

  it('leaves out the fields of the resource choice not taken', () => {
    const f = form({ subject: 'bob', action: 'read', resourceBy: 'none', resourceType: 'document', resourceId: 'resource_1' });
    expect(searchFromForm(f)).toBe('externalId=bob&scopeId=scope_root&action=read');
  });

  it('names a check only when one of its names is present', () => {
    expect(namesACheck(new URLSearchParams(''))).toBe(false);
    expect(namesACheck(new URLSearchParams('other=1'))).toBe(false);
    expect(namesACheck(new URLSearchParams('action=read'))).toBe(true);
  });

  it('builds the playground link other views use', () => {
    expect(playgroundHref({ subjectId: 'subject_1', scopeId: 'scope_eng', action: 'write', resourceType: 'document', externalResourceId: 'road map' }))
      .toBe('/playground?subjectId=subject_1&scopeId=scope_eng&action=write&resourceType=document&externalResourceId=road+map');
  });
});

describe('validation before any call', () => {
  it('names every missing field', () => {
    const r = validateForm(form({ scopeId: '' }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.field)).toEqual(['subject', 'scopeId', 'action']);
    expect(r.errors[0].message).toBe("The subject's external id is required");
  });

  it('wants both the type and the external id of a resource', () => {
    const r = validateForm(form({ subject: 'alice', action: 'read', resourceBy: 'external', externalResourceId: 'roadmap' }));
    expect(r.ok ? [] : r.errors).toEqual([{ field: 'resourceType', message: 'The resource type is required' }]);
  });

  it('says a context that is not JSON is not JSON, and one that is not an object must be one', () => {
    const notJson = validateForm(form({ subject: 'alice', action: 'read', context: '{ip: 1}' }));
    expect(notJson.ok ? '' : notJson.errors[0]).toMatchObject({ field: 'context', message: expect.stringMatching(/^The context is not JSON: /) });
    const list = validateForm(form({ subject: 'alice', action: 'read', context: '[1]' }));
    expect(list.ok ? '' : list.errors[0].message).toMatch(/must be a JSON object/);
  });

  it('takes a revision of 1 or more only', () => {
    for (const bad of ['0', '-1', '1.5', 'two']) {
      const r = validateForm(form({ subject: 'alice', action: 'read', atRevision: bad }));
      expect(r.ok ? '' : r.errors[0].field, bad).toBe('atRevision');
    }
    const r = validateForm(form({ subject: 'alice', action: 'read', atRevision: ' 12 ' }));
    expect(r.ok && r.check.atRevision).toBe(12);
  });

  it('gives the Evaluate request with the trace asked for and the revision as consistency', () => {
    const r = validateForm(form({ subjectBy: 'subjectId', subject: ' subject_1 ', action: 'read', resourceBy: 'id', resourceId: 'resource_2', context: '{"a":1}', atRevision: '3' }));
    if (!r.ok) throw new Error('expected a valid check');
    expect(evaluateRequest(r.check)).toEqual({
      actor: { subjectId: 'subject_1' }, scopeId: 'scope_root', action: 'read', explain: true,
      resource: { resourceId: 'resource_2' }, context: { a: 1 }, consistency: { atRevision: 3n },
    });
    expect(restBody(r.check)).toEqual({
      actor: { subjectId: 'subject_1' }, scopeId: 'scope_root', action: 'read', resource: { resourceId: 'resource_2' }, context: { a: 1 }, explain: true, consistency: { atRevision: 3 },
    });
  });
});
