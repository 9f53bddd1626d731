/**
 * `bench:sidecar`'s realistic mix: a tenant shaped like a production one and 10,000 different
 * request bodies whose decisions are known, each checked against the engine in this process.
 *
 * The tenant (deterministic, no randomness outside a seeded generator): a root scope and 10 team
 * scopes under it; 100,000 resources of 4 types (`doc`, `folder`, `report`, `ticket`), each with
 * an `externalResourceId` (`doc-17`) and attributes the collections match on (region, project,
 * size, status, team, level); 10,000 subjects, each a member of one team (one in a hundred of the
 * root) holding one or two of 99 roles, plus an `owner` role (100 roles) held only through
 * 20,000 ownership grants; 16 permissions (4 actions × 4 types); 20 collections on `doc` and
 * `report` whose definitions use `fields` with `in`/`ne`/`gte`, `patterns`, `all`/`any`/`none`;
 * 1,000 policies: on the collections (an `export` allow at priority 5 under a deny at priority 10
 * whose `contextCondition` reads `deviceType`, `archive` rules, a deny of `read` on quarantined
 * resources) and on single resources (legal holds denying `read`/`write`, `share` allows).
 *
 * The mix (`realisticMix`): 60% role-based allows (a tenth of them naming the resource by
 * `externalResourceId` + `resourceType`), 5% allows through ownership grants, 25% denies that
 * no policy decides (no role for the type, a team the subject is not in, an unknown external id),
 * 10% decided by a policy (half allows, half denies; the `export` ones carry
 * `context.deviceType`). So 30% of all answers are denies. Candidates are drawn at random and
 * kept only when the engine's answer puts them in the bucket they were drawn for, so the
 * proportions are the engine's, not the generator's guess.
 */
import pg from 'pg';
import { evaluate, TenantIndex, type EvaluateRequest, type TenantSnapshot } from '../services/engine/mod.js';
import { mulberry32 } from '../test/seeded-random.js';

export const REALISTIC_TENANT = 'tenant_realistic';
export const REALISTIC_ROOT = 'scope_realistic_root';
export const REALISTIC_SIZE = { resources: 100_000, subjects: 10_000, roles: 100, policies: 1_000, collections: 20, grants: 20_000, teams: 10 };

const TYPES = ['doc', 'folder', 'report', 'ticket'] as const;
const ACTIONS = ['read', 'write', 'delete', 'share'] as const;
const REGIONS = ['eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south', 'ap-east', 'sa-east'];
const OWNER_ROLE = 'role_owner';
const teamScope = (k: number) => `scope_realistic_team_${k}`;


/** Resource i: its type is TYPES[i % 4], its owner team floor(i / 4) % 10. */
const typeOf = (i: number) => i % 4;
const teamOf = (i: number) => Math.floor(i / 4) % REALISTIC_SIZE.teams;
/** The m-th resource of type t owned by team k. */
const resourceOf = (t: number, k: number, m: number) => 4 * (REALISTIC_SIZE.teams * m + k) + t;
const PER_TYPE_AND_TEAM = REALISTIC_SIZE.resources / 4 / REALISTIC_SIZE.teams;

/** The roles (0…98) subject s holds at its membership's scope. */
function rolesOf(s: number): number[] {
  return s % 2 === 0 ? [s % 99, (s * 7 + 3) % 99].filter((r, i, a) => a.indexOf(r) === i) : [s % 99];
}
/** Whether subject s is a member of the root scope (its roles then reach every team). */
const atRoot = (s: number) => s % 100 === 0;
/** The (action, type) pairs role r (0…98) gives. */
function permissionsOf(r: number): [string, number][] {
  const out: [string, number][] = [['read', r % 4]];
  if (r % 3 === 0) out.push(['write', r % 4]);
  if (r % 2 === 0) out.push(['read', (r + 1) % 4]);
  if (r % 7 === 0) out.push(['share', r % 4]);
  return out;
}
/** Grant g: subject grantSubject(g) owns resource grantResource(g) with the owner role. */
const grantSubject = (g: number) => (g * 13) % REALISTIC_SIZE.subjects;
const grantResource = (g: number) => (g * 37 + 11) % REALISTIC_SIZE.resources;

/** Collection c's match definition: six shapes, each with values that depend on c. */
function collectionDefinition(c: number): unknown {
  const region = (n: number) => REGIONS[n % REGIONS.length];
  switch (c % 6) {
    case 0:
      return { fields: { 'attributes.region': { in: [region(c), region(c + 1)] }, 'attributes.status': { ne: 'archived' } } };
    case 1:
      return { fields: { 'attributes.size': { gte: 900 + c }, 'attributes.level': { in: [c % 5, (c + 2) % 5] } } };
    case 2:
      return { all: [{ fields: { 'attributes.project': `project-${c}` } }, { patterns: { externalResourceId: `-${c % 10}[0-9]*7$` } }] };
    case 3:
      return { all: [{ fields: { 'attributes.project': { in: [`project-${c}`, `project-${c + 40}`] } } }, { none: [{ fields: { 'attributes.status': 'archived' } }] }] };
    case 4:
      return { any: [{ fields: { 'attributes.team': `team-${c}` } }, { fields: { 'attributes.team': `team-${c + 1}`, 'attributes.size': { gte: 500 } } }] };
    default:
      return { fields: { 'attributes.region': region(c), 'attributes.level': { gte: 3 } } };
  }
}

/** The tenant as rows by kind (the engine's model, `services/engine/model.ts`), ids included. */
export function realisticRows(): Record<string, Record<string, unknown>[]> {
  const n = REALISTIC_SIZE;
  const scope: Record<string, unknown>[] = [{ id: REALISTIC_ROOT, name: 'root', typeId: 'scope_type_tenant', parentId: null }];
  for (let k = 0; k < n.teams; k++) scope.push({ id: teamScope(k), name: `team ${k}`, typeId: 'scope_type_tenant', parentId: REALISTIC_ROOT });
  const resource_type = TYPES.map((key) => ({ id: `resource_type_${key}`, key, name: key, scopeId: REALISTIC_ROOT }));
  const subject = [];
  for (let s = 0; s < n.subjects; s++) subject.push({ id: `subject_${s}`, type: 'user', externalId: `user-${s}`, metadata: { department: `d${s % 12}` } });
  const permission = [];
  for (const action of ACTIONS) {
    for (const key of TYPES) permission.push({ id: `permission_${action}_${key}`, scopeId: REALISTIC_ROOT, action, resourceType: key, resourcePattern: '*', key: `${key}:${action}:*`, name: '', description: '' });
  }
  const role = [];
  const role_permission = [];
  for (let r = 0; r < n.roles - 1; r++) {
    role.push({ id: `role_${r}`, scopeId: REALISTIC_ROOT, key: `role-${r}`, name: `role ${r}`, description: '' });
    for (const [action, t] of permissionsOf(r)) role_permission.push({ id: `role_permission_${r}_${action}_${t}`, roleId: `role_${r}`, permissionId: `permission_${action}_${TYPES[t]}` });
  }
  role.push({ id: OWNER_ROLE, scopeId: REALISTIC_ROOT, key: 'owner', name: 'owner', description: '' });
  for (const action of ACTIONS) {
    for (const key of TYPES) role_permission.push({ id: `role_permission_owner_${action}_${key}`, roleId: OWNER_ROLE, permissionId: `permission_${action}_${key}` });
  }
  const membership = [];
  const role_assignment = [];
  for (let s = 0; s < n.subjects; s++) {
    membership.push({ id: `membership_${s}`, subjectId: `subject_${s}`, scopeId: atRoot(s) ? REALISTIC_ROOT : teamScope(s % n.teams) });
    for (const r of rolesOf(s)) role_assignment.push({ id: `role_assignment_${s}_${r}`, membershipId: `membership_${s}`, roleId: `role_${r}` });
  }
  const ownership_grant = [];
  const granted = new Set<string>();
  for (let g = 0; g < n.grants; g++) {
    const key = `${grantSubject(g)}/${grantResource(g)}`;
    if (granted.has(key)) continue;
    granted.add(key);
    ownership_grant.push({ id: `ownership_grant_${g}`, subjectId: `subject_${grantSubject(g)}`, resourceId: `resource_${grantResource(g)}`, roleId: OWNER_ROLE });
  }
  const resource = [];
  for (let i = 0; i < n.resources; i++) {
    const key = TYPES[typeOf(i)];
    const status = i % 53 === 0 ? 'quarantined' : i % 10 === 3 ? 'archived' : 'active';
    resource.push({
      id: `resource_${i}`, resourceTypeId: `resource_type_${key}`, ownerScopeId: teamScope(teamOf(i)), externalResourceId: `${key}-${i}`, displayName: `${key} ${i}`,
      attributes: { region: REGIONS[i % REGIONS.length], project: `project-${i % 97}`, size: i % 1000, status, team: `team-${i % 31}`, level: i % 5 },
      createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'bench',
    });
  }
  // 20 collections: 18 of rules (11 on docs, 7 on reports; most at the root, one in four at a
  // team) and the two quarantines.
  const collection = [];
  const policy: Record<string, unknown>[] = [];
  const deviceCondition = { '==': [{ var: 'deviceType' }, 'unmanaged'] };
  for (let c = 0; c < n.collections - 2; c++) {
    const id = `collection_${c}`;
    collection.push({ id, scopeId: c % 4 === 3 ? teamScope(c % n.teams) : REALISTIC_ROOT, resourceTypeId: c < 11 ? 'resource_type_doc' : 'resource_type_report', name: `collection ${c}`, description: '', matchDefinition: collectionDefinition(c) });
    const target = { kind: 'collection', collectionId: id };
    policy.push({ id: `policy_export_allow_${c}`, scopeId: REALISTIC_ROOT, target, actions: ['export'], effect: 'allow', priority: 5 });
    policy.push({ id: `policy_export_device_${c}`, scopeId: REALISTIC_ROOT, target, actions: ['export'], effect: 'deny', priority: 10, contextCondition: deviceCondition });
    policy.push({ id: `policy_archive_${c}`, scopeId: REALISTIC_ROOT, target, actions: ['archive'], effect: c % 3 === 0 ? 'deny' : 'allow', priority: c % 3 });
  }
  // Quarantined docs and reports: a deny of `read` and `write` the roles' allows cannot pass.
  for (const key of ['doc', 'report']) {
    collection.push({ id: `collection_quarantine_${key}`, scopeId: REALISTIC_ROOT, resourceTypeId: `resource_type_${key}`, name: `quarantined ${key}s`, description: '', matchDefinition: { fields: { 'attributes.status': 'quarantined' } } });
    policy.push({ id: `policy_quarantine_${key}`, scopeId: REALISTIC_ROOT, target: { kind: 'collection', collectionId: `collection_quarantine_${key}` }, actions: ['read', 'write'], effect: 'deny', priority: 100 });
  }
  // The rest on single resources: legal holds (deny read/write) and share allows.
  for (let j = 0; policy.length < n.policies; j++) {
    const target = { kind: 'resource', resourceId: `resource_${(j * 101 + 5) % n.resources}` };
    policy.push(j % 2 === 0
      ? { id: `policy_hold_${j}`, scopeId: REALISTIC_ROOT, target, actions: ['read', 'write'], effect: 'deny', priority: 50 }
      : { id: `policy_share_${j}`, scopeId: REALISTIC_ROOT, target, actions: ['share'], effect: 'allow', priority: j % 4 });
  }
  // In the order of the database's foreign keys.
  return { scope, subject, resource_type, resource, role, permission, role_permission, membership, role_assignment, ownership_grant, collection, policy };
}

/** The tenant as the engine indexes it (decoded from JSON, as a server gets it). */
export function realisticIndex(rows = realisticRows()): TenantIndex {
  return TenantIndex.fromSnapshot({ revision: 1, rows: JSON.parse(JSON.stringify(rows)) } as TenantSnapshot);
}

/** The tenant as Watch entities (JSON rows, as `entities()` in decision-tenant.ts). */
export function realisticEntities(rows = realisticRows()): { kind: string; id: string; json: string }[] {
  const b = { tenantId: REALISTIC_TENANT, createdAt: '2026-01-01T00:00:00Z', createdBy: 'bench' };
  const out = [];
  for (const [kind, list] of Object.entries(rows)) for (const row of list) out.push({ kind, id: row.id as string, json: JSON.stringify({ ...b, ...row }) });
  return out;
}

export type Bucket = 'role' | 'roleByExternalId' | 'ownership' | 'deny' | 'policy';
export interface MixedRequest {
  bucket: Bucket;
  body: EvaluateRequest;
  expected: { allowed: boolean; reason: string };
}

/** How many of `n` bodies each bucket holds. */
export function quotas(n: number): Record<Bucket, number> {
  const role = Math.round(n * 0.6);
  const roleByExternalId = Math.round(role * 0.1);
  const ownership = Math.round(n * 0.05);
  const policy = Math.round(n * 0.1);
  return { role: role - roleByExternalId, roleByExternalId, ownership, policy, deny: n - role - ownership - policy };
}

/**
 * `n` request bodies in a shuffled order, each with the decision the engine gives it on the
 * realistic tenant (`index`). Throws when a bucket cannot be filled (the tenant changed shape).
 */
export function realisticMix(index: TenantIndex, n = 10_000, seed = 30): MixedRequest[] {
  const rnd = mulberry32(seed);
  const pick = (k: number) => Math.floor(rnd() * k);
  const size = REALISTIC_SIZE;
  const need = quotas(n);
  const out: MixedRequest[] = [];
  const seen = new Set<string>();
  const resourceRef = (i: number, external: boolean) => (external ? { externalResourceId: `${TYPES[typeOf(i)]}-${i}`, resourceType: TYPES[typeOf(i)] } : { resourceId: `resource_${i}` });
  const draw: Record<Bucket, () => EvaluateRequest> = {
    role: () => roleRequest(false),
    roleByExternalId: () => roleRequest(true),
    ownership: () => {
      const g = pick(size.grants);
      const i = grantResource(g);
      return { actor: { subjectId: `subject_${grantSubject(g)}` }, scopeId: teamScope(teamOf(i)), action: rnd() < 0.5 ? 'delete' : 'write', resource: resourceRef(i, false) };
    },
    deny: () => {
      const s = pick(size.subjects);
      const k = s % size.teams;
      const kind = pick(4);
      if (kind === 0) return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(k), action: 'read', resource: resourceRef(resourceOf(pick(4), k, pick(PER_TYPE_AND_TEAM)), rnd() < 0.2) };
      if (kind === 1) {
        const other = (k + 1 + pick(size.teams - 1)) % size.teams;
        return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(other), action: 'read', resource: resourceRef(resourceOf(pick(4), other, pick(PER_TYPE_AND_TEAM)), false) };
      }
      if (kind === 2) return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(k), action: 'read', resource: { externalResourceId: `doc-missing-${pick(1e6)}`, resourceType: 'doc' } };
      return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(k), action: 'delete', resource: resourceRef(resourceOf(pick(4), k, pick(PER_TYPE_AND_TEAM)), false) };
    },
    policy: () => {
      const s = pick(size.subjects);
      if (rnd() < 0.15) {
        const j = 2 * pick(size.policies / 2) + 1;
        const i = (j * 101 + 5) % size.resources;
        return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(teamOf(i)), action: 'share', resource: resourceRef(i, false) };
      }
      const t = rnd() < 0.6 ? 0 : 2;
      const k = pick(size.teams);
      const i = resourceOf(t, k, pick(PER_TYPE_AND_TEAM));
      const action = rnd() < 0.6 ? 'export' : 'archive';
      const body: EvaluateRequest = { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(k), action, resource: resourceRef(i, rnd() < 0.1) };
      if (action === 'export') body.context = { deviceType: rnd() < 0.5 ? 'unmanaged' : 'managed' };
      return body;
    },
  };
  function roleRequest(external: boolean): EvaluateRequest {
    const s = pick(size.subjects);
    const roles = rolesOf(s);
    const r = roles[pick(roles.length)];
    const perms = permissionsOf(r);
    const [action, t] = perms[pick(perms.length)];
    const k = atRoot(s) ? pick(size.teams) : s % size.teams;
    return { actor: { subjectId: `subject_${s}` }, scopeId: teamScope(k), action, resource: resourceRef(resourceOf(t, k, pick(PER_TYPE_AND_TEAM)), external) };
  }
  const fits: Record<Bucket, (d: { allowed: boolean; reason: string; decidedByPolicy: boolean }) => boolean> = {
    role: (d) => d.allowed && d.reason === 'role',
    roleByExternalId: (d) => d.allowed && d.reason === 'role',
    ownership: (d) => d.allowed && d.reason === 'ownership',
    deny: (d) => !d.allowed && !d.decidedByPolicy,
    policy: (d) => d.decidedByPolicy,
  };
  const options = { now: new Date(), gate: 'off' as const };
  for (const bucket of Object.keys(need) as Bucket[]) {
    let left = need[bucket];
    for (let tries = 0; left > 0; tries++) {
      if (tries > need[bucket] * 50 + 1000) throw new Error(`realistic mix: bucket ${bucket} filled ${need[bucket] - left} of ${need[bucket]}`);
      const body = draw[bucket]();
      const json = JSON.stringify(body);
      if (seen.has(json)) continue;
      const d = evaluate(index, body, options);
      if (d.reason === 'error' || !fits[bucket](d)) continue;
      seen.add(json);
      out.push({ bucket, body, expected: { allowed: d.allowed, reason: d.reason } });
      left--;
    }
  }
  // Fisher–Yates with the same generator: buckets interleaved, the same order on every run.
  for (let i = out.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** How a mix splits: counts per bucket, allows, policy decisions, context-carrying bodies. */
export function mixSummary(mix: MixedRequest[]) {
  const by: Record<string, number> = {};
  for (const m of mix) by[m.bucket] = (by[m.bucket] ?? 0) + 1;
  return {
    requests: mix.length, byBucket: by,
    allowed: mix.filter((m) => m.expected.allowed).length,
    byReason: mix.reduce<Record<string, number>>((acc, m) => ((acc[m.expected.reason] = (acc[m.expected.reason] ?? 0) + 1), acc), {}),
    withDeviceType: mix.filter((m) => m.body.context?.deviceType !== undefined).length,
  };
}

const TABLES: Record<string, string> = {
  scope: 'scopes', subject: 'subjects', role: 'roles', permission: 'permissions', role_permission: 'role_permissions', membership: 'memberships',
  role_assignment: 'role_assignments', ownership_grant: 'ownership_grants', resource_type: 'resource_types', resource: 'resources',
  collection: 'resource_collections', policy: 'resource_policies',
};
const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Writes the tenant's rows into a control plane's PostgreSQL database, under a tenant made
 * through its API (`tenantId`, root scope `rootScopeId`, which stands for REALISTIC_ROOT), as
 * `big-tenant.ts` does: straight SQL, in chunks of JSON turned into rows by PostgreSQL. The team
 * scopes take the root's scope type.
 */
export async function insertRealisticTenant(databaseUrl: string, tenantId: string, rootScopeId: string, rows = realisticRows()): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: [root] } = await client.query<{ type_id: string }>('select type_id from scopes where id = $1', [rootScopeId]);
    const fix = (v: unknown) => (v === REALISTIC_ROOT ? rootScopeId : v);
    await client.query('begin');
    for (const [kind, list] of Object.entries(rows)) {
      const table = TABLES[kind];
      for (let i = 0; i < list.length; i += 5000) {
        const chunk = list.slice(i, i + 5000).filter((r) => r.id !== REALISTIC_ROOT).map((row) => {
          const out: Record<string, unknown> = { tenant_id: tenantId, created_at: '2026-01-01T00:00:00.000Z', created_by: 'bench' };
          for (const [k, v] of Object.entries(row)) out[snake(k)] = fix(v);
          if (kind === 'scope') out.type_id = root.type_id;
          if (kind === 'policy') out.target_id = (row.target as { resourceId?: string; collectionId?: string }).resourceId ?? (row.target as { collectionId: string }).collectionId;
          return out;
        });
        if (chunk.length) await client.query(`insert into ${table} select * from jsonb_populate_recordset(null::${table}, $1::jsonb)`, [JSON.stringify(chunk)]);
      }
    }
    await client.query('commit');
    await client.query(`analyze ${Object.values(TABLES).join(', ')}`);
  } finally {
    await client.end();
  }
}

/** A body for the control plane: its root scope stands where the generator wrote REALISTIC_ROOT. */
export function forRoot(body: EvaluateRequest, rootScopeId: string): EvaluateRequest {
  return body.scopeId === REALISTIC_ROOT ? { ...body, scopeId: rootScopeId } : body;
}
