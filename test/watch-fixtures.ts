/**
 * Test helpers of the Watch suites: a digest of a TenantIndex (the engine has none: it is
 * computed here from the rows the store holds, looked up one by one), a model client that
 * checks the stream's order rules, and REST calls to a running control plane.
 */
import { createHash } from 'node:crypto';
import { ENTITY_KINDS, type TenantIndex } from '../services/engine/mod.js';
import type { Database } from '../services/store/db.js';
import { KINDS, type KindDef } from '../services/store/kinds.js';
import type { WatchResponse } from '../gen/authz/v1/snapshot_service_pb.js';
import { STORE_KIND } from '../services/control-plane/engine-kinds.js';

/**
 * A digest of what an index holds for the tenant: per kind its count, and every stored row as
 * the index answers it. Two indexes of the same state have the same digest.
 */
export async function indexDigest(db: Database, tenantId: string, index: TenantIndex): Promise<string> {
  const h = createHash('sha256');
  h.update(`revision ${index.revision}\n`);
  const em = db.orm.em.fork();
  for (const kind of ENTITY_KINDS) {
    const name = STORE_KIND[kind];
    const table = (KINDS[name] as KindDef).entity.meta.tableName;
    const ids = ((await em.execute(`select id from ${table} where tenant_id = ? order by id`, [tenantId])) as { id: string }[]).map((r) => r.id);
    h.update(`${kind} ${index.count(kind)} ${ids.length}\n`);
    const get = (index as unknown as Record<string, (id: string) => unknown>)[name].bind(index);
    for (const id of ids) h.update(`${id} ${stable(get(id))}\n`);
  }
  return h.digest('hex');
}

/** JSON with sorted keys; Maps and Sets as sorted entries (undefined: `-`). */
function stable(v: unknown): string {
  if (v === undefined) return '-';
  return JSON.stringify(v, (_k, x) => {
    if (x instanceof Map) return [...x.entries()].sort();
    if (x instanceof Set) return [...x].sort();
    if (x && typeof x === 'object' && !Array.isArray(x)) return Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)));
    return x;
  });
}

/**
 * A client of the stream that holds rows by kind and id and throws on any order rule broken:
 * chunks in index order within one revision, changes only after a whole snapshot, each at
 * exactly the next revision.
 */
export class ModelClient {
  held: number | undefined;
  rows = new Map<string, string>();
  /** Revisions applied as changes, in order. */
  applied: number[] = [];
  snapshots = 0;
  /** The revision of the last whole snapshot taken. */
  snapshotRevision: number | undefined;
  chunks = 0;
  private pending: { revision: number; next: number; rows: Map<string, string> } | undefined;

  apply(m: WatchResponse): void {
    const e = m.event;
    if (e.case === 'snapshot') {
      const c = e.value;
      this.chunks++;
      if (c.index === 0) this.pending = { revision: Number(c.revision), next: 0, rows: new Map() };
      const p = this.pending;
      if (!p || p.revision !== Number(c.revision) || p.next !== c.index) throw new Error(`chunk ${c.index} of ${c.revision} out of order`);
      for (const x of c.entities) p.rows.set(`${x.kind}/${x.id}`, x.json);
      p.next++;
      if (c.last) {
        this.rows = p.rows;
        this.held = p.revision;
        this.snapshotRevision = p.revision;
        this.pending = undefined;
        this.snapshots++;
      }
    } else if (e.case === 'changes') {
      const r = Number(e.value.revision);
      if (this.held === undefined || this.pending) throw new Error(`changes ${r} before a whole snapshot`);
      if (r !== this.held + 1) throw new Error(`changes ${r} after ${this.held}`);
      for (const ch of e.value.changes) {
        if (ch.json) this.rows.set(`${ch.kind}/${ch.id}`, ch.json);
        else this.rows.delete(`${ch.kind}/${ch.id}`);
      }
      this.held = r;
      this.applied.push(r);
    }
  }
}

/** REST against a running control plane with a key; throws on a non-200 answer. */
export function restClient(base: string, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<Record<string, unknown> & { id: string }> => {
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : { id: '' };
  };
}

/** A tenant with a row of most decision kinds; returns its id and a few ids to change later. */
export async function populate(rest: ReturnType<typeof restClient>, name: string) {
  const tenant = await rest('POST', '/tenants', { name });
  const tenantId = tenant.id;
  const team = await rest('POST', '/scope-types', { name: `team-${name}` });
  const scope = await rest('POST', '/scopes', { tenantId, name: 'eng', typeId: team.id });
  const subjects = [];
  for (const who of ['alice', 'bob', 'carol']) subjects.push(await rest('POST', '/subjects', { tenantId, type: 'user', externalId: who, metadata: { who } }));
  const role = await rest('POST', '/roles', { scopeId: scope.id, key: 'editor', name: 'Editor' });
  const perm = await rest('POST', '/permissions', { scopeId: scope.id, action: 'edit', resourceType: 'doc', resourcePattern: '*' });
  await rest('POST', '/role-permissions', { roleId: role.id, permissionId: perm.id });
  const m = await rest('POST', '/memberships', { subjectId: subjects[0].id, scopeId: scope.id });
  const ra = await rest('POST', '/role-assignments', { membershipId: m.id, roleId: role.id });
  const type = await rest('POST', '/resource-types', { name: 'Document', key: 'doc', scopeId: scope.id });
  const resources = [];
  for (let i = 0; i < 6; i++) {
    resources.push(await rest('POST', '/resources', { resourceTypeId: type.id, ownerScopeId: scope.id, externalResourceId: `doc-${i}`, attributes: { n: i, text: 'x'.repeat(200) } }));
  }
  const group = await rest('POST', '/tag-groups', { scopeId: scope.id, name: 'Level', key: 'level' });
  const tag = await rest('POST', '/tags', { scopeId: scope.id, tagGroupId: group.id, identifier: 'high' });
  await rest('POST', '/tag-assignments', { tagId: tag.id, targetType: 'resource', targetId: resources[0].id });
  return { tenantId, scopeId: scope.id as string, roleAssignmentId: ra.id, resourceIds: resources.map((r) => r.id), typeId: type.id, subjectIds: subjects.map((s) => s.id) };
}
