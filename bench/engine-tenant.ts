/**
 * Deterministic tenant generator shared by bench/engine.ts and bench/engine-profile.ts.
 *
 * Rows and requests are handed out as they would arrive in a server: decoded from JSON (a
 * snapshot from the store or the Watch stream, a request body). That matters for V8: an id
 * built here with a template literal is a ConsString (two heap objects, compared piecewise),
 * while a decoded one is a flat string, so generating in place would make every lookup of the
 * benchmark touch memory that no real deployment touches.
 */
import type { EvaluateRequest } from '../services/engine/evaluate.js';
import type { Permission, Policy, Resource, ResourceEdge, TenantSnapshot } from '../services/engine/model.js';
import { mulberry32 } from '../test/seeded-random.js';

// --- deterministic generation -------------------------------------------------------------------

export interface Shape {
  name: string;
  resources: number;
  subjects: number;
  roles: number;
  policies: number;
}

const ACTIONS = ['read', 'write', 'delete', 'share'];
const T0 = '2025-01-01T00:00:00.000Z';

/**
 * Scopes: root → 10 workspaces → 10 projects each → 10 environments each (1,111 scopes, the
 * same for both sizes). Resources: 10% folders, the rest documents and images, each inside a
 * folder (80% `inherit`, 20% `none`), owned by an environment. Roles (defined at the root)
 * hold 8 permissions: 2 typed with pattern `*`, 3 on specific resources, 2 on folders (for
 * inheritance), 1 by external id; the named ones come from pools of 0.3% of the resources, 2%
 * of the folders and 0.1% of the external ids. Subjects have a membership at an environment and one at a
 * project, 1–2 roles each. Policies target random resources directly.
 */
/**
 * Draws item indexes in [0, size) with P(rank k) ∝ 1 / k^s (k = 1..size), ranks assigned to
 * items by a random permutation. Inverse-CDF sampling over a precomputed table.
 */
function zipfSampler(size: number, s: number, q: () => number): () => number {
  const cdf = new Float64Array(size);
  let sum = 0;
  for (let k = 0; k < size; k++) cdf[k] = sum += 1 / Math.pow(k + 1, s);
  const item = new Int32Array(size);
  for (let i = 0; i < size; i++) item[i] = i;
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(q() * (i + 1));
    const t = item[i];
    item[i] = item[j];
    item[j] = t;
  }
  return () => {
    const u = q() * sum;
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return item[lo];
  };
}

export function generateTenant(shape: Shape, seed: number) {
  const r = mulberry32(seed);
  const int = (n: number) => Math.floor(r() * n);
  const scopes: NonNullable<TenantSnapshot['rows']['scope']> = [{ id: 'scope_root', tenantId: 'tenant_b', parentId: null, typeId: 'tenant', name: 'root' }];
  const projects: string[] = [];
  const envs: string[] = [];
  const envsOfProject = new Map<string, string[]>();
  for (let w = 0; w < 10; w++) {
    const ws = `scope_w${w}`;
    scopes.push({ id: ws, tenantId: 'tenant_b', parentId: 'scope_root', typeId: 'workspace', name: ws });
    for (let p = 0; p < 10; p++) {
      const pr = `scope_w${w}p${p}`;
      projects.push(pr);
      envsOfProject.set(pr, []);
      scopes.push({ id: pr, tenantId: 'tenant_b', parentId: ws, typeId: 'project', name: pr });
      for (let e = 0; e < 10; e++) {
        const en = `scope_w${w}p${p}e${e}`;
        envs.push(en);
        envsOfProject.get(pr)!.push(en);
        scopes.push({ id: en, tenantId: 'tenant_b', parentId: pr, typeId: 'environment', name: en });
      }
    }
  }
  const types = [
    { id: 'resource_type_folder', key: 'folder', scopeId: 'scope_root', name: 'Folder' },
    { id: 'resource_type_doc', key: 'doc', scopeId: 'scope_root', name: 'Document' },
    { id: 'resource_type_image', key: 'image', scopeId: 'scope_root', name: 'Image' },
  ];
  const nFolders = Math.max(1, Math.floor(shape.resources / 10));
  const resources: Resource[] = new Array(shape.resources);
  const edges: ResourceEdge[] = [];
  for (let i = 0; i < shape.resources; i++) {
    const isFolder = i < nFolders;
    const typeKey = isFolder ? 'folder' : r() < 0.7 ? 'doc' : 'image';
    resources[i] = {
      id: `resource_${i}`,
      resourceTypeId: `resource_type_${typeKey}`,
      ownerScopeId: envs[int(envs.length)],
      externalResourceId: `ext-${i}`,
      displayName: `r${i}`,
      createdAt: T0,
      createdBy: 'subject_0',
    };
    if (!isFolder) {
      edges.push({ id: `resource_edge_${i}`, parentResourceId: `resource_${int(nFolders)}`, childResourceId: `resource_${i}`, cascade: r() < 0.8 ? 'inherit' : 'none' });
    }
  }
  // Resources that permissions name, drawn from pools of a fixed share of the tenant (the
  // 1M tenant's shares): how often a check meets a named resource or folder then does not
  // depend on the ratio of roles to resources, so every size does the same work per check.
  const pool = (from: number, size: number, share: number) => {
    const ids = Array.from({ length: Math.max(1, Math.round(size * share)) }, () => from + int(size));
    return () => ids[int(ids.length)];
  };
  const namedResource = pool(0, shape.resources, 0.003);
  const namedFolder = pool(0, nFolders, 0.02);
  const namedExt = pool(0, shape.resources, 0.001);
  const permissions: Permission[] = [];
  const rolePermissions: NonNullable<TenantSnapshot['rows']['role_permission']> = [];
  const roles: NonNullable<TenantSnapshot['rows']['role']> = [];
  for (let k = 0; k < shape.roles; k++) {
    roles.push({ id: `role_${k}`, scopeId: 'scope_root', key: `role${k}`, name: `Role ${k}` });
    const perms: [string, string, string][] = [
      [['doc', 'image', '*'][int(3)], ACTIONS[int(4)], '*'],
      ['folder', ACTIONS[int(4)], '*'],
      ['doc', ACTIONS[int(4)], `resource_${namedResource()}`],
      ['image', ACTIONS[int(4)], `resource_${namedResource()}`],
      ['*', ACTIONS[int(4)], `resource_${namedResource()}`],
      ['doc', 'read', `resource_${namedFolder()}`],
      ['*', ACTIONS[int(4)], `resource_${namedFolder()}`],
      ['doc', ACTIONS[int(4)], `ext-${namedExt()}`],
    ];
    perms.forEach(([t, a, p], j) => {
      const id = `permission_${k}_${j}`;
      permissions.push({ id, scopeId: 'scope_root', action: a, resourceType: t, resourcePattern: p, key: `${t}:${a}:${p}` });
      rolePermissions.push({ id: `role_permission_${k}_${j}`, roleId: `role_${k}`, permissionId: id });
    });
  }
  const subjects: NonNullable<TenantSnapshot['rows']['subject']> = [];
  const memberships: NonNullable<TenantSnapshot['rows']['membership']> = [];
  const assignments: NonNullable<TenantSnapshot['rows']['role_assignment']> = [];
  const memberScopes: string[][] = [];
  for (let s = 0; s < shape.subjects; s++) {
    subjects.push({ id: `subject_${s}`, type: 'user', externalId: `user${s}`, metadata: { n: s } });
    const env = envs[int(envs.length)];
    const project = projects[int(projects.length)];
    memberScopes.push([env, project]);
    [env, project].forEach((scopeId, m) => {
      const mId = `membership_${s}_${m}`;
      memberships.push({ id: mId, subjectId: `subject_${s}`, scopeId });
      const n = 1 + int(2);
      for (let a = 0; a < n; a++) assignments.push({ id: `role_assignment_${s}_${m}_${a}`, membershipId: mId, roleId: `role_${int(shape.roles)}` });
    });
  }
  const policies: Policy[] = [];
  const policyTargets = new Set<string>();
  for (let i = 0; i < shape.policies; i++) {
    const target = `resource_${nFolders + int(shape.resources - nFolders)}`;
    policyTargets.add(target);
    policies.push({ id: `policy_${i}`, scopeId: 'scope_root', target: { kind: 'resource', resourceId: target }, actions: [ACTIONS[int(4)]], effect: r() < 0.5 ? 'allow' : 'deny', priority: int(3) });
  }
  const snapshot: TenantSnapshot = {
    revision: 1,
    rows: {
      scope: scopes, subject: subjects, role: roles, permission: permissions, role_permission: rolePermissions,
      membership: memberships, role_assignment: assignments, resource_type: types, resource: resources,
      resource_edge: edges, policy: policies,
    },
  };
  // As decoded from the wire (see the module comment); one kind at a time keeps each JSON text small.
  const rows = snapshot.rows as Record<string, unknown[]>;
  for (const kind of Object.keys(rows)) rows[kind] = JSON.parse(JSON.stringify(rows[kind])) as unknown[];

  /**
   * Role-based requests on resources without policies; a quarter at the subject's environment,
   * most of the rest in its project, decoded from JSON like request bodies. By default subjects
   * and resources are uniformly random over the whole tenant. With `working`, requests draw
   * from a fixed random subset of that many resources and subjects (a hot working set); with
   * `zipf`, subjects and resources are Zipf-distributed with that exponent (YCSB uses 0.99) over
   * a random ranking, so a few are hot and most are cold.
   */
  const requests = (n: number, seed2: number, working?: { resources: number; subjects: number } | { zipf: number }): EvaluateRequest[] => {
    const q = mulberry32(seed2);
    const pickFrom = (size: number, k: number | undefined): (() => number) => {
      if (k === undefined || k >= size) return () => Math.floor(q() * size);
      const subset = Array.from({ length: k }, () => Math.floor(q() * size));
      return () => subset[Math.floor(q() * k)];
    };
    const pick = (size: number, k: number | undefined): (() => number) =>
      working !== undefined && 'zipf' in working ? zipfSampler(size, working.zipf, q) : pickFrom(size, k);
    const ws = working !== undefined && 'resources' in working ? working : undefined;
    const nextSubject = pick(shape.subjects, ws?.subjects);
    const nextResource = pick(shape.resources, ws?.resources);
    const out: EvaluateRequest[] = [];
    while (out.length < n) {
      const s = nextSubject();
      const res = `resource_${nextResource()}`;
      if (policyTargets.has(res)) continue;
      const [env, project] = memberScopes[s];
      const pe = envsOfProject.get(project)!;
      const scopeId = q() < 0.25 ? env : q() < 0.66 ? pe[Math.floor(q() * pe.length)] : envs[Math.floor(q() * envs.length)];
      out.push({ actor: { subjectId: `subject_${s}` }, scopeId, action: ACTIONS[Math.floor(q() * 4)], resource: { resourceId: res } });
    }
    return JSON.parse(JSON.stringify(out)) as EvaluateRequest[];
  };
  return { snapshot, requests, envsOfProject, scopes };
}

