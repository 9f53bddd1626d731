import { describe, expect, it } from 'vitest';
import { AmbiguousSubjectError } from '../errors.js';
import { effectivePermissions } from '../effective.js';
import { evaluate } from '../evaluate.js';
import type { Change, Subject, TenantSnapshot } from '../model.js';
import { subjectByExternalId } from '../subject-ref.js';
import { derivedState } from '../testdata/derived-state.js';
import { TenantIndex } from './mod.js';

const opts = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

/** Subjects as given; `subject_alice` holds role_r (doc:read:*) at scope_0. */
function tenant(subject: Subject[]): TenantSnapshot {
  return {
    revision: 1,
    rows: {
      scope: [{ id: 'scope_0', tenantId: 't', parentId: null, typeId: 'st', name: 'root' }],
      subject,
      role: [{ id: 'role_r', scopeId: 'scope_0', key: 'r', name: 'r' }],
      permission: [{ id: 'permission_p', scopeId: 'scope_0', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' }],
      role_permission: [{ id: 'role_permission_1', roleId: 'role_r', permissionId: 'permission_p' }],
      membership: [{ id: 'membership_1', subjectId: 'subject_alice', scopeId: 'scope_0' }],
      role_assignment: [{ id: 'role_assignment_1', membershipId: 'membership_1', roleId: 'role_r' }],
    },
  };
}

const alice: Subject = { id: 'subject_alice', type: 'user', externalId: 'alice' };
const aliceBot: Subject = { id: 'subject_alice_bot', type: 'agent', externalId: 'alice' };
const bob: Subject = { id: 'subject_bob', type: 'user', externalId: 'bob' };

const idOf = (idx: TenantIndex, ext: string, type?: string) => subjectByExternalId(idx, ext, type)?.row?.id;
const byExternal = (externalId: string, subjectType?: string, explain = false) => ({
  actor: { externalId, ...(subjectType !== undefined ? { subjectType } : {}) }, scopeId: 'scope_0', action: 'read', explain,
});
const upsert = (row: Subject): Change => ({ op: 'upsert', kind: 'subject', id: row.id, row });
const remove = (id: string): Change => ({ op: 'delete', kind: 'subject', id });

describe('subjects by external id', () => {
  it('finds the one subject with an external id, and none for an unknown one', () => {
    const idx = TenantIndex.fromSnapshot(tenant([alice, bob]));
    expect(idOf(idx, 'alice')).toBe('subject_alice');
    expect(idOf(idx, 'bob')).toBe('subject_bob');
    expect(idOf(idx, 'carol')).toBeUndefined();
    // A type narrows: another type's subject is not found.
    expect(idOf(idx, 'alice', 'user')).toBe('subject_alice');
    expect(idOf(idx, 'alice', 'agent')).toBeUndefined();
    // An external id is not a subject id, nor the other way round.
    expect(idOf(idx, 'subject_alice')).toBeUndefined();
  });

  it('tells subjects of different types sharing an external id apart by type, and refuses to guess without one', () => {
    const idx = TenantIndex.fromSnapshot(tenant([alice, aliceBot, bob]));
    expect(idOf(idx, 'alice', 'user')).toBe('subject_alice');
    expect(idOf(idx, 'alice', 'agent')).toBe('subject_alice_bot');
    expect(idOf(idx, 'alice', 'service')).toBeUndefined();
    const err = (() => {
      try {
        subjectByExternalId(idx, 'alice', undefined);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AmbiguousSubjectError);
    expect((err as AmbiguousSubjectError).types).toEqual(['agent', 'user']);
    expect((err as AmbiguousSubjectError).typeWouldPick).toBe(true);
    // An empty type is proto3's "not given".
    expect(() => subjectByExternalId(idx, 'alice', '')).toThrow(AmbiguousSubjectError);
    // Several of one type (no API refuses it): no type can pick one.
    const twins = TenantIndex.fromSnapshot(tenant([alice, { ...bob, externalId: 'alice' }]));
    expect(() => subjectByExternalId(twins, 'alice', 'user')).toThrow(/2 subjects of type user/);
  });

  it('follows creates, deletes and external id changes', () => {
    const idx = TenantIndex.fromSnapshot(tenant([bob]));
    expect(idOf(idx, 'alice')).toBeUndefined();
    idx.apply(2, [upsert(alice)]);
    expect(idOf(idx, 'alice')).toBe('subject_alice');
    idx.apply(3, [upsert(aliceBot)]);
    expect(() => subjectByExternalId(idx, 'alice', undefined)).toThrow(AmbiguousSubjectError);
    idx.apply(4, [remove('subject_alice')]);
    expect(idOf(idx, 'alice')).toBe('subject_alice_bot');
    // A changed external id leaves the old one.
    idx.apply(5, [upsert({ ...aliceBot, externalId: 'bot-1' })]);
    expect(idOf(idx, 'alice')).toBeUndefined();
    expect(idOf(idx, 'bot-1')).toBe('subject_alice_bot');
    idx.apply(6, [upsert(alice), upsert({ ...bob, externalId: 'alice' }), remove('subject_bob')]);
    expect(idOf(idx, 'alice')).toBe('subject_alice');
    // The incremental tables equal a rebuilt index's.
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(tenant([alice, { ...aliceBot, externalId: 'bot-1' }]))));
    idx.apply(7, [remove('subject_alice'), remove('subject_alice_bot')]);
    expect(idOf(idx, 'alice')).toBeUndefined();
    expect(idx.families().subjects.byExternal.size + idx.families().subjects.sharedExternal.size).toBe(0);
  });

  it('decides by external id as by id, and says which subject it resolved', () => {
    const idx = TenantIndex.fromSnapshot(tenant([alice, aliceBot, bob]));
    const byId = evaluate(idx, { actor: { subjectId: 'subject_alice' }, scopeId: 'scope_0', action: 'read' }, opts);
    const d = evaluate(idx, byExternal('alice', 'user', true), opts);
    expect([d.allowed, d.reason]).toEqual([byId.allowed, byId.reason]);
    expect([d.allowed, d.reason]).toEqual([true, 'role']);
    const step = d.trace!.find((s) => s.leg === 'subject')!;
    expect(step.message).toBe('subject subject_alice (user) from external id "alice"');
    expect(step.detail).toEqual({ subjectId: 'subject_alice' });
    expect(evaluate(idx, byExternal('bob'), opts).reason).toBe('no_match');
    const unknown = evaluate(idx, byExternal('carol', undefined, true), opts);
    expect([unknown.allowed, unknown.reason]).toEqual([false, 'subject_not_found']);
    expect(unknown.trace!.find((s) => s.leg === 'subject')!.message).toBe('subject with external id "carol" not found');
    // Of another type: no such subject.
    expect(evaluate(TenantIndex.fromSnapshot(tenant([alice])), byExternal('alice', 'agent'), opts).reason).toBe('subject_not_found');
    expect(() => evaluate(idx, byExternal('alice'), opts)).toThrow(AmbiguousSubjectError);
    // Both or neither: a malformed request, denied.
    expect(evaluate(idx, { actor: { subjectId: 'subject_alice', externalId: 'alice' }, scopeId: 'scope_0', action: 'read' }, opts).reason).toBe('error');
    expect(evaluate(idx, { actor: {}, scopeId: 'scope_0', action: 'read' }, opts).reason).toBe('error');
  });

  it('lists effective permissions by external id as by id', () => {
    const idx = TenantIndex.fromSnapshot(tenant([alice, aliceBot]));
    const byId = effectivePermissions(idx, { subjectId: 'subject_alice', scopeId: 'scope_0' });
    expect(byId.map((p) => p.key)).toEqual(['doc:read:*']);
    expect(effectivePermissions(idx, { subjectExternalId: 'alice', subjectType: 'user', scopeId: 'scope_0' })).toEqual(byId);
    expect(effectivePermissions(idx, { subjectExternalId: 'nobody', scopeId: 'scope_0' })).toEqual([]);
    expect(effectivePermissions(idx, { subjectId: 'subject_alice', subjectType: 'agent', scopeId: 'scope_0' })).toEqual([]);
    expect(() => effectivePermissions(idx, { subjectExternalId: 'alice', scopeId: 'scope_0' })).toThrow(AmbiguousSubjectError);
  });
});
