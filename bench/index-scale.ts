/**
 * Memory and build time of one large tenant index, the sidecar's case: 1,000,000 resources,
 * 1,000,000 ownership grants and 100,000 subjects (each with a membership and 1–2 role
 * assignments), plus a small rest (261 scopes, 5 resource types, 203 roles, 400 permissions,
 * 1,200 role permissions, 3 collections, 20 policies, 5 tag groups, 25 tags, 2,000 tag
 * assignments, 2 tag bindings) and parent edges for 10% of the resources (under 1% folders).
 *
 *   node --expose-gc --import tsx bench/index-scale.ts [--streamed] [--resources N] [--grants N] [--subjects N] [--no-per-kind] [--out NAME]
 *   npm run bench:index-scale [-- --streamed]
 *
 * Rows are generated deterministically in the shape the Watch stream carries them (every field
 * of the message, UUIDv7-style ids), turned into one JSON string each and parsed back one at a
 * time, as the sidecar does (sidecar/follower.ts parseRow); the parse is timed separately from
 * `TenantIndex.fromSnapshot` (all rows parsed first, then indexed) or, with
 * `--streamed`, from `TenantIndex.builder().add` (each row indexed as it is parsed). Then the parsed rows are dropped and, after GC, the figures are
 * those of a process holding only the index: JS heap used, ArrayBuffers (the IdTables), RSS.
 * A second pass builds the same tenant kind by kind through `apply` to attribute bytes to kinds.
 * Last, decision latency for four typical checks (role through a membership, ownership grant,
 * inheritance from a granted folder, a denied check that walks) and hash lookups per check.
 * Writes bench/results/index-scale.json (index-scale-streamed.json with `--streamed`; `<NAME>.json` with `--out`).
 */
import os from 'node:os';
import { evaluate, type EvaluateRequest } from '../services/engine/evaluate.js';
import { IdTable } from '../services/engine/id-table.js';
import { TenantIndex } from '../services/engine/tenant-index/mod.js';
import type { Change, EntityKind, TenantSnapshot } from '../services/engine/model.js';
import { mulberry32 } from '../test/seeded-random.js';
import { writeResults } from './results-file.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const N_RESOURCES = arg('resources', 1_000_000);
const N_GRANTS = arg('grants', 1_000_000);
const N_SUBJECTS = arg('subjects', 100_000);
const PER_KIND = !process.argv.includes('--no-per-kind');
const STREAMED = process.argv.includes('--streamed');
const MiB = 2 ** 20;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) g();
}

interface Mem {
  heapUsedMiB: number;
  /** Heap V8 holds (used or not). */
  heapTotalMiB: number;
  arrayBuffersMiB: number;
  rssMiB: number;
}
function mem(): Mem {
  gc();
  const m = process.memoryUsage();
  return { heapUsedMiB: round3(m.heapUsed / MiB), heapTotalMiB: round3(m.heapTotal / MiB), arrayBuffersMiB: round3(m.arrayBuffers / MiB), rssMiB: round3(m.rss / MiB) };
}

// --- deterministic ids and rows ----------------------------------------------------------------

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
function id(ns: string, i: number): string {
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
const N_FOLDERS = Math.max(1, Math.floor(N_RESOURCES / 100));
const EDGE_EVERY = 10; // one resource in 10 (not a folder) sits in a folder

interface Tenant {
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

function tenant(): Tenant {
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
}

/** Every row of a kind as the sidecar gets it: one JSON string each, parsed on arrival. */
function parsedRows(gen: () => Iterable<Record<string, unknown>>): { rows: unknown[]; parseMs: number } {
  const rows: unknown[] = [];
  let parseNs = 0n;
  for (const row of gen()) {
    const json = JSON.stringify(row);
    const t0 = process.hrtime.bigint();
    rows.push(JSON.parse(json));
    parseNs += process.hrtime.bigint() - t0;
  }
  return { rows, parseMs: Number(parseNs) / 1e6 };
}

/** Upserts every row of a kind as one revision (its own frame, so nothing of it outlives the call). */
function applyKind(idx: TenantIndex, revision: number, kind: EntityKind, gen: () => Iterable<Record<string, unknown>>): number {
  const changes = (parsedRows(gen).rows as { id: string }[]).map((row) => ({ op: 'upsert', kind, id: row.id, row }) as Change);
  idx.apply(revision, changes);
  return changes.length;
}

// --- decisions -----------------------------------------------------------------------------------

const OPTIONS = { now: new Date('2025-06-01T10:00:00Z'), gate: 'off' as const };

interface Sample {
  medianUs: number;
  p99Us: number;
  reasons: Record<string, number>;
  lookupsPerCheck: number;
}

function sample(index: TenantIndex, requests: EvaluateRequest[], rounds = 5): Sample {
  const reasons: Record<string, number> = {};
  for (const q of requests) {
    const d = evaluate(index, q, OPTIONS);
    reasons[d.reason] = (reasons[d.reason] ?? 0) + 1;
  }
  const times = new Float64Array(requests.length * rounds);
  let k = 0;
  for (let r = 0; r < rounds; r++) {
    for (const q of requests) {
      const t0 = process.hrtime.bigint();
      evaluate(index, q, OPTIONS);
      times[k++] = Number(process.hrtime.bigint() - t0) / 1000;
    }
  }
  times.sort();
  return { medianUs: round3(times[times.length >> 1]), p99Us: round3(times[Math.floor(times.length * 0.99)]), reasons, lookupsPerCheck: lookups(index, requests.slice(0, 2000)) };
}

/** Hash lookups (Map/Set get and has, IdTable slotOf) per check, counted by wrapping them. */
function lookups(index: TenantIndex, requests: EvaluateRequest[]): number {
  let count = 0;
  const originals = [Map.prototype.get, Map.prototype.has, Set.prototype.has] as const;
  const slotOf = IdTable.prototype.slotOf;
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals[0].call(this, key);
  };
  Map.prototype.has = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return originals[1].call(this, key);
  };
  Set.prototype.has = function (this: Set<unknown>, key: unknown) {
    count++;
    return originals[2].call(this, key);
  };
  IdTable.prototype.slotOf = function (this: IdTable<unknown>, key: string) {
    count++;
    return slotOf.call(this, key);
  };
  try {
    for (const q of requests) evaluate(index, q, OPTIONS);
  } finally {
    [Map.prototype.get, Map.prototype.has, Set.prototype.has] = originals as unknown as [typeof Map.prototype.get, typeof Map.prototype.has, typeof Set.prototype.has];
    IdTable.prototype.slotOf = slotOf;
  }
  return round3(count / requests.length);
}

function decisionRequests(t: Tenant, n: number): Record<string, EvaluateRequest[]> {
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

// --- run -------------------------------------------------------------------------------------------

const LOAD_AT_START = os.loadavg().map(round3);

function main(): void {
  const started = Date.now();
  const empty = mem();
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}; empty process: heap ${empty.heapUsedMiB} MiB, RSS ${empty.rssMiB} MiB`);
  const t = tenant();

  // 1. The snapshot, from JSON rows: all parsed, then fromSnapshot, or with --streamed each row
  // parsed and handed to TenantIndex.builder at once (what sidecar/follower.ts does).
  const counts: Record<string, number> = {};
  let parseMs = 0;
  let buildMs = 0;
  let buildCpuMs = 0;
  let withRows: Mem | undefined;
  let index: TenantIndex | undefined;
  if (STREAMED) {
    // Rows are stringified in chunks of 4,096 (untimed), then each chunk is timed as the
    // sidecar spends it: parse a row, hand it to the builder. Parse alone is timed on a copy.
    const b = TenantIndex.builder(N_RESOURCES);
    let chunkNs = 0n;
    let cpuUs = 0;
    const CHUNK = 4096;
    const run = (kind: EntityKind, jsons: string[]) => {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      for (const json of jsons) b.add(kind, JSON.parse(json));
      chunkNs += process.hrtime.bigint() - t0;
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system;
      const t1 = process.hrtime.bigint();
      for (const json of jsons) JSON.parse(json);
      parseMs += Number(process.hrtime.bigint() - t1) / 1e6;
    };
    for (const [kind, gen] of t.kinds) {
      let n = 0;
      let jsons: string[] = [];
      for (const row of gen()) {
        jsons.push(JSON.stringify(row));
        n++;
        if (jsons.length === CHUNK) {
          run(kind, jsons);
          jsons = [];
        }
      }
      run(kind, jsons);
      counts[kind] = n;
    }
    const t2 = process.hrtime.bigint();
    index = b.build(1);
    chunkNs += process.hrtime.bigint() - t2;
    buildCpuMs = cpuUs / 1000;
    // Parse plus add, less the parse measured alone: the builder's share.
    buildMs = Number(chunkNs) / 1e6 - parseMs;
  } else {
    const rows: TenantSnapshot['rows'] = {};
    for (const [kind, gen] of t.kinds) {
      const p = parsedRows(gen);
      (rows as Record<string, unknown[]>)[kind] = p.rows;
      counts[kind] = p.rows.length;
      parseMs += p.parseMs;
    }
    withRows = mem();
    const cpu0 = process.cpuUsage();
    const b0 = process.hrtime.bigint();
    index = TenantIndex.fromSnapshot({ revision: 1, rows });
    buildMs = Number(process.hrtime.bigint() - b0) / 1e6;
    const cpu = process.cpuUsage(cpu0);
    buildCpuMs = (cpu.user + cpu.system) / 1000;
    for (const k of Object.keys(rows)) delete (rows as Record<string, unknown>)[k];
  }
  const totalRows = Object.values(counts).reduce((a, b) => a + b, 0);
  const held = mem();
  const heldBytes = (held.heapUsedMiB + held.arrayBuffersMiB - empty.heapUsedMiB - empty.arrayBuffersMiB) * MiB;
  const build = {
    mode: STREAMED ? 'streamed: each row parsed, then TenantIndex.builder().add' : 'snapshot: every row parsed, then TenantIndex.fromSnapshot',
    rows: totalRows,
    counts,
    jsonParseMs: Math.round(parseMs),
    buildMs: Math.round(buildMs),
    /** CPU time of the build, all threads (GC helpers included): less sensitive to other load than wall time. */
    buildCpuMs: Math.round(buildCpuMs),
    /** JSON strings to a built index: parse plus build (streamed: the timed chunks themselves). */
    fromJsonMs: Math.round(parseMs + buildMs),
    parsedRowsHeapMiB: withRows ? round3(withRows.heapUsedMiB - empty.heapUsedMiB) : null,
    indexHeapUsedMiB: round3(held.heapUsedMiB - empty.heapUsedMiB),
    indexArrayBuffersMiB: round3(held.arrayBuffersMiB - empty.arrayBuffersMiB),
    heapTotalAfterGcMiB: held.heapTotalMiB,
    rssAfterGcMiB: held.rssMiB,
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    bytesPerRow: Math.round(heldBytes / totalRows),
    bytesPerResourcePlusGrant: Math.round(heldBytes / (N_RESOURCES + N_GRANTS)),
  };
  console.log(`build: ${JSON.stringify(build)}`);

  // 2. Decisions on that index.
  const requests = decisionRequests(t, 20_000);
  const decisions: Record<string, Sample> = {};
  for (const [kind, reqs] of Object.entries(requests)) {
    decisions[kind] = sample(index, reqs);
    console.log(`decision ${kind}: ${JSON.stringify(decisions[kind])}`);
  }
  const rssAfterDecisions = mem().rssMiB;
  index = undefined;

  // 3. Bytes per kind: the same rows applied one kind at a time.
  const perKind: Record<string, { rows: number; bytesPerRow: number; MiB: number }> = {};
  if (PER_KIND) {
    gc();
    const before = mem();
    let at = before.heapUsedMiB + before.arrayBuffersMiB;
    const idx = TenantIndex.fromSnapshot({ revision: 1, rows: {} });
    let revision = 1;
    for (const [kind, gen] of t.kinds) {
      const n = applyKind(idx, ++revision, kind, gen);
      const m = mem();
      const now = m.heapUsedMiB + m.arrayBuffersMiB;
      perKind[kind] = { rows: n, bytesPerRow: Math.round(((now - at) * MiB) / n), MiB: round3(now - at) };
      at = now;
    }
    console.log(`per kind: ${JSON.stringify(perKind)}`);
    const rebuilt = mem();
    console.log(`incremental build holds ${round3(rebuilt.heapUsedMiB + rebuilt.arrayBuffersMiB - before.heapUsedMiB - before.arrayBuffersMiB)} MiB`);
    if (idx.revision < 0) console.log('unreachable'); // keep idx alive until here
  }

  const results = {
    shape: { resources: N_RESOURCES, grants: N_GRANTS, subjects: N_SUBJECTS },
    emptyProcess: empty,
    build,
    rssAfterDecisionsMiB: rssAfterDecisions,
    decisions,
    perKind,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  const name = process.argv.includes('--out')
    ? String(process.argv[process.argv.indexOf('--out') + 1])
    : `index-scale${STREAMED ? '-streamed' : ''}`;
  const command = ['npm run bench:index-scale --', ...process.argv.slice(2)].join(' ').replace(/ --$/, '');
  console.log(`wrote ${writeResults(name, { command, results, loadAtStart: LOAD_AT_START })} (${results.seconds} s)`);
}

main();
