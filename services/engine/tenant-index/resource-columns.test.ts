/**
 * Resource nodes as columns by number (resource-nodes.ts): the columns grow past the size a
 * build was made for and shrink back to their count once built, a dropped node's number is
 * reused only after its revision is applied, and ids of both forms (the service's own, kept as
 * four words; a client's, kept as strings) read back and order as strings. Each case compares
 * the index with a fresh build of the same rows (derived-state.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Change, EntityKind, TenantSnapshot } from '../model.js';
import { derivedState } from '../testdata/derived-state.js';
import { TenantIndex } from './mod.js';

/** Resource i: the service's form for two in three (first groups on both sides of 7fffffff), a client's for the third. */
const rid = (i: number) =>
  i % 3 === 2 ? `resource_client_${i}` : `resource_${(i % 2 === 0 ? 0x0192f3a4 + i : 0x80000000 + i).toString(16).padStart(8, '0')}-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;

const BASE: Partial<Record<EntityKind, unknown[]>> = {
  scope: [{ id: 'scope_0', tenantId: 'tenant_1', typeId: 'scope_type_x', name: 'root', parentId: null }],
  subject: [{ id: 'subject_s', type: 'user', externalId: 'ext-s', metadata: {} }],
  resource_type: [{ id: 'resource_type_doc', key: 'doc', scopeId: 'scope_0', name: 'Doc' }],
  role: [{ id: 'role_r', scopeId: 'scope_0', name: 'r' }],
};

/** The rows of resources `from..to` (each in a folder of ten, a grant on every fourth). */
function rowsOf(from: number, to: number): Change[] {
  const out: Change[] = [];
  for (let i = from; i < to; i++) {
    const id = rid(i);
    out.push({ op: 'upsert', kind: 'resource', id, row: { id, resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_0', externalResourceId: `e${i}`, displayName: `doc ${i}` } } as Change);
    if (i % 10 !== 0) {
      const e = `edge_${i}`;
      out.push({ op: 'upsert', kind: 'resource_edge', id: e, row: { id: e, parentResourceId: rid(i - (i % 10)), childResourceId: id, cascade: 'inherit' } } as Change);
    }
    if (i % 4 === 0) out.push({ op: 'upsert', kind: 'ownership_grant', id: `g${i}`, row: { id: `g${i}`, subjectId: 'subject_s', resourceId: id, roleId: 'role_r' } });
  }
  return out;
}

function snapshot(revision: number, changes: readonly Change[]): TenantSnapshot {
  const rows: Record<string, unknown[]> = Object.fromEntries(Object.entries(BASE).map(([k, v]) => [k, [...(v ?? [])]]));
  const live = new Map<string, Change>();
  for (const c of changes) {
    if (c.op === 'upsert') live.set(`${c.kind} ${c.id}`, c);
    else live.delete(`${c.kind} ${c.id}`);
  }
  for (const c of live.values()) if (c.op === 'upsert') (rows[c.kind] ??= []).push(c.row);
  return { revision, rows: rows as TenantSnapshot['rows'] };
}

function build(expectedResources: number, changes: readonly Change[], revision: number): TenantIndex {
  const b = TenantIndex.builder(expectedResources);
  for (const [kind, rows] of Object.entries(snapshot(revision, changes).rows)) for (const row of rows ?? []) b.add(kind as EntityKind, row);
  return b.build(revision);
}

/** Ids in the index's listing order, and the same ids sorted as strings. */
function orders(idx: TenantIndex): [string[], string[]] {
  const listed = idx.resourcesInIdOrder().map((n) => idx.resourceNodes.idOf(n));
  return [listed, [...listed].sort()];
}

describe('resource columns', () => {
  it('grow past the size a build was made for, and equal a build sized for them', () => {
    const changes = rowsOf(0, 3000);
    // Made for none (1,024 numbers at first): the columns grow twice on the way.
    const grown = build(0, changes, 1);
    expect(grown.resourceSpace().numbers).toBe(3000);
    expect(derivedState(grown)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshot(1, changes))));
    const [listed, sorted] = orders(grown);
    expect(listed).toEqual(sorted);
    expect(listed.length).toBe(3000);
    for (const i of [0, 1, 2, 1023, 1024, 2999]) expect(grown.resource(rid(i))?.displayName).toBe(`doc ${i}`);
  });

  it('shrink to their count once built when made for many more, and grow again on later revisions', () => {
    const first = rowsOf(0, 1500);
    const idx = build(50_000, first, 1);
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshot(1, first))));
    const more = rowsOf(1500, 4000);
    idx.apply(2, more);
    const all = [...first, ...more];
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshot(2, all))));
    const [listed, sorted] = orders(idx);
    expect(listed).toEqual(sorted);
  });

  it("reuse a dropped node's number only after the revision that dropped it, keeping the id order", () => {
    const first = rowsOf(0, 400);
    const idx = TenantIndex.fromSnapshot(snapshot(1, first));
    // The order is built before the changes, so each change moves it.
    expect(orders(idx)[0].length).toBe(400);
    const gone = first.filter((c) => c.kind === 'resource' && Number(c.id.slice(-3)) % 2 === 1).map((c) => c.id);
    const dropping = first.filter((c) => gone.some((id) => c.kind === 'resource' ? c.id === id : c.kind === 'ownership_grant' ? (c.row as { resourceId: string }).resourceId === id : (c.row as { childResourceId: string }).childResourceId === id));
    const deletes = dropping.map((c) => ({ op: 'delete', kind: c.kind, id: c.id }) as Change);
    // Deletes and creates in one revision: the creates take new numbers.
    const created = rowsOf(400, 450);
    idx.apply(2, [...deletes, ...created]);
    expect(idx.resourceSpace().numbers).toBeGreaterThanOrEqual(450);
    let all = [...first, ...deletes, ...created];
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshot(2, all))));
    let [listed, sorted] = orders(idx);
    expect(listed).toEqual(sorted);
    // The next revision's creates take the dropped numbers: none handed out afresh.
    const numbers = idx.resourceSpace().numbers;
    const again = rowsOf(450, 500);
    idx.apply(3, again);
    expect(idx.resourceSpace().numbers).toBe(numbers);
    all = [...all, ...again];
    expect(derivedState(idx)).toEqual(derivedState(TenantIndex.fromSnapshot(snapshot(3, all))));
    [listed, sorted] = orders(idx);
    expect(listed).toEqual(sorted);
    for (const id of gone) expect(idx.resource(id)).toBeUndefined();
    for (let i = 450; i < 500; i++) expect(idx.resource(rid(i))?.externalResourceId).toBe(`e${i}`);
  });
});
