/**
 * The tenant of bench:index-scale, shared with bench/engine-ab.ts: `resources` resources of 5
 * types (one in 100 a folder, one in 10 of the others under a folder), `grants` ownership
 * grants and `subjects` subjects with memberships and role assignments, 200 roles, tags and a
 * few policies and collections, ids as long as the control plane's (UUIDv7), rows made one at a
 * time in snapshot order; and the four typical decisions on it (role through a membership,
 * ownership grant, inherited through a folder, denied).
 */
import type { EvaluateRequest } from '../services/engine/evaluate.js';
import type { EntityKind } from '../services/engine/model.js';
import { mulberry32 } from '../test/seeded-random.js';

export interface IndexScaleCounts {
  resources: number;
  grants: number;
  subjects: number;
}

const TENANT = 'tenant_0190a6a4-5b2c-7e11-9c3d-4f5e6a7b8c9d';
const T0 = Date.UTC(2024, 0, 1);

/** A mixing hash of (namespace number, i): the random part of an id. */
function mix(ns: number, i: number, k: number): number {
  let h = Math.imul(i ^ Math.imul(ns, 0x9e3779b1), 0x85ebca6b) ^ Math.imul(k + 1, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  h = Math.imul(h, 0x297a2d39);
  h ^= h >>> 15;
  return h >>> 0;
}
const hex = (n: number, width: number) => n.toString(16).padStart(8, '0').slice(8 - width);
const NS: Record<string, number> = {};
/** `<namespace>_<uuidv7>`, a function of (namespace, i) so rows can refer to each other without a table. */
export function id(ns: string, i: number): string {
  const n = (NS[ns] ??= Object.keys(NS).length + 1);
  const ms = T0 + i * 7 + n;
  const a = mix(n, i, 0);
  const b = mix(n, i, 1);
  const c = mix(n, i, 2);
  const msHex = ms.toString(16).padStart(12, '0');
  return `${ns}_${msHex.slice(0, 8)}-${msHex.slice(8, 12)}-7${hex(a, 3)}-${(8 + (a >>> 28) % 4).toString(16)}${hex(b, 3)}-${hex(b >>> 12, 4)}${hex(c, 8)}`;
}
const iso = (i: number) => new Date(T0 + i * 1000 + (i % 997)).toISOString();

const TYPES = ['folder', 'doc', 'image', 'sheet', 'dataset'];
const STAR_ACTIONS = ['read', 'write', 'share'];
const N_ROLES = 200;
const ROLE_OWNER = 'role_owner';
const ROLE_EDITOR = 'role_editor';
const ROLE_VIEWER = 'role_viewer';
const EDGE_EVERY = 10; // one resource in 10 (not a folder) sits in a folder

export interface Tenant {
  /** kind → generator of wire rows, in snapshot order. */
  kinds: [EntityKind, () => Iterable<Record<string, unknown>>][];
  scopes: string[];
  envs: string[];
  /** Per subject: its membership scope. */
  memberScope: Int32Array;
  /** Per resource: the subject holding an owner grant on it (-1: none). */
  grantee: Int32Array;
  /** Per resource: its parent folder (-1: none). */
  parent: Int32Array;
}

/** The tenant of `counts` and its decisions. */
export function indexScaleTenant(counts: IndexScaleCounts): Tenant & { decisionRequests(n: number): Record<string, EvaluateRequest[]> } {
  const { resources: N_RESOURCES, grants: N_GRANTS, subjects: N_SUBJECTS } = counts;
  const N_FOLDERS = Math.max(1, Math.floor(N_RESOURCES / 100));
  const t = ((): Tenant => {
  const r = mulberry32(2024);
  const int = (n: number) => Math.floor(r() * n);
  const scopes: { id: string; parentId: string | null; typeId: string }[] = [{ id: id('scope', 0), parentId: null, typeId: 'tenant' }];
  const envs: number[] = [];
  for (let w = 0; w < 10; w++) {
    const wi = scopes.length;
    scopes.push({ id: id('scope', wi), parentId: scopes[0].id, typeId: 'workspace' });
    for (let p = 0; p < 5; p++) {
      const pi = scopes.length;
      scopes.push({ id: id('scope', pi), parentId: scopes[wi].id, typeId: 'project' });
      for (let e = 0; e < 4; e++) {
        envs.push(scopes.length);
        scopes.push({ id: id('scope', scopes.length), parentId: scopes[pi].id, typeId: 'environment' });
      }
    }
  }
  const root = scopes[0].id;
  const creators = Array.from({ length: 1000 }, (_, i) => id('subject', i));
  const base = (i: number) => ({ tenantId: TENANT, createdAt: iso(i), createdBy: creators[i % creators.length] });
  const typeId = (t: number) => id('resource_type', t);
  const typeOf = (i: number) => (i < N_FOLDERS ? 0 : 1 + (mix(99, i, 0) % 4));
  const ownerOf = (i: number) => envs[mix(98, i, 0) % envs.length];

  // Permissions: 16 with pattern * (each type × read/write/share, and *:read:*), the rest named.
  const permissions: Record<string, unknown>[] = [];
  const perm = (type: string, action: string, pattern: string) => {
    const p = { id: id('permission', permissions.length), scopeId: root, action, resourceType: type, resourcePattern: pattern, key: `${type}:${action}:${pattern}`, ...base(permissions.length) };
    permissions.push(p);
    return p.id as string;
  };
  const star = new Map<string, string>();
  for (const t of TYPES) for (const a of STAR_ACTIONS) star.set(`${t}:${a}`, perm(t, a, '*'));
  star.set('*:read', perm('*', 'read', '*'));
  const ownerPerm = perm('*', '*', '*');
  const editorPerm = perm('*', 'write', '*');
  const named: string[] = [];
  while (permissions.length < 400) {
    const k = int(N_RESOURCES);
    named.push(perm(TYPES[typeOf(k)], STAR_ACTIONS[int(3)], k % 3 === 0 ? `ext-${k}` : id('resource', k)));
  }
  const roles: Record<string, unknown>[] = [];
  const rolePermissions: Record<string, unknown>[] = [];
  const grantRole = (roleId: string, permissionId: string) =>
    rolePermissions.push({ id: id('role_permission', rolePermissions.length), roleId, permissionId, ...base(rolePermissions.length) });
  for (let k = 0; k < N_ROLES; k++) {
    const rid = id('role', k);
    roles.push({ id: rid, scopeId: k < 180 ? root : scopes[1 + (k % 10) * 21].id, key: `role${k}`, name: `Role ${k}`, description: '', ...base(k) });
    grantRole(rid, star.get('*:read') as string);
    grantRole(rid, star.get(`${TYPES[k % 5]}:write`) as string);
    grantRole(rid, star.get(`${TYPES[(k + 2) % 5]}:share`) as string);
    grantRole(rid, named[int(named.length)]);
    grantRole(rid, named[int(named.length)]);
    grantRole(rid, named[int(named.length)]);
  }
  for (const [rid, perms] of [[ROLE_OWNER, [ownerPerm]], [ROLE_EDITOR, [editorPerm, star.get('*:read') as string]], [ROLE_VIEWER, [star.get('*:read') as string]]] as const) {
    roles.push({ id: rid, scopeId: root, key: rid, name: rid, description: '', ...base(roles.length) });
    for (const p of perms) grantRole(rid, p);
  }
  const grantRoles = [ROLE_OWNER, ROLE_OWNER, ROLE_EDITOR, ROLE_VIEWER];

  // Half the subjects are members at an environment, half at a project.
  const projectOf = (env: number): number => {
    let i = env;
    while (scopes[i].typeId !== 'project') i--;
    return i;
  };
  const memberScope = new Int32Array(N_SUBJECTS);
  for (let s = 0; s < N_SUBJECTS; s++) {
    const env = envs[mix(96, s, 0) % envs.length];
    memberScope[s] = mix(97, s, 0) % 2 === 0 ? env : projectOf(env);
  }

  const grantee = new Int32Array(N_RESOURCES).fill(-1);
  // Only owner grants give `delete`: the ownership and inheritance samples use those.
  for (let g = 0; g < N_GRANTS; g++) if (g % 4 < 2) grantee[g % N_RESOURCES] = mix(94, g, 0) % N_SUBJECTS;
  const parent = new Int32Array(N_RESOURCES).fill(-1);
  for (let i = N_FOLDERS; i < N_RESOURCES; i++) if (i % EDGE_EVERY === 0) parent[i] = mix(93, i, 0) % N_FOLDERS;

  const kinds: Tenant['kinds'] = [
    ['scope', () => scopes.map((s, i) => ({ id: s.id, parentId: s.parentId ?? undefined, typeId: s.typeId, name: `scope ${i}`, ...base(i) }))],
    [
      'subject',
      function* () {
        for (let s = 0; s < N_SUBJECTS; s++) yield { id: id('subject', s), type: s % 20 === 0 ? 'service' : 'user', externalId: `user-${s}@example.com`, metadata: { department: `dept-${s % 40}`, level: s % 7 }, ...base(s) };
      },
    ],
    ['resource_type', () => TYPES.map((t, i) => ({ id: typeId(i), key: t, scopeId: root, name: t, description: '', ...base(i) }))],
    ['role', () => roles],
    ['permission', () => permissions],
    ['role_permission', () => rolePermissions],
    [
      'membership',
      function* () {
        for (let s = 0; s < N_SUBJECTS; s++) yield { id: id('membership', s), subjectId: id('subject', s), scopeId: scopes[memberScope[s]].id, ...base(s) };
      },
    ],
    [
      'role_assignment',
      function* () {
        let n = 0;
        for (let s = 0; s < N_SUBJECTS; s++) {
          const count = 1 + (mix(92, s, 0) % 2);
          for (let a = 0; a < count; a++) yield { id: id('role_assignment', n++), membershipId: id('membership', s), roleId: id('role', mix(91, s, a) % N_ROLES), ...base(s) };
        }
      },
    ],
    [
      'resource',
      function* () {
        for (let i = 0; i < N_RESOURCES; i++) {
          const owner = scopes[ownerOf(i)].id;
          yield {
            id: id('resource', i), resourceTypeId: typeId(typeOf(i)), ownerScopeId: owner, scopeId: owner, externalResourceId: `ext-${i}`,
            displayName: `${TYPES[typeOf(i)]} ${i} of project ${i % 50}`,
            attributes: i % 10 === 0 ? { classification: ['public', 'internal', 'secret'][i % 3], size: i % 100_000, labels: ['a', 'b'] } : {},
            ...base(i),
          };
        }
      },
    ],
    [
      'resource_edge',
      function* () {
        for (let i = 0; i < N_RESOURCES; i++) {
          if (parent[i] < 0) continue;
          yield { id: id('resource_edge', i), parentResourceId: id('resource', parent[i]), childResourceId: id('resource', i), relationshipType: 'contains', cascade: i % 50 === 0 ? 'none' : 'inherit', ...base(i) };
        }
      },
    ],
    [
      'ownership_grant',
      function* () {
        for (let g = 0; g < N_GRANTS; g++) yield { id: id('ownership_grant', g), subjectId: id('subject', mix(94, g, 0) % N_SUBJECTS), resourceId: id('resource', g % N_RESOURCES), roleId: grantRoles[g % 4], ...base(g) };
      },
    ],
    [
      'collection',
      () => [0, 1, 2].map((k) => ({ id: id('collection', k), scopeId: root, resourceTypeId: typeId(1 + k), name: `c${k}`, description: '', matchDefinition: { fields: { 'attributes.classification': 'secret' } }, ...base(k) })),
    ],
    [
      'policy',
      () =>
        Array.from({ length: 20 }, (_, k) => ({
          id: id('policy', k), scopeId: root,
          target: k < 6 ? { kind: 'collection', collectionId: id('collection', k % 3) } : { kind: 'resource', resourceId: id('resource', N_FOLDERS + 1 + k * 7919) },
          targetId: k < 6 ? id('collection', k % 3) : id('resource', N_FOLDERS + 1 + k * 7919),
          actions: ['share'], effect: k % 2 === 0 ? 'deny' : 'allow', priority: k % 3,
          subjectCondition: k % 4 === 0 ? { '==': [{ var: 'subject.type' }, 'service'] } : null, contextCondition: null, ...base(k),
        })),
    ],
    ['tag_group', () => Array.from({ length: 5 }, (_, k) => ({ id: id('tag_group', k), key: `group${k}`, scopeId: root, name: `g${k}`, description: '', origin: 'user', maxAppliedPerTarget: 0, isLocked: false, ...base(k) }))],
    ['tag', () => Array.from({ length: 25 }, (_, k) => ({ id: id('tag', k), tagGroupId: id('tag_group', k % 5), identifier: `t${k}`, scopeId: root, label: `T${k}`, ...base(k) }))],
    [
      'tag_assignment',
      function* () {
        for (let k = 0; k < 2000; k++) {
          const toSubject = k % 4 === 0;
          yield { id: id('tag_assignment', k), tagId: id('tag', k % 25), targetType: toSubject ? 'subject' : 'resource', targetId: toSubject ? id('subject', (k * 37) % N_SUBJECTS) : id('resource', (k * 499) % N_RESOURCES), ...base(k) };
        }
      },
    ],
    ['tag_binding', () => [0, 1].map((k) => ({ id: id('tag_binding', k), tagId: id('tag', k * 4), roleId: id('role', k), scopeId: root, ...base(k) }))],
  ];
  return { kinds, scopes: scopes.map((s) => s.id), envs: envs.map((e) => scopes[e].id), memberScope, grantee, parent };
})();
  /** n requests of each kind: role, ownership, inherited, denied. */
  function decisionRequests(n: number): Record<string, EvaluateRequest[]> {
  const q = mulberry32(77);
  const int = (k: number) => Math.floor(q() * k);
  const role: EvaluateRequest[] = [];
  const ownership: EvaluateRequest[] = [];
  const inherited: EvaluateRequest[] = [];
  const denied: EvaluateRequest[] = [];
  const scopeOf = (s: number) => t.scopes[t.memberScope[s]];
  while (role.length < n) {
    const s = int(N_SUBJECTS);
    role.push({ actor: { subjectId: id('subject', s) }, scopeId: scopeOf(s), action: 'read', resource: { resourceId: id('resource', int(N_RESOURCES)) } });
  }
  while (ownership.length < n) {
    const i = int(N_RESOURCES);
    const s = t.grantee[i];
    if (s < 0) continue;
    // `delete` comes only from the owner role, never from a membership role.
    ownership.push({ actor: { subjectId: id('subject', s) }, scopeId: scopeOf(s), action: 'delete', resource: { resourceId: id('resource', i) } });
  }
  for (let tries = 0; inherited.length < n && tries < 100 * n; tries++) {
    const i = N_FOLDERS + int(N_RESOURCES - N_FOLDERS);
    const f = t.parent[i];
    if (f < 0 || i % 50 === 0) continue;
    const s = t.grantee[f];
    if (s < 0 || t.grantee[i] === s) continue;
    inherited.push({ actor: { subjectId: id('subject', s) }, scopeId: scopeOf(s), action: 'delete', resource: { resourceId: id('resource', i) } });
  }
  while (denied.length < n) {
    const s = int(N_SUBJECTS);
    const i = int(N_RESOURCES);
    if (t.grantee[i] === s) continue;
    denied.push({ actor: { subjectId: id('subject', s) }, scopeId: scopeOf(s), action: 'delete', resource: { resourceId: id('resource', i) } });
  }
  // Decoded from JSON like request bodies.
  return JSON.parse(JSON.stringify({ role, ownership, inherited, denied })) as Record<string, EvaluateRequest[]>;
}
  return { ...t, decisionRequests };
}
