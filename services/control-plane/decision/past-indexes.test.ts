/**
 * Point-in-time decisions (`consistency.atRevision`/`atTime`) and listings paged across writes,
 * against a real database. For a random, seeded write history over a tenant with every kind of
 * grant (role permissions by pattern, memberships, ownership, hierarchy, scope links, resource
 * policies, collections matched on attributes, subject conditions), every decision asked at a
 * past revision R equals both the decision the service gave live at R and the decision of an
 * index rebuilt forward from the change log up to R. Replay a run with HISTORY_SEED=<seed>.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConnectError } from '@connectrpc/connect';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { ENTITY_KINDS, evaluate, TenantIndex, type Change, type EntityKind } from '../../engine/mod.js';
import { changesAfter } from '../../store/change-log.js';
import { compactChangeLog } from '../../store/compaction.js';
import { changeLogData, type KindName, type Row } from '../../store/kinds.js';
import { runWrite } from '../../store/write.js';
import { PastIndexes } from './past-indexes.js';
import { createTestApp, describeEachBackend, seedTenant, type TestApp } from '../../../test/harness.js';
import { mulberry32 } from '../../../test/seeded-random.js';

const TENANT = 'tenant_h';
const ROOT = `scope_${TENANT}`;
const SCOPES = [ROOT, 'scope_team', 'scope_sub'];
const SUBJECTS = ['subject_alice', 'subject_bob', 'subject_carol'];
const RESOURCES = ['resource_f1', 'resource_d1', 'resource_d2', 'resource_d3', 'resource_d4'];
const ACTIONS = ['read', 'edit'];
const SEED = Number(process.env.HISTORY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const STEPS = 40;

const base = (row: Row): Row => ({ tenantId: TENANT, createdAt: new Date(), createdBy: 'test', ...row });

/** The fixed part of the tenant, parents first. */
const FIXED: [KindName, Row][] = [
  ['scope', { id: 'scope_team', name: 'team', typeId: 'scope_type_tenant', parentId: ROOT }],
  ['scope', { id: 'scope_sub', name: 'sub', typeId: 'scope_type_tenant', parentId: 'scope_team' }],
  ['subject', { id: 'subject_alice', type: 'user', externalId: 'alice', metadata: { dept: 'eng' } }],
  ['subject', { id: 'subject_bob', type: 'user', externalId: 'bob', metadata: { dept: 'ops' } }],
  ['subject', { id: 'subject_carol', type: 'user', externalId: 'carol', metadata: {} }],
  ['resourceType', { id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: ROOT }],
  ['resourceType', { id: 'resource_type_folder', name: 'Folder', key: 'folder', scopeId: ROOT }],
  ['resource', { id: 'resource_f1', resourceTypeId: 'resource_type_folder', ownerScopeId: 'scope_team', externalResourceId: 'f1', attributes: {} }],
  ...[1, 2, 3, 4].map((i): [KindName, Row] => ['resource', { id: `resource_d${i}`, resourceTypeId: 'resource_type_doc', ownerScopeId: SCOPES[i % 3], externalResourceId: `d${i}`, attributes: { level: i } }]),
  ['role', { id: 'role_reader', scopeId: ROOT, key: 'reader', name: 'Reader', description: '' }],
  ['role', { id: 'role_editor', scopeId: ROOT, key: 'editor', name: 'Editor', description: '' }],
  ['permission', { id: 'permission_read_all', scopeId: ROOT, action: 'read', resourceType: 'doc', resourcePattern: '*', key: 'doc:read:*', name: '', description: '' }],
  ['permission', { id: 'permission_edit_d2', scopeId: ROOT, action: 'edit', resourceType: 'doc', resourcePattern: 'd2', key: 'doc:edit:d2', name: '', description: '' }],
  ['permission', { id: 'permission_read_f1', scopeId: ROOT, action: 'read', resourceType: 'doc', resourcePattern: 'resource_f1', key: 'doc:read:f1', name: '', description: '' }],
  ['permission', { id: 'permission_read_folder', scopeId: ROOT, action: 'read', resourceType: 'folder', resourcePattern: '*', key: 'folder:read:*', name: '', description: '' }],
  ['membership', { id: 'membership_alice', subjectId: 'subject_alice', scopeId: 'scope_team' }],
  ['membership', { id: 'membership_bob', subjectId: 'subject_bob', scopeId: 'scope_sub' }],
  ['membership', { id: 'membership_carol', subjectId: 'subject_carol', scopeId: ROOT }],
  ['collection', { id: 'collection_high', scopeId: ROOT, resourceTypeId: 'resource_type_doc', name: 'high', matchDefinition: { fields: { 'attributes.level': { gte: 3 } } } }],
];

/** Rows a history switches on and off (nothing refers to them). */
const TOGGLED: [KindName, Row][] = [
  ['rolePermission', { id: 'rp_reader_read', roleId: 'role_reader', permissionId: 'permission_read_all' }],
  ['rolePermission', { id: 'rp_reader_f1', roleId: 'role_reader', permissionId: 'permission_read_f1' }],
  ['rolePermission', { id: 'rp_reader_folder', roleId: 'role_reader', permissionId: 'permission_read_folder' }],
  ['rolePermission', { id: 'rp_editor_d2', roleId: 'role_editor', permissionId: 'permission_edit_d2' }],
  ['roleAssignment', { id: 'ra_alice_reader', membershipId: 'membership_alice', roleId: 'role_reader' }],
  ['roleAssignment', { id: 'ra_bob_editor', membershipId: 'membership_bob', roleId: 'role_editor' }],
  ['roleAssignment', { id: 'ra_carol_reader', membershipId: 'membership_carol', roleId: 'role_reader' }],
  ['ownershipGrant', { id: 'og_carol_d3', subjectId: 'subject_carol', resourceId: 'resource_d3', roleId: 'role_editor' }],
  ['resourceEdge', { id: 'edge_f1_d1', parentResourceId: 'resource_f1', childResourceId: 'resource_d1', cascade: 'inherit', relationshipType: 'contains' }],
  ['resourceScopeLink', { id: 'link_d4_sub', resourceId: 'resource_d4', scopeId: 'scope_sub', linkType: 'share' }],
  ['policy', { id: 'policy_deny_d4', scopeId: ROOT, target: { kind: 'resource', resourceId: 'resource_d4' }, targetId: 'resource_d4', actions: ['read'], effect: 'deny', priority: 5 }],
  ['policy', { id: 'policy_high_edit', scopeId: ROOT, target: { kind: 'collection', collectionId: 'collection_high' }, targetId: 'collection_high', actions: ['edit'], effect: 'allow', priority: 1, subjectCondition: { '==': [{ var: 'subject.meta.dept' }, 'eng'] } }],
];

interface Query { subjectId: string; scopeId: string; action: string; resourceId: string }
const QUERIES: Query[] = SUBJECTS.flatMap((subjectId) => SCOPES.flatMap((scopeId) => ACTIONS.flatMap((action) => RESOURCES.map((resourceId) => ({ subjectId, scopeId, action, resourceId })))));
const request = (q: Query) => ({ actor: { subjectId: q.subjectId }, scopeId: q.scopeId, action: q.action, resource: { resourceId: q.resourceId } });

/** The toggled rows stored now. */
const on = new Set<string>();

/** The resources and subjects as stored (an update records the row it replaces). */
const stored = new Map<string, Row>();

/** One random write of the history: a toggle of a row, or an update of a resource or subject. */
async function randomWrite(app: TestApp, rand: () => number): Promise<number> {
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const { revision } = await runWrite(app.db, async (tx) => {
    await tx.useTenant(TENANT);
    for (let n = 1 + Math.floor(rand() * 2); n > 0; n--) {
      const r = rand();
      if (r < 0.6) {
        const [kind, row] = pick(TOGGLED);
        if (on.has(row.id as string)) {
          await tx.delete(kind, [row.id as string]);
          on.delete(row.id as string);
        } else {
          await tx.insert(kind, [base(row)]);
          on.add(row.id as string);
        }
        continue;
      }
      const [kind, id, patch]: [KindName, string, Row] = r < 0.85
        ? ['resource', pick(RESOURCES.slice(1)), { attributes: { level: Math.floor(rand() * 5) }, ownerScopeId: pick(SCOPES) }]
        : ['subject', pick(SUBJECTS), { metadata: { dept: pick(['eng', 'ops']) } }];
      const row = stored.get(id)!;
      await tx.update(kind, row, patch);
      stored.set(id, { ...row, ...patch });
    }
  });
  return revision!;
}

/** The tenant's index rebuilt forward from its change log, from revision 1 to `upto`. */
async function forwardIndex(app: TestApp, upto: number): Promise<TenantIndex> {
  const index = TenantIndex.fromSnapshot({ revision: 0, rows: {} });
  const byRevision = new Map<number, Change[]>();
  for (const r of await changesAfter(app.db, TENANT, 0)) {
    const revision = Number(r.revision);
    if (revision > upto || !(ENTITY_KINDS as readonly string[]).includes(r.kind)) continue;
    const row = r.data ? changeLogData(r.kind, r.data) : undefined;
    if (!byRevision.has(revision)) byRevision.set(revision, []);
    byRevision.get(revision)!.push({ op: r.op, kind: r.kind as EntityKind, id: r.entity_id, row: row as never } as Change);
  }
  for (const revision of [...byRevision.keys()].sort((a, b) => a - b)) index.apply(revision, byRevision.get(revision)!);
  return index;
}

describeEachBackend('point-in-time decisions on %s (seed ' + SEED + ')', (backend) => {
  let app: TestApp;
  /** Revision → the answers the service gave live at it. */
  const live = new Map<number, boolean[]>();
  const revisions: number[] = [];

  beforeAll(async () => {
    // The rows each backend's database holds (the two backends' suites run one after the other).
    on.clear();
    stored.clear();
    app = await createTestApp(backend);
    await app.db.notifications.start();
    await seedTenant(app.db, TENANT);
    await runWrite(app.db, async (tx) => {
      await tx.useTenant(TENANT);
      for (const [kind, row] of FIXED) {
        const full = base(row);
        stored.set(full.id as string, full);
        await tx.insert(kind, [full]);
      }
    });
    const c = app.client(DecisionService);
    const rand = mulberry32(SEED);
    for (let step = 0; step < STEPS; step++) {
      const revision = await randomWrite(app, rand);
      const answers = await Promise.all(QUERIES.map((q) => c.evaluate({ ...request(q), consistency: { minRevision: BigInt(revision) } })));
      for (const a of answers) expect(Number(a.revision)).toBe(revision);
      live.set(revision, answers.map((a) => a.allowed));
      revisions.push(revision);
    }
  }, 120_000);
  afterAll(() => app?.close());

  it('answers at every past revision as the service answered live then, and as an index rebuilt forward from the log', async () => {
    const c = app.client(DecisionService);
    let allowed = 0;
    for (const revision of revisions) {
      const answers = await Promise.all(QUERIES.map((q) => c.evaluate({ ...request(q), consistency: { atRevision: BigInt(revision) } })));
      expect(answers.map((a) => Number(a.revision))).toEqual(QUERIES.map(() => revision));
      expect(answers.map((a) => a.allowed), `revision ${revision}`).toEqual(live.get(revision));
      const forward = await forwardIndex(app, revision);
      const now = new Date();
      expect(QUERIES.map((q) => evaluate(forward, request(q), { now, gate: 'off' }).allowed), `forward ${revision}`).toEqual(live.get(revision));
      allowed += answers.filter((a) => a.allowed).length;
    }
    // The history is not trivial: both answers occur, and they change over time (a random
    // history of 40 writes may visit as few as 5 distinct states: seed 51841444 did).
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThan(revisions.length * QUERIES.length);
    expect(new Set(revisions.map((r) => JSON.stringify(live.get(r)))).size).toBeGreaterThan(2);
  }, 120_000);

  it('answers at a time as at the newest revision committed by then, with its trace', async () => {
    const c = app.client(DecisionService);
    const times = ((await app.db.orm.em.fork().execute('select revision, created_at from revisions where tenant_id = ? order by revision', [TENANT])) as { revision: string; created_at: string | Date }[])
      .map((t) => ({ revision: Number(t.revision), time: new Date(t.created_at) }));
    const sample = revisions.filter((_, i) => i % 7 === 3);
    for (const revision of sample) {
      const at = times.find((t) => t.revision === revision)!.time;
      const next = times.find((t) => t.revision === revision + 1);
      // Between this revision's commit and the next one's (times are kept to the millisecond).
      if (next !== undefined && next.time.getTime() === at.getTime()) continue;
      const q = QUERIES[revision % QUERIES.length];
      const seconds = BigInt(Math.floor(at.getTime() / 1000));
      const a = await c.evaluate({ ...request(q), explain: true, consistency: { atTime: { seconds, nanos: (at.getTime() % 1000) * 1e6 } } });
      expect([Number(a.revision), a.allowed]).toEqual([revision, live.get(revision)![revision % QUERIES.length]]);
      expect(a.trace.length).toBeGreaterThan(0);
    }
  });

  it('lists at a past revision, and pages a listing at its revision while a writer changes the grants', async () => {
    const c = app.client(DecisionService);
    const rand = mulberry32(SEED + 1);
    for (const q of QUERIES.filter((_, i) => i % 9 === 0)) {
      const expected = (revision: number) => QUERIES.flatMap((x, i) => (x.subjectId === q.subjectId && x.scopeId === q.scopeId && x.action === q.action && live.get(revision)![i] ? [x.resourceId] : []));
      const past = revisions[Math.floor(rand() * revisions.length)];
      const listed = await c.lookupResources({ actor: { subjectId: q.subjectId }, scopeId: q.scopeId, action: q.action, consistency: { atRevision: BigInt(past) } });
      expect([Number(listed.revision), listed.resources.map((r) => r.id).sort()]).toEqual([past, expected(past).sort()]);
      // Paged one at a time from the present, a write between every two pages: exactly the
      // resources allowed when the first page was asked, each once.
      const before = await Promise.all(RESOURCES.map((resourceId) => c.evaluate({ ...request({ ...q, resourceId }), consistency: { fullyConsistent: true } })));
      const start = Number(before[0].revision);
      const ids: string[] = [];
      let cursor = '';
      do {
        const page = await c.lookupResources({ actor: { subjectId: q.subjectId }, scopeId: q.scopeId, action: q.action, pageSize: 1, cursor, consistency: { minRevision: BigInt(start) } });
        expect(Number(page.revision)).toBe(start);
        ids.push(...page.resources.map((r) => r.id));
        cursor = page.nextCursor;
        await randomWrite(app, rand);
      } while (cursor);
      expect(ids).toEqual(RESOURCES.filter((_, i) => before[i].allowed).sort());
    }
  }, 120_000);

  it('keeps past indexes within their row budget, the one just built always', async () => {
    const [a, b] = [revisions[2], revisions[5]];
    const tight = new PastIndexes(app.db, { maxIndexes: 4, maxRows: 1 });
    await tight.at(TENANT, a, 'f');
    await tight.at(TENANT, a, 'f');
    expect(tight.builds).toBe(1);
    await tight.at(TENANT, b, 'f');
    await tight.at(TENANT, a, 'f');
    expect(tight.builds).toBe(3);
    const roomy = new PastIndexes(app.db, { maxIndexes: 4, maxRows: 1_000_000 });
    for (const r of [a, b, a, b]) await roomy.at(TENANT, r, 'f');
    expect(roomy.builds).toBe(2);
    const few = new PastIndexes(app.db, { maxIndexes: 1, maxRows: 1_000_000 });
    for (const r of [a, b, a]) await few.at(TENANT, r, 'f');
    expect(few.builds).toBe(3);
  });

  it('refuses what it cannot answer, naming the field', async () => {
    const c = app.client(DecisionService);
    const q = request(QUERIES[0]);
    const fail = (consistency: Record<string, unknown>) => c.evaluate({ ...q, consistency } as never).then(() => undefined, (e: unknown) => ConnectError.from(e));
    const future = await fail({ atRevision: 1_000_000n });
    expect([future?.code, future?.rawMessage]).toEqual([3, expect.stringContaining('past the tenant\'s committed revision')]);
    expect((await fail({ atRevision: 2n, minRevision: 1n }))?.rawMessage).toContain('consistency.atRevision: a past state cannot be combined with consistency.minRevision');
    expect((await fail({ atRevision: 2n, atTime: { seconds: 1n, nanos: 0 } }))?.rawMessage).toContain('not both');
    expect((await fail({ atTime: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 } }))?.rawMessage).toContain('in the future');
    // A listing whose revision the compaction below takes away.
    const listing = { actor: { subjectId: 'subject_carol' }, scopeId: ROOT, action: 'read', pageSize: 1 };
    // carol reads every doc (reader at the root, reading `doc:*`): a first page of 1 has a next.
    await runWrite(app.db, async (tx) => {
      await tx.useTenant(TENANT);
      for (const [kind, row] of TOGGLED.filter(([, r]) => r.id === 'rp_reader_read' || r.id === 'ra_carol_reader')) {
        if (on.has(row.id as string)) continue;
        await tx.insert(kind, [base(row)]);
        on.add(row.id as string);
      }
    });
    const first = await c.lookupResources({ ...listing, consistency: { fullyConsistent: true } });
    const rand = mulberry32(SEED + 2);
    expect(first.nextCursor).not.toBe('');
    for (let i = 0; i < 6; i++) await randomWrite(app, rand);
    // Compacted: everything but the newest 5 revisions is gone, and so is what came before it.
    await compactChangeLog(app.db, { keepRevisions: 5, keepMs: 0 });
    const lost = await c.lookupResources({ ...listing, cursor: first.nextCursor }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect([lost?.code, lost?.rawMessage]).toEqual([9, expect.stringMatching(/^cursor: revision \d+ is before the oldest state kept: the oldest revision that can be read is \d+/)]);
    const committed = Number((await c.evaluate({ ...q, consistency: { fullyConsistent: true } })).revision);
    const gone = await fail({ atRevision: BigInt(revisions[0]) });
    expect(gone?.code).toBe(9); // failed_precondition
    expect(gone?.rawMessage).toMatch(/^consistency\.atRevision: revision \d+ is before the oldest state kept: the oldest revision that can be read is \d+/);
    const oldest = Number(/can be read is (\d+)/.exec(gone!.rawMessage)![1]);
    // The state after the newest compacted revision is rebuilt from the changes after it.
    expect(oldest).toBe(committed - 5);
    const early = await fail({ atTime: { seconds: 1n, nanos: 0 } });
    expect([early?.code, early?.rawMessage]).toEqual([9, expect.stringContaining(`the oldest revision that can be read is ${oldest}`)]);
    // The oldest kept is still answered.
    const atOldest = await c.evaluate({ ...q, consistency: { atRevision: BigInt(oldest) } });
    expect(Number(atOldest.revision)).toBe(oldest);
  });
});
