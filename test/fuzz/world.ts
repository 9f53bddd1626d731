/**
 * The seeded world the fuzzer draws ids from: two tenants built through the REST API (the
 * fuzzed tenant A and the other tenant B), each with a scope tree, a project, an environment,
 * a workspace, subjects, roles and permissions at the root, two resource types with a type
 * edge, resources of both, collections, tag groups, tags, memberships and an import; then spares of
 * every kind made by the generator's own valid create requests (targets of get, update and
 * delete). Entities made by later successful creates are harvested into the spares.
 */
import { KINDS, type KindDef, type KindName } from '../../services/store/kinds.js';
import type { Rng } from '../../services/engine/testdata/generate.js';
import {
  METHODS, SEED_IMPORT, comboKey, itemsOf, kindOfId, needs, validRequest, type Entity, type Json, type JsonObj, type MethodInfo, type TenantKey, type TenantWorld, type World,
} from './generator.js';
import { toRest } from './requests.js';
import { send, trim } from './http.js';
import type { FuzzServer } from './control-plane.js';

export const method = (short: string): MethodInfo => {
  const m = METHODS.find((x) => x.name.endsWith(`.${short}`));
  if (!m) throw new Error(`no method ${short}`);
  return m;
};

/** Calls a method over REST with the platform key; any answer but 200 is an error. */
export async function call(server: FuzzServer, key: string, short: string, body: JsonObj): Promise<Json> {
  const m = method(short);
  const req = toRest(m, { tree: body });
  const a = await send(server.url, 'rest', req, key);
  if (a.status !== 200) {
    throw new Error(`world seeding: ${m.name} answered ${a.status} ${a.networkError ?? trim(a.text)}\nrequest ${req.method} ${req.path} ${trim(req.body)}`);
  }
  return a.json as Json;
}

const asEntity = (kind: KindName, v: unknown): Entity => {
  const data = v as Record<string, unknown>;
  return { id: data.id as string, kind, tenantId: data.tenantId as string | undefined, data };
};

function addTo(pools: Partial<Record<KindName, Entity[]>>, e: Entity) {
  const list = (pools[e.kind] ??= []);
  if (!list.some((x) => x.id === e.id)) list.push(e);
}

async function seedTenant(server: FuzzServer, key: string, name: string, scopeTypes: string[], n: { subjects: number; docs: number }): Promise<TenantWorld> {
  const c = (short: string, body: JsonObj) => call(server, key, short, body);
  const tenant = (await c('CreateTenant', { name })) as JsonObj;
  const tenantId = tenant.id as string;
  const root = tenant.scopeId as string;
  const core: TenantWorld['core'] = {};
  const add = (kind: KindName, v: unknown) => addTo(core, asEntity(kind, v));
  const many = (kind: KindName, vs: Json) => (vs as unknown[]).forEach((v) => add(kind, v));
  add('scope', { id: root, tenantId });
  const s1 = (await c('CreateScope', { tenantId, name: 's1', typeId: scopeTypes[0] })) as JsonObj;
  add('scope', s1);
  add('scope', await c('CreateScope', { parentId: s1.id as string, name: 's2', typeId: scopeTypes[0] }));
  add('scope', await c('CreateScope', { tenantId, name: 's3', typeId: scopeTypes[1] }));
  const project = (await c('CreateProject', { tenantId, name: 'p' })) as JsonObj;
  add('project', project);
  add('scope', { id: project.scopeId, tenantId });
  const env = (await c('CreateEnvironment', { tenantId, projectId: project.id as string, name: 'e' })) as JsonObj;
  add('environment', env);
  add('scope', { id: env.scopeId, tenantId });
  const ws = (await c('CreateWorkspace', { tenantId, name: 'w' })) as JsonObj;
  add('workspace', ws);
  add('scope', { id: ws.scopeId, tenantId });
  const subjects = await c('BatchCreateSubjects', { items: Array.from({ length: n.subjects }, (_, i) => ({ tenantId, type: 'user', externalId: `u${i}`, metadata: { team: i % 2 ? 'red' : 'blue' } })) });
  many('subject', subjects);
  many('role', await c('BatchCreateRoles', { items: Array.from({ length: 6 }, (_, i) => ({ scopeId: root, key: `r${i}` })) }));
  many('permission', await c('BatchCreatePermissions', { items: ['read', 'write', 'edit', '*', 'read', 'share'].map((action, i) => ({ scopeId: root, action, resourceType: i === 4 ? 'folder' : 'doc', resourcePattern: '*' })) }));
  const types = (await c('BatchCreateResourceTypes', { items: [{ scopeId: root, name: 'Folder', key: 'folder' }, { scopeId: root, name: 'Doc', key: 'doc' }] })) as JsonObj[];
  many('resourceType', types);
  const [folder, doc] = types.map((t) => t.id as string);
  await c('CreateResourceTypeEdge', { parentTypeId: folder, childTypeId: doc });
  many('resource', await c('BatchCreateResources', {
    items: [
      ...Array.from({ length: 4 }, (_, i) => ({ resourceTypeId: folder, ownerScopeId: root, externalResourceId: `f${i}`, displayName: `folder ${i}` })),
      ...Array.from({ length: n.docs }, (_, i) => ({ resourceTypeId: doc, ownerScopeId: root, externalResourceId: `d${i}`, displayName: `doc ${i}`, attributes: { level: i % 4 } })),
    ],
  }));
  many('collection', await c('BatchCreateResourceCollections', { items: [0, 1].map((i) => ({ scopeId: root, resourceTypeId: doc, name: `c${i}`, match: { fields: { 'attributes.level': { gte: i } } } })) }));
  const groups = (await c('BatchCreateTagGroups', { items: [0, 1].map((i) => ({ scopeId: root, name: `g${i}`, key: `g${i}` })) })) as JsonObj[];
  many('tagGroup', groups);
  many('tag', await c('BatchCreateTags', { items: groups.flatMap((g) => [0, 1].map((i) => ({ tagGroupId: g.id as string, identifier: `t${i}` }))) }));
  many('membership', await c('BatchCreateMemberships', { items: (subjects as JsonObj[]).slice(0, 6).map((s) => ({ subjectId: s.id as string, scopeId: root })) }));
  await c('ImportBatch', { tenantId, importId: SEED_IMPORT, sequence: 1, firstLine: 1, entities: [{ resource: { type: 'doc', externalId: 'imported-0' } }] });
  return { tenantId, rootScopeId: root, core, spare: {}, parentTypeId: folder, childTypeId: doc, typeKeys: ['folder', 'doc'] };
}

export interface Keys {
  platform: string;
  /** A `user` key and a `service` key of tenant A (never in the pools: the fuzzer must not revoke them). */
  user: string;
  service: string;
}

/** Builds both tenants through the API, then spares of every kind with valid create requests. */
export async function buildWorld(server: FuzzServer, platform: string, r: Rng): Promise<{ world: World; keys: Keys; tenantsSeen: string[] }> {
  const c = (short: string, body: JsonObj) => call(server, platform, short, body);
  const scopeTypes = [
    (await c('CreateScopeType', { name: 'fuzz-team' })) as JsonObj,
    (await c('CreateScopeType', { name: 'fuzz-group' })) as JsonObj,
  ];
  const A = await seedTenant(server, platform, 'fuzz-a', scopeTypes.map((t) => t.id as string), { subjects: 8, docs: 60 });
  const B = await seedTenant(server, platform, 'fuzz-b', scopeTypes.map((t) => t.id as string), { subjects: 4, docs: 6 });
  const world: World = { A, B, global: { core: { scopeType: scopeTypes.map((t) => asEntity('scopeType', t)) }, spare: {} }, hasParent: new Set(), usedCombos: new Set() };
  // Id pairs the core entities already use, so valid creates avoid them (unique memberships, …).
  for (const t of [A, B]) for (const [kind, es] of Object.entries(t.core) as [KindName, Entity[]][]) {
    const creator = METHODS.find((m) => m.op === 'create' && m.kind === kind);
    for (const e of es) {
      const k = creator && comboKey(creator, e.data as JsonObj);
      if (k) world.usedCombos.add(k);
    }
  }
  const user = (await c('CreateApiKey', { tenantId: A.tenantId, name: 'fuzz-user', kind: 'user' })) as JsonObj;
  const service = (await c('CreateApiKey', { tenantId: A.tenantId, name: 'fuzz-service', kind: 'service' })) as JsonObj;
  // Spares: two of every kind in A, one in B, made by the generator's valid single creates.
  const creates = METHODS.filter((m) => m.op === 'create' && m.kind).sort((a, b) => needs(a).length - needs(b).length);
  for (const tenant of ['A', 'B'] as TenantKey[]) {
    for (const m of creates) {
      for (let i = 0; i < (tenant === 'A' ? 2 : 1); i++) await createSpare(server, platform, world, m, tenant, r);
    }
  }
  return { world, keys: { platform, user: user.secretKey as string, service: service.secretKey as string }, tenantsSeen: [A.tenantId, B.tenantId] };
}

/** One valid create of `m` in `tenant`, harvested into the spares; throws when refused. */
export async function createSpare(server: FuzzServer, platform: string, world: World, m: MethodInfo, tenant: TenantKey, r: Rng): Promise<void> {
  for (const n of needs(m)) await ensureSpare(server, platform, world, n.kind, n.count, tenant, r, n.fresh);
  for (let attempt = 1; ; attempt++) {
    const body = validRequest(r, world, m, tenant);
    const req = toRest(m, { tree: body });
    const a = await send(server.url, 'rest', req, platform);
    if (a.status === 200) {
      harvest(world, m, 'rest', a.json, itemsOf(m, body).map((i) => comboKey(m, i)).filter((k): k is string => !!k));
      return;
    }
    if (attempt === 3) {
      throw new Error(`world seeding: a valid ${m.name} was refused 3 times, last: ${a.status} ${a.networkError ?? trim(a.text)}\nrequest ${req.method} ${req.path} ${trim(req.body)}`);
    }
  }
}

/** Makes sure `tenant` (or the global pools) holds `count` spares of `kind`. */
export async function ensureSpare(server: FuzzServer, platform: string, world: World, kind: KindName, count: number, tenant: TenantKey, r: Rng, fresh = false): Promise<void> {
  const pools = kind === 'scopeType' ? world.global : world[tenant];
  const creator = METHODS.find((m) => m.op === 'create' && m.kind === kind);
  if (!creator) return;
  if (fresh) await createSpare(server, platform, world, creator, tenant, r);
  for (let i = 0; (pools.spare[kind]?.length ?? 0) < count && i < count + 2; i++) await createSpare(server, platform, world, creator, tenant, r);
}

/** The entities of a create response (REST: the entity or the array; Connect: the one field). */
function entitiesOf(surface: 'rest' | 'connect', json: unknown): Record<string, unknown>[] {
  let v = json;
  if (surface === 'connect' && v && typeof v === 'object' && !Array.isArray(v)) {
    const vals = Object.values(v as object);
    v = vals.length === 1 ? vals[0] : undefined;
  }
  const list = Array.isArray(v) ? v : v && typeof v === 'object' ? [v] : [];
  return list.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object' && typeof (x as { id?: unknown }).id === 'string');
}

/** Puts the entities a successful create answered into the spares of their tenant; records used id pairs. */
export function harvest(world: World, m: MethodInfo, surface: 'rest' | 'connect', json: unknown, comboKeys: string[] = []): string[] {
  for (const k of comboKeys) world.usedCombos.add(k);
  if (m.op !== 'create' && m.op !== 'batch') return [];
  const made = entitiesOf(surface, json);
  const tenants: string[] = [];
  for (const data of made.slice(0, 25)) {
    const kind = kindOfId(data.id as string);
    if (!kind || kind !== m.kind) continue;
    const e = asEntity(kind, data);
    if (kind === 'resourceEdge') world.hasParent.add(data.childResourceId as string);
    if (kind === 'tenant') {
      tenants.push(e.id);
      continue;
    }
    const owner = kind === 'scopeType' ? world.global : e.tenantId === world.A.tenantId ? world.A : e.tenantId === world.B.tenantId ? world.B : undefined;
    if (owner) addTo(owner.spare, e);
  }
  return tenants;
}

/** Forgets pooled entities that no longer exist (after deletes, which cascade). */
export async function resync(server: FuzzServer, world: World): Promise<void> {
  const byKind = new Map<KindName, Set<string>>();
  const pools = [world.A.core, world.A.spare, world.B.core, world.B.spare, world.global.core, world.global.spare];
  for (const p of pools) for (const [k, es] of Object.entries(p) as [KindName, Entity[]][]) for (const e of es) {
    const s = byKind.get(k) ?? new Set<string>();
    s.add(e.id);
    byKind.set(k, s);
  }
  const parts: string[] = [];
  const params: string[] = [];
  for (const [k, ids] of byKind) {
    parts.push(`select '${k}' as k, id from ${(KINDS[k] as KindDef).entity.meta.tableName} where id in (select jsonb_array_elements_text(?::jsonb))`);
    params.push(JSON.stringify([...ids]));
  }
  if (parts.length === 0) return;
  const rows = await server.sql<{ k: string; id: string }>(parts.join(' union all '), params);
  const live = new Set(rows.map((r) => `${r.k}:${r.id}`));
  for (const p of pools) for (const k of Object.keys(p) as KindName[]) p[k] = p[k]!.filter((e) => live.has(`${k}:${e.id}`));
  const taken = await server.sql<{ c: string }>('select child_resource_id as c from resource_edges where tenant_id in (?, ?)', [world.A.tenantId, world.B.tenantId]);
  world.hasParent = new Set(taken.map((t) => t.c));
}
