/**
 * The compact structures of the tenant index: a subject's grants (array, then map), slim rows,
 * and that deletes free what inserts took (a long-running follower must not grow with churn).
 */
import { describe, expect, it } from 'vitest';
import { evaluate } from '../evaluate.js';
import type { Change, OwnershipGrant, TenantSnapshot } from '../model.js';
import { derivedState, grantSetCanonical } from '../testdata/derived-state.js';
import { mulberry32 } from '../../../test/seeded-random.js';
import { GRANT_SCAN_LIMIT, SubjectGrants, TenantIndex, bagRows } from './mod.js';

/** Grant ids of both forms: the service's own (packed into integers) for even i, a client's (kept as a string) for odd. */
const grantId = (i: number) => (i % 2 === 0 ? `ownership_grant_0192f3a4-0000-7000-8000-${i.toString(16).padStart(12, '0')}` : `ownership_grant_${i}`);
const grant = (i: number, resource = `resource_${i % 7}`): OwnershipGrant => ({ id: grantId(i), subjectId: 'subject_s', resourceId: resource, roleId: 'role_r' });
const ids = (b: ReturnType<SubjectGrants['get']>) => [...bagRows(b)].map((g) => g.id).sort();
/** Resource number r is `resource_r` (the index's nodes give a set its resource ids). */
const RESOURCE_IDS = { idOf: (num: number) => `resource_${num}` };

describe('SubjectGrants', () => {
  it('answers the same in array form and map form, through growth, deletes and re-inserts', () => {
    const set = new SubjectGrants('subject_s', -1, RESOURCE_IDS);
    const model = new Map<string, OwnershipGrant>();
    const check = () => {
      expect(set.size).toBe(model.size);
      for (const g of model.values()) expect(set.find(g.id)).toStrictEqual(g);
      expect(set.find('ownership_grant_none')).toBeUndefined();
      expect(set.find(grantId(100_000))).toBeUndefined();
      expect(set.has(grantId(100_000))).toBe(false);
      for (const g of model.values()) expect(set.has(g.id)).toBe(true);
      expect(set.rows().map((g) => g.id).sort()).toEqual([...model.keys()].sort());
      for (let r = 0; r < 8; r++) {
        const want = [...model.values()].filter((g) => g.resourceId === `resource_${r}`).map((g) => g.id).sort();
        expect(ids(set.get(r))).toEqual(want);
      }
      expect((grantSetCanonical(set) as { form: string }).form).toBe('ok');
    };
    for (let i = 0; i < 3 * GRANT_SCAN_LIMIT; i++) {
      set.add(grant(i).id, i % 7, 'role_r');
      model.set(grant(i).id, grant(i));
      check();
    }
    // Deleting an absent grant changes nothing (and names no resource).
    expect(set.delete(grant(10_000).id)).toBe(-1);
    check();
    for (let i = 0; i < 3 * GRANT_SCAN_LIMIT; i += 2) {
      // A delete gives back its grant's resource number (the index releases the node with it).
      expect(set.delete(grant(i).id)).toBe(i % 7);
      model.delete(grant(i).id);
      check();
    }
    for (let i = 0; i < 3 * GRANT_SCAN_LIMIT; i++) {
      if (!model.has(grant(i).id)) continue;
      set.delete(grant(i).id);
      model.delete(grant(i).id);
      check();
    }
    expect(set.size).toBe(0);
    // Re-inserts after emptying.
    for (let i = 0; i < GRANT_SCAN_LIMIT + 2; i++) {
      set.add(grant(i).id, 1, 'role_r');
      model.set(grant(i).id, grant(i, 'resource_1'));
    }
    check();
  });
});

function tenant(): TenantSnapshot {
  return {
    revision: 1,
    rows: {
      scope: [{ id: 'scope_0', tenantId: 't', parentId: null, typeId: 'st', name: 'root' }],
      subject: [{ id: 'subject_s', type: 'user', externalId: 's', metadata: { a: 1 } }],
      role: [{ id: 'role_r', scopeId: 'scope_0', key: 'r', name: 'r' }],
      permission: [{ id: 'permission_p', scopeId: 'scope_0', action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*' }],
      role_permission: [{ id: 'role_permission_1', roleId: 'role_r', permissionId: 'permission_p' }],
      resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_0', name: 'Doc' }],
    },
  };
}

describe('slim rows', () => {
  it('keeps the model fields of a wire row, exactly, and drops the others', () => {
    const idx = TenantIndex.fromSnapshot(tenant());
    const wire = (o: Record<string, unknown>) => JSON.parse(JSON.stringify({ tenantId: 'tenant_x', updatedAt: '2025-01-01T00:00:00.000Z', ...o }));
    const rows = [
      { id: 'resource_a', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: 'a', displayName: 'A', attributes: { k: [1, { b: null }] }, createdAt: '2025-01-02T03:04:05.120Z', createdBy: 'subject_s' },
      { id: 'resource_b', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: 'b', displayName: null, attributes: null, createdAt: '2025-01-02T03:04:05Z', createdBy: 'x' },
      { id: 'resource_c', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: '', displayName: '', attributes: {}, createdAt: 'not a time', createdBy: '' },
      { id: 'resource_d', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: 'd' },
    ];
    const changes = rows.map((r) => ({ op: 'upsert', kind: 'resource', id: r.id, row: wire(r) }) as Change);
    changes.push({ op: 'upsert', kind: 'ownership_grant', id: 'g1', row: wire({ id: 'g1', subjectId: 'subject_s', resourceId: 'resource_a', roleId: 'role_r', createdBy: 'x' }) });
    changes.push({ op: 'upsert', kind: 'subject', id: 'subject_t', row: wire({ id: 'subject_t', type: 'agent', externalId: 't', metadata: null }) });
    changes.push({ op: 'upsert', kind: 'membership', id: 'm1', row: wire({ id: 'm1', subjectId: 'subject_t', scopeId: 'scope_0' }) });
    changes.push({ op: 'upsert', kind: 'role_assignment', id: 'a1', row: wire({ id: 'a1', membershipId: 'm1', roleId: 'role_r' }) });
    changes.push({ op: 'upsert', kind: 'resource_edge', id: 'e1', row: wire({ id: 'e1', parentResourceId: 'resource_a', childResourceId: 'resource_b', cascade: 'inherit', relationshipType: null }) });
    idx.apply(2, changes);
    for (const r of rows) expect(idx.resource(r.id)).toStrictEqual(r);
    // The view the decision path reads gives the same fields (absent ones as undefined).
    for (const r of rows) {
      const view = idx.resourceView(idx.resourceNode(r.id)!) as unknown as Record<string, unknown>;
      for (const f of ['id', 'resourceTypeId', 'ownerScopeId', 'externalResourceId', 'displayName', 'attributes', 'createdAt', 'createdBy']) {
        expect(view[f], f).toEqual((r as Record<string, unknown>)[f]);
      }
    }
    expect(idx.ownershipGrant('g1')).toStrictEqual({ id: 'g1', subjectId: 'subject_s', resourceId: 'resource_a', roleId: 'role_r' });
    expect(idx.subject('subject_t')).toStrictEqual({ id: 'subject_t', type: 'agent', externalId: 't', metadata: null });
    expect(idx.membership('m1')).toStrictEqual({ id: 'm1', subjectId: 'subject_t', scopeId: 'scope_0' });
    expect(idx.roleAssignment('a1')).toStrictEqual({ id: 'a1', membershipId: 'm1', roleId: 'role_r' });
    expect(idx.resourceEdge('e1')).toStrictEqual({ id: 'e1', parentResourceId: 'resource_a', childResourceId: 'resource_b', cascade: 'inherit', relationshipType: null });
    // References share the referred row's string.
    expect(idx.ownershipGrant('g1')?.resourceId).toBe(idx.resource('resource_a')?.id);
    expect(evaluate(idx, { actor: { subjectId: 'subject_t' }, scopeId: 'scope_0', action: 'read', resource: { resourceId: 'resource_b' } }, { now: new Date(), gate: 'off' }).allowed).toBe(true);
    expect(idx.count('resource')).toBe(4);
  });
});

describe('churn', () => {
  it('deletes free what upserts took: numbers are reused and the state equals a fresh build', () => {
    const idx = TenantIndex.fromSnapshot(tenant());
    const res = (i: number, at = '2025-01-02T03:04:05.000Z') => ({ id: `resource_${i}`, resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: `e${i % 5}`, createdAt: at, createdBy: 'subject_s' });
    let revision = 1;
    for (let round = 0; round < 20; round++) {
      const up: Change[] = [];
      for (let i = 0; i < 200; i++) {
        up.push({ op: 'upsert', kind: 'resource', id: `resource_${i}`, row: res(i, i % 3 === 0 ? 'odd time' : undefined) });
        up.push({ op: 'upsert', kind: 'ownership_grant', id: `g${i}`, row: { id: `g${i}`, subjectId: 'subject_s', resourceId: `resource_${i}`, roleId: 'role_r' } });
        if (i > 0) up.push({ op: 'upsert', kind: 'resource_edge', id: `e${i}`, row: { id: `e${i}`, parentResourceId: `resource_${i - 1}`, childResourceId: `resource_${i}`, cascade: 'inherit' } });
      }
      idx.apply(++revision, up);
      expect(idx.count('resource')).toBe(200);
      expect(idx.subjectNode('subject_s')?.grantsByResource?.size).toBe(200);
      const down: Change[] = up.map((c) => ({ op: 'delete', kind: c.kind, id: c.id }) as Change);
      // Delete in another order than inserted.
      down.reverse();
      idx.apply(++revision, down);
      expect(idx.count('resource')).toBe(0);
    }
    const space = idx.resourceSpace();
    expect(space.nodes).toBe(0);
    expect(space.rawCreatedAt).toBe(0);
    // 200 nodes at most were live at once: numbers are reused, not handed out afresh.
    expect(space.numbers).toBeLessThanOrEqual(200);
    expect(idx.subjectNode('subject_s')?.grantsByResource).toBeUndefined();
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot({ ...tenant(), revision })));
  });
});

describe('external ids', () => {
  it('resources sharing an external id are all found, whichever goes first, and a permission naming it reaches each', () => {
    const idx = TenantIndex.fromSnapshot(tenant());
    let revision = 1;
    const types = ['doc', 'sheet', 'deck', 'note'];
    const setup: Change[] = types.map((k) => ({ op: 'upsert', kind: 'resource_type', id: `resource_type_${k}`, row: { id: `resource_type_${k}`, key: k, scopeId: 'scope_0', name: k } }) as Change);
    // One resource per type with external id 'shared', and one of each with its own.
    for (const k of types) {
      for (const ext of ['shared', `own_${k}`]) {
        setup.push({ op: 'upsert', kind: 'resource', id: `resource_${k}_${ext}`, row: { id: `resource_${k}_${ext}`, resourceTypeId: `resource_type_${k}`, ownerScopeId: 'scope_0', externalResourceId: ext } } as Change);
      }
    }
    setup.push({ op: 'upsert', kind: 'permission', id: 'permission_shared', row: { id: 'permission_shared', scopeId: 'scope_0', action: 'read', resourceType: 'doc', resourcePattern: 'shared', key: 'doc:read:shared' } });
    idx.apply(++revision, setup);
    const found = (k: string, ext: string) => idx.resourcesByExternalId(k, ext).map((r) => r.id);
    const patternsOf = (id: string) => {
      const n = idx.resourceNode(id);
      return n === undefined ? undefined : idx.resourceNodes.patterns(n);
    };
    for (const k of types) expect(found(k, 'shared')).toEqual([`resource_${k}_shared`]);
    for (const k of types) expect(patternsOf(`resource_${k}_shared`)).toBe(1);
    expect(patternsOf('resource_doc_own_doc')).toBe(0);
    // Deleting them one by one, the first filed first: the others stay found.
    for (const [i, k] of types.entries()) {
      idx.apply(++revision, [{ op: 'delete', kind: 'resource', id: `resource_${k}_shared` }]);
      expect(found(k, 'shared')).toEqual([]);
      for (const other of types.slice(i + 1)) expect(found(other, 'shared')).toEqual([`resource_${other}_shared`]);
      const live = setup.filter((c) => c.kind !== 'resource' || types.slice(i + 1).some((o) => c.id === `resource_${o}_shared`) || !c.id.endsWith('_shared'));
      expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshotWith(revision, live))));
    }
    // Back again, then the permission goes: every one of them drops its count.
    idx.apply(++revision, setup.filter((c) => c.kind === 'resource'));
    for (const k of types) expect(patternsOf(`resource_${k}_shared`)).toBe(1);
    idx.apply(++revision, [{ op: 'delete', kind: 'permission', id: 'permission_shared' }]);
    for (const k of types) expect(patternsOf(`resource_${k}_shared`)).toBe(0);
    for (const k of types) expect(found(k, 'shared')).toEqual([`resource_${k}_shared`]);
  });
});

describe('NumTable owners', () => {
  it('a rehash with a new seed lists exactly the keys each table holds (grant ids; external ids, shared ones once)', () => {
    const idx = TenantIndex.fromSnapshot(tenant());
    const changes: Change[] = [];
    for (let i = 0; i < 300; i++) {
      changes.push({ op: 'upsert', kind: 'resource', id: `resource_${i}`, row: { id: `resource_${i}`, resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: `e${i % 40}` } } as Change);
      changes.push({ op: 'upsert', kind: 'ownership_grant', id: `g${i}`, row: { id: `g${i}`, subjectId: `subject_${i % 7}`, resourceId: `resource_${i}`, roleId: 'role_r' } });
    }
    idx.apply(2, changes);
    idx.apply(3, changes.filter((_, i) => i % 3 === 0).map((c) => ({ op: 'delete', kind: c.kind, id: c.id }) as Change));
    const before = derivedState(idx);
    const { subjects, nodes } = idx.families();
    const tables = { grantsById: subjects.grantsById, externalFirst: nodes.externalFirst } as unknown as { grantsById: { reseed(): void; reseeds: number }; externalFirst: { reseed(): void; reseeds: number } };
    // What a long probe run would do (the seed is random, so keys cannot be made to collide here).
    tables.grantsById.reseed();
    tables.externalFirst.reseed();
    expect([tables.grantsById.reseeds, tables.externalFirst.reseeds]).toEqual([1, 1]);
    expect(derivedState(idx)).toEqual(before);
    // Change 2i is resource i, 2i + 1 grant i; every third change was deleted.
    for (let i = 0; i < 300; i++) {
      expect(idx.ownershipGrant(`g${i}`)?.resourceId, `g${i}`).toBe(i % 3 === 1 ? undefined : `resource_${i}`);
      expect(idx.resourcesByExternalId('doc', `e${i % 40}`).map((r) => r.id).includes(`resource_${i}`), `resource_${i}`).toBe(i % 3 !== 0);
    }
  });
});

/** The test tenant at `revision` with the rows of `changes` (upserts) added. */
function snapshotWith(revision: number, changes: Change[]): TenantSnapshot {
  const base = tenant();
  const rows: Record<string, unknown[]> = Object.fromEntries(Object.entries(base.rows).map(([k, v]) => [k, [...(v ?? [])]]));
  for (const c of changes) if (c.op === 'upsert') (rows[c.kind] ??= []).push(c.row);
  return { revision, rows: rows as TenantSnapshot['rows'] };
}

describe('grant sets', () => {
  it('an emptied set frees its number for the next subject, and grants stay found by id', () => {
    const idx = TenantIndex.fromSnapshot(tenant());
    let revision = 1;
    const grant = (s: number, i: number): Change => ({ op: 'upsert', kind: 'ownership_grant', id: `g${s}_${i}`, row: { id: `g${s}_${i}`, subjectId: `subject_${s}`, resourceId: `resource_${i}`, roleId: 'role_r' } });
    for (let round = 0; round < 10; round++) {
      // 30 subjects with 0..40 grants each (list and map forms), then every grant deleted.
      const up: Change[] = [];
      for (let s = 0; s < 30; s++) for (let i = 0; i < (s + round) % 41; i++) up.push(grant(s + 30 * round, i));
      idx.apply(++revision, up);
      for (const c of up) expect(idx.ownershipGrant(c.id)?.subjectId).toBe((c as { row: { subjectId: string } }).row.subjectId);
      expect(idx.count('ownership_grant')).toBe(up.length);
      idx.apply(++revision, up.map((c) => ({ op: 'delete', kind: c.kind, id: c.id }) as Change).reverse());
      for (const c of up) expect(idx.ownershipGrant(c.id)).toBeUndefined();
      expect(idx.count('ownership_grant')).toBe(0);
    }
    // 300 subjects held grants over the rounds, at most 30 at once.
    expect(idx.resourceSpace().grantSetNumbers).toBeLessThanOrEqual(30);
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot({ ...tenant(), revision })));
  });
});

describe('TenantIndex.builder', () => {
  it('rows in any order give the state fromSnapshot gives', async () => {
    const { genTenant } = await import('../testdata/generate.js');
    for (let seed = 1; seed <= 60; seed++) {
      const r = mulberry32(seed);
      const t = genTenant(r);
      const rows: [string, unknown][] = [];
      for (const [kind, list] of Object.entries(t.rows)) for (const row of list ?? []) rows.push([kind, row]);
      // Fisher–Yates with the same generator: arrival order unrelated to kinds.
      for (let i = rows.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [rows[i], rows[j]] = [rows[j], rows[i]];
      }
      const b = TenantIndex.builder();
      for (const [kind, row] of rows) b.add(kind as never, row);
      const built = b.build(t.revision);
      expect(built.revision).toBe(t.revision);
      expect(derivedState(built)).toEqual(derivedState(TenantIndex.fromSnapshot(t)));
      expect(() => b.add('scope', { id: 'x' })).toThrow(/already built/);
    }
  });

  it('gives the same state whatever number of resources it is sized for', async () => {
    const { genTenant } = await import('../testdata/generate.js');
    for (let seed = 1; seed <= 30; seed++) {
      const t = genTenant(mulberry32(seed));
      const expected = derivedState(TenantIndex.fromSnapshot(t));
      const n = t.rows.resource?.length ?? 0;
      // A size hint comes from the wire: too small, right, too large, or not a count at all.
      for (const hint of [0, 1, n, n + 1, 10 * n + 5000, -1, 1.5, NaN, Infinity]) {
        const b = TenantIndex.builder(hint);
        for (const kind of ['resource', ...Object.keys(t.rows).filter((k) => k !== 'resource')]) {
          for (const row of (t.rows as Record<string, unknown[] | undefined>)[kind] ?? []) b.add(kind as never, row);
        }
        expect(derivedState(b.build(t.revision)), `seed ${seed}, hint ${hint}`).toEqual(expected);
      }
    }
  });

  it('refuses a malformed row', () => {
    const b = TenantIndex.builder();
    expect(() => b.add('policy', { id: 'p' })).toThrow(/policy/);
    expect(() => b.add('nope' as never, { id: 'p' })).toThrow(/unknown kind/);
  });
});

describe('id bags', () => {
  it('grow from a string to an array to a set and back, matching a rebuild at every size', () => {
    const base = tenant();
    const idx = TenantIndex.fromSnapshot(base);
    let revision = 1;
    const rps = Array.from({ length: 20 }, (_, i) => ({ id: `role_permission_x${i}`, roleId: `role_${i}`, permissionId: 'permission_p' }));
    const roles = rps.map((rp) => ({ id: rp.roleId, scopeId: 'scope_0', key: rp.roleId, name: rp.roleId }));
    idx.apply(++revision, roles.map((row) => ({ op: 'upsert', kind: 'role', id: row.id, row }) as Change));
    const live: typeof rps = [];
    const expectRebuilt = () =>
      expect(derivedState(idx)).toEqual(
        derivedState(TenantIndex.fromSnapshot({ revision, rows: { ...base.rows, role: [...(base.rows.role ?? []), ...roles], role_permission: [...(base.rows.role_permission ?? []), ...live] } })),
      );
    for (const rp of rps) {
      idx.apply(++revision, [{ op: 'upsert', kind: 'role_permission', id: rp.id, row: rp }]);
      live.push(rp);
      expectRebuilt();
    }
    for (const rp of [...rps].reverse()) {
      idx.apply(++revision, [{ op: 'delete', kind: 'role_permission', id: rp.id }]);
      live.splice(live.indexOf(rp), 1);
      expectRebuilt();
    }
  });
});

describe('canonicalTime', () => {
  it('agrees with Date.parse and toISOString on valid, invalid and near-valid times', async () => {
    const { canonicalTime } = await import('./mod.js');
    const slow = (v: string) => {
      const ms = Date.parse(v);
      return v.length === 24 && !Number.isNaN(ms) && new Date(ms).toISOString() === v ? ms : NaN;
    };
    const r = mulberry32(7);
    const cases = ['2025-01-02T03:04:05.120Z', '2024-02-29T23:59:59.999Z', '2023-02-29T00:00:00.000Z', '0099-01-01T00:00:00.000Z', '0100-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2025-13-01T00:00:00.000Z', '2025-04-31T00:00:00.000Z', '2025-01-01T24:00:00.000Z', '2025-01-01T00:60:00.000Z', '2025-01-01T00:00:60.000Z', '2025-01-01 00:00:00.000Z', '2025-01-01T00:00:00.000+', '2025-01-01T00:00:00Z', '1900-02-29T00:00:00.000Z', '2000-02-29T00:00:00.000Z', '-025-01-01T00:00:00.000Z', '2025-01-0aT00:00:00.000Z'];
    for (let i = 0; i < 20_000; i++) {
      const ms = Math.floor((r() * 2 - 0.5) * 4e14);
      const iso = new Date(ms).toISOString();
      cases.push(iso);
      // One character changed to a digit or a separator.
      const k = Math.floor(r() * iso.length);
      cases.push(iso.slice(0, k) + '0123456789-:.TZ'[Math.floor(r() * 15)] + iso.slice(k + 1));
    }
    for (const c of cases) expect(canonicalTime(c), c).toBe(slow(c));
    expect(canonicalTime(undefined)).toBeNaN();
    expect(canonicalTime(1)).toBeNaN();
  });
});
