/**
 * The fuzz generator, driven by the service descriptors.
 *
 * - `METHODS` lists every unary method of every service in `SERVICES`, with its REST route
 *   (the main `google.api.http` binding, compiled by the gateway's own `routesOf`), its access
 *   tier and the entity kind it is about (from its name and `KINDS`).
 * - `validRequest` walks a method's input message field by field and fills each from the
 *   seeded world: id references by field name (`scopeId` → a scope of the fuzzed tenant,
 *   `ownerScopeId`/`parentScopeId` → a scope, `parentTypeId` → a scope or resource type by the
 *   message, …), the `id` of a create as a fresh `<namespace>_<token>` or absent, enumerated
 *   strings by their spec spellings, `Struct` as a small object, timestamps in the future. A
 *   short table (`RULES`) covers what names cannot tell; each entry says why it exists.
 * Mutations of a valid request are in json-mutations.ts (JSON bodies) and binary-mutations.ts
 * (protobuf bytes); requests.ts turns a request into HTTP.
 *
 * Everything random comes from one seeded `Rng`, so a seed replays the same sequence.
 */
import { ScalarType, type DescField, type DescMessage, type DescMethod } from '@bufbuild/protobuf';
import { getOption, hasOption } from '@bufbuild/protobuf';
import { MethodOptions_IdempotencyLevel } from '@bufbuild/protobuf/wkt';
import { access, AccessTier } from '../../gen/authz/v1/options_pb.js';
import { routesOf, type Route } from '../../services/transport/gateway/routes.js';
import { SERVICES } from '../../services/control-plane/services.js';
import { KINDS, type KindDef, type KindName } from '../../services/store/kinds.js';
import type { Rng } from '../../services/engine/testdata/generate.js';
import { SECTIONS, type TenantModel } from '../../services/model/format.js';
import { renderModel } from '../../services/model/normalize.js';

// --- JSON with raw tokens ---------------------------------------------------------------------

/** A JSON text spliced in verbatim: numbers JSON.stringify cannot write (`1e309`, `-0`), deep nesting. */
export class Raw {
  constructor(readonly text: string) {}
}
export type Json = null | boolean | number | string | Raw | Json[] | { [k: string]: Json };
export type JsonObj = { [k: string]: Json };
export type Path = (string | number)[];

export const isObj = (v: unknown): v is JsonObj => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Raw);

/** JSON text of a value; Raw tokens are spliced in as they are. */
export function serialize(v: Json | undefined): string {
  if (v === undefined) return '';
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) {
    if (v.length > 64 && v.every((x) => x === v[0])) {
      const one = serialize(v[0]);
      return `[${new Array(v.length).fill(one).join(',')}]`;
    }
    return `[${v.map((x) => serialize(x)).join(',')}]`;
  }
  if (isObj(v)) {
    return `{${Object.keys(v).filter((k) => v[k] !== undefined).map((k) => `${JSON.stringify(k)}:${serialize(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

export const pathText = (p: Path): string =>
  p.length === 0 ? '(body)' : p.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');

export function getAt(v: Json | undefined, p: Path): Json | undefined {
  let cur: Json | undefined = v;
  for (const s of p) {
    if (cur === undefined || cur === null || cur instanceof Raw || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, Json>)[s];
  }
  return cur;
}

/** A copy of `root` with `value` at `p` (undefined deletes); copies only along the path. */
export function setAt(root: Json, p: Path, value: Json | undefined): Json {
  if (p.length === 0) return value === undefined ? {} : value;
  const [head, ...rest] = p;
  const base: Json = Array.isArray(root) ? [...root] : isObj(root) ? { ...root } : typeof head === 'number' ? [] : {};
  const child = (base as Record<string | number, Json>)[head];
  const next = rest.length === 0 ? value : setAt(child ?? (typeof rest[0] === 'number' ? [] : {}), rest, value);
  if (next === undefined) {
    if (Array.isArray(base)) base.splice(head as number, 1);
    else delete (base as JsonObj)[head as string];
  } else (base as Record<string | number, Json>)[head] = next;
  return base;
}

// --- the method catalogue -----------------------------------------------------------------------

export type Op = 'create' | 'batch' | 'get' | 'list' | 'update' | 'delete' | 'other';

export interface MethodInfo {
  /** `authz.v1.ResourceService.CreateResource` */
  name: string;
  method: DescMethod;
  route: Route;
  tier: AccessTier;
  op: Op;
  /** The entity the method is about (`GetRole` → role), when its name tells. */
  kind?: KindName;
  /** Declared `NO_SIDE_EFFECTS`. */
  readOnly: boolean;
}

const KIND_BY_MESSAGE = new Map<string, KindName>(
  (Object.keys(KINDS) as KindName[]).map((k) => [(KINDS[k] as KindDef).message.name, k]),
);
const NAMESPACES = (Object.keys(KINDS) as KindName[])
  .map((k) => [(KINDS[k] as KindDef).namespace as string, k] as const)
  .sort((a, b) => b[0].length - a[0].length);

/** The kind of an id by its namespace prefix (longest first: `resource_type_…` before `resource_…`). */
export function kindOfId(id: string): KindName | undefined {
  return NAMESPACES.find(([ns]) => id.startsWith(`${ns}_`))?.[1];
}

export const namespaceOf = (k: KindName): string => (KINDS[k] as KindDef).namespace;

/** The longest entity message name that starts `rest` (`ScopeChildren` → scope). */
function kindFromName(rest: string): KindName | undefined {
  let best: [number, KindName] | undefined;
  for (const name of [rest, rest.replace(/ies$/, 'y'), rest.replace(/s$/, '')]) {
    for (const [msg, k] of KIND_BY_MESSAGE) if (name.startsWith(msg) && (!best || msg.length > best[0])) best = [msg.length, k];
  }
  return best?.[1];
}

function opOf(name: string): [Op, string] {
  for (const [prefix, op] of [['BatchCreate', 'batch'], ['Create', 'create'], ['Get', 'get'], ['List', 'list'], ['Update', 'update'], ['Delete', 'delete']] as const) {
    if (name.startsWith(prefix)) return [op, name.slice(prefix.length)];
  }
  return ['other', name.replace(/^[A-Z][a-z]+/, '')];
}

/** Every unary method of every service, in `SERVICES` order (server streaming is skipped). */
export const METHODS: MethodInfo[] = SERVICES.flatMap((s) =>
  s.methods
    .filter((m) => m.methodKind === 'unary')
    .map((m) => {
      const [op, rest] = opOf(m.name);
      const route = routesOf(m)[0];
      if (!route) throw new Error(`${s.typeName}.${m.name} has no REST binding`);
      return {
        name: `${s.typeName}.${m.name}`,
        method: m,
        route,
        tier: hasOption(m, access) ? getOption(m, access) : AccessTier.UNSPECIFIED,
        op,
        kind: kindFromName(rest),
        readOnly: m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS,
      };
    }),
);

// --- the world the generator draws from ----------------------------------------------------------

export interface Entity {
  id: string;
  kind: KindName;
  tenantId?: string;
  data: Record<string, unknown>;
}

export interface Pools {
  /** Entities requests refer to; the fuzzer does not delete them on purpose. */
  core: Partial<Record<KindName, Entity[]>>;
  /** Entities made by earlier requests: targets of get, update and delete. */
  spare: Partial<Record<KindName, Entity[]>>;
}

export interface TenantWorld extends Pools {
  tenantId: string;
  rootScopeId: string;
  /** The resource types of the world's one type edge (parent type → child type). */
  parentTypeId: string;
  childTypeId: string;
  typeKeys: string[];
}

export interface World {
  /** The fuzzed tenant. */
  A: TenantWorld;
  /** The other tenant ("ids of other tenants"). */
  B: TenantWorld;
  /** Scope types (global). */
  global: Pools;
  /** Resources that already have a parent (a child has one parent). */
  hasParent: Set<string>;
  /** Id references of creates that succeeded (`kind|ids…`), so valid requests avoid unique-pair clashes. */
  usedCombos: Set<string>;
}

export type TenantKey = 'A' | 'B';

// --- valid requests ------------------------------------------------------------------------------

interface Ctx {
  r: Rng;
  world: World;
  t: TenantWorld;
  m: MethodInfo;
}

export const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
export const chance = (r: Rng, p: number) => r() < p;
export const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
export const token = (r: Rng, n = 10) => Array.from({ length: n }, () => '0123456789abcdefghijklmnopqrstuvwxyz'[Math.floor(r() * 36)]).join('');

/** Spec spellings of enumerated string fields, by field name (`kind` is decided per message below). */
export const SPELLINGS: Record<string, readonly string[]> = {
  type: ['user', 'service', 'agent'],
  subjectType: ['user', 'service', 'agent'],
  effect: ['allow', 'deny'],
  cascade: ['inherit', 'none'],
  linkType: ['share', 'alias', 'mirror'],
  targetType: ['resource', 'subject', 'scope'],
  mode: ['block', 'add', 'remove'],
  kind: ['resource', 'collection', 'user', 'service', 'platform'],
};

/** The import every tenant of the world is seeded with (world.ts), for GetImport. */
export const SEED_IMPORT = 'fuzz-seed';

const FUTURE = { validFrom: '2098-01-01T00:00:00Z', validUntil: '2099-01-01T00:00:00Z', expiresAt: '2099-01-01T00:00:00Z' } as Record<string, string>;

/** The kind an id-reference field names, from its name (`ownerScopeId` → scope, `permissionIds` → permission). */
export function refKindOf(msg: DescMessage, f: DescField, methodKind: KindName | undefined): KindName | 'target' | undefined {
  const m = /^(.*?)(Id|Ids)$/.exec(f.jsonName);
  if (!m) return undefined;
  let base = m[1];
  if (base === 'parent' || base === 'child') return methodKind;
  base = base.replace(/^(owner|parent|child)(?=[A-Z])/, '');
  base = base.charAt(0).toLowerCase() + base.slice(1);
  if (base === 'type') return msg.typeName.includes('ResourceType') ? 'resourceType' : 'scopeType';
  if (base === 'target') return 'target';
  return base in KINDS ? (base as KindName) : undefined;
}

function poolOf(ctx: Ctx, t: TenantWorld, kind: KindName, which: 'core' | 'spare' | 'any'): Entity[] {
  if (kind === 'tenant') return [{ id: t.tenantId, kind, tenantId: t.tenantId, data: {} }];
  const p: Pools = kind === 'scopeType' ? ctx.world.global : t;
  const core = p.core[kind] ?? [];
  const spare = p.spare[kind] ?? [];
  return which === 'core' ? core : which === 'spare' ? spare : [...core, ...spare];
}

/** An id of `kind` to refer to: the world's core entities (spares when there are none). */
function refId(ctx: Ctx, kind: KindName, t = ctx.t): string {
  const core = poolOf(ctx, t, kind, 'core');
  const pool = core.length > 0 ? core : poolOf(ctx, t, kind, 'spare');
  return pool.length > 0 ? pick(ctx.r, pool).id : `${namespaceOf(kind)}_missing${token(ctx.r, 6)}`;
}

/** The entity a get, update or delete addresses: a spare for writes, anything for reads. */
function targetId(ctx: Ctx, kind: KindName, t = ctx.t): string {
  const write = ctx.m.op === 'update' || ctx.m.op === 'delete';
  const pool = poolOf(ctx, t, kind, write ? 'spare' : 'any');
  return pool.length > 0 ? pick(ctx.r, pool).id : refId(ctx, kind, t);
}

const MATCH_DEFINITIONS: JsonObj[] = [
  { fields: { 'attributes.level': { gte: 1 } } },
  { fields: { externalResourceId: { startsWith: 'd' } } },
  { patterns: { displayName: 'doc' } },
  { any: [{ fields: { 'attributes.level': 2 } }, { time: { field: 'createdAt', after: '2020-01-01T00:00:00Z' } }] },
];
const CONDITIONS: JsonObj[] = [
  { '==': [{ var: 'subject.type' }, 'user'] },
  { '<': [{ var: 'time.hour' }, 24] },
  { and: [{ '!!': [{ var: 'subject.id' }] }, { in: ['x', ['x', 'y']] }] },
];

/** Names the subject of `out` by its id or, one time in four, by a subject's external id. */
function subjectBy(ctx: Ctx, out: JsonObj, idField: string, externalField: string): void {
  delete out[externalField];
  const subjects = poolOf(ctx, ctx.t, 'subject', 'core');
  if (subjects.length === 0 || !chance(ctx.r, 0.25)) return;
  delete out[idField];
  out[externalField] = pick(ctx.r, subjects).data.externalId as string;
}

/**
 * Per-message and per-field rules where names cannot tell what a valid value is. Each entry
 * says why it exists; everything else is decided by field name and type alone.
 */
export const RULES: Record<string, { why: string; apply: (ctx: Ctx, out: JsonObj) => void }> = {
  'authz.v1.ResourceRef': {
    why: 'a resource is `resourceId`, or `externalResourceId` with `resourceType` (a type key), never both',
    apply(ctx, out) {
      for (const k of Object.keys(out)) delete out[k];
      if (chance(ctx.r, 0.7)) out.resourceId = refId(ctx, 'resource');
      else {
        out.externalResourceId = chance(ctx.r, 0.5) ? `d${int(ctx.r, 0, 9)}` : `x-${token(ctx.r, 6)}`;
        out.resourceType = pick(ctx.r, ctx.t.typeKeys);
      }
    },
  },
  'authz.v1.Actor': {
    why: 'the subject is `subjectId` or `externalId` (a subject\'s external id), never both',
    apply(ctx, out) {
      subjectBy(ctx, out, 'subjectId', 'externalId');
    },
  },
  'authz.v1.GetEffectivePermissionsRequest': {
    why: 'the subject is `subjectId` or `subjectExternalId` (a subject\'s external id), never both',
    apply(ctx, out) {
      subjectBy(ctx, out, 'subjectId', 'subjectExternalId');
    },
  },
  'authz.v1.PolicyTarget': {
    why: '`kind` says which one of `resourceId` / `collectionId` is set',
    apply(ctx, out) {
      for (const k of Object.keys(out)) delete out[k];
      if (chance(ctx.r, 0.5)) Object.assign(out, { kind: 'resource', resourceId: refId(ctx, 'resource') });
      else Object.assign(out, { kind: 'collection', collectionId: refId(ctx, 'collection') });
    },
  },
  'authz.v1.CreateScopeOverrideRequest': {
    why: '`block` takes no `permissionIds`; `add` and `remove` need at least one',
    apply(ctx, out) {
      out.mode = pick(ctx.r, ['block', 'add', 'remove']);
      if (out.mode === 'block') delete out.permissionIds;
      else out.permissionIds = distinctIds(ctx, 'permission', int(ctx.r, 1, 2));
    },
  },
  'authz.v1.CreatePermissionRequest': {
    why: '`key`, when sent, must be the composition `<resourceType>:<action>:<resourcePattern>`',
    apply(_ctx, out) {
      if (out.key !== undefined) out.key = `${String(out.resourceType)}:${String(out.action)}:${String(out.resourcePattern)}`;
    },
  },
  'authz.v1.CreateResourceCollectionRequest': {
    why: 'exactly one of `match` / `matchDefinition`, holding a valid match definition',
    apply(ctx, out) {
      const def = pick(ctx.r, MATCH_DEFINITIONS);
      delete out.match;
      delete out.matchDefinition;
      out[chance(ctx.r, 0.5) ? 'match' : 'matchDefinition'] = def;
    },
  },
  'authz.v1.CreateTagAssignmentRequest': {
    why: '`targetId` names an entity of kind `targetType`',
    apply(ctx, out) {
      const type = pick(ctx.r, ['resource', 'subject', 'scope'] as const);
      out.targetType = type;
      out.targetId = refId(ctx, type);
    },
  },
  'authz.v1.ListTagAssignmentsRequest': {
    why: '`targetId` is a resource, a subject or a scope',
    apply(ctx, out) {
      out.targetId = refId(ctx, pick(ctx.r, ['resource', 'subject', 'scope'] as const));
    },
  },
  'authz.v1.CreateResourceEdgeRequest': {
    why: "the type hierarchy must allow the parent's type over the child's, and a child has one parent",
    apply(ctx, out) {
      const parents = poolOf(ctx, ctx.t, 'resource', 'core').filter((e) => e.data.resourceTypeId === ctx.t.parentTypeId);
      const children = poolOf(ctx, ctx.t, 'resource', 'core').filter((e) => e.data.resourceTypeId === ctx.t.childTypeId && !ctx.world.hasParent.has(e.id));
      out.parentResourceId = parents.length ? pick(ctx.r, parents).id : refId(ctx, 'resource');
      out.childResourceId = children.length ? pick(ctx.r, children).id : refId(ctx, 'resource');
    },
  },
  'authz.v1.DeleteResourceEdgeRequest': {
    why: 'the two ids must name an existing edge',
    apply(ctx, out) {
      const edges = poolOf(ctx, ctx.t, 'resourceEdge', 'any');
      const e = edges.length ? pick(ctx.r, edges) : undefined;
      out.parentResourceId = (e?.data.parentResourceId as string) ?? refId(ctx, 'resource');
      out.childResourceId = (e?.data.childResourceId as string) ?? refId(ctx, 'resource');
    },
  },
  'authz.v1.MoveScopeRequest': {
    why: 'a root cannot move and nothing moves under its own subtree: move a leaf the fuzzer made',
    apply(ctx, out) {
      out.childScopeId = targetId({ ...ctx, m: { ...ctx.m, op: 'update' } }, 'scope');
      out.parentScopeId = refId(ctx, 'scope');
    },
  },
  'authz.v1.CreateScopeTypeEdgeRequest': {
    why: 'an edge restricts every later scope under scopes of its parent type: only fuzz-made types no scope uses',
    apply(ctx, out) {
      // The newest spare type (made just before the case) as the child: the pair is new.
      const spare = poolOf(ctx, ctx.t, 'scopeType', 'spare');
      if (spare.length >= 2) {
        out.childTypeId = chance(ctx.r, 0.8) ? spare[spare.length - 1].id : pick(ctx.r, spare).id;
        out.parentTypeId = pick(ctx.r, spare.filter((e) => e.id !== out.childTypeId)).id;
      }
    },
  },
  'authz.v1.CreateResourceTypeEdgeRequest': {
    why: "type pairs are unique and the core types' edge belongs to the world: use fuzz-made types",
    apply(ctx, out) {
      // The newest spare type (made just before the case) as the child: the pair is new.
      const spare = poolOf(ctx, ctx.t, 'resourceType', 'spare');
      if (spare.length >= 2) {
        out.childTypeId = chance(ctx.r, 0.8) ? spare[spare.length - 1].id : pick(ctx.r, spare).id;
        out.parentTypeId = pick(ctx.r, spare.filter((e) => e.id !== out.childTypeId)).id;
      }
    },
  },
  'authz.v1.GetResourceParentRequest': {
    why: 'only a resource with a parent has one to get: the child of an edge',
    apply(ctx, out) {
      const edges = poolOf(ctx, ctx.t, 'resourceEdge', 'any');
      if (edges.length) out.id = pick(ctx.r, edges).data.childResourceId as string;
    },
  },
  'authz.v1.ListPermissionsRequest': {
    why: '`ids` is a comma-separated list of permission ids',
    apply(ctx, out) {
      out.ids = distinctIds(ctx, 'permission', int(ctx.r, 1, 3)).join(',');
    },
  },
  'authz.v1.CreateApiKeyRequest': {
    why: '`kind` is `user` or `service` here: a platform key takes no `tenantId`',
    apply(ctx, out) {
      out.kind = pick(ctx.r, ['user', 'service']);
    },
  },
  'authz.v1.PlanTenantModelRequest': {
    why: '`document` is a model file: new subjects and roles in YAML or JSON, planned against the fuzzed tenant',
    apply(ctx, out) {
      out.document = modelDocument(ctx);
      out.prune = chance(ctx.r, 0.5);
    },
  },
  'authz.v1.ApplyTenantModelRequest': {
    why: "`document` is a model file of new subjects and roles; no prune (it would delete the world's entities) and no expectedRevision (it would be stale)",
    apply(ctx, out) {
      out.document = modelDocument(ctx);
      out.prune = false;
      delete out.expectedRevision;
    },
  },
  'authz.v1.ExportTenantModelRequest': {
    why: '`format` is yaml or json; `sections` names sections of the format',
    apply(ctx, out) {
      out.format = pick(ctx.r, ['yaml', 'json', '']);
      out.sections = SECTIONS.filter(() => chance(ctx.r, 0.2));
    },
  },
  'authz.v1.ImportBatchRequest': {
    why: 'the first batch of a new import, of entities that resolve: a later batch waits for its predecessor, and names must exist',
    apply(ctx, out) {
      const subject = `s${token(ctx.r, 10)}`;
      out.importId = `fuzz-${token(ctx.r, 12)}`;
      out.sequence = 1;
      out.firstLine = 1;
      out.entities = [
        { resource: { type: pick(ctx.r, ctx.t.typeKeys), externalId: `i${token(ctx.r, 10)}`, scopeId: refId(ctx, 'scope'), displayName: 'imported' } },
        { subject: { type: 'user', externalId: subject } },
        { membership: { subject: { externalId: subject }, scopeId: refId(ctx, 'scope'), roles: [] } },
      ];
    },
  },
  'authz.v1.ListChangesRequest': {
    why: '`kind` is a change-log kind, times are RFC 3339 and revisions from 1 (the fuzz world is never compacted); a writer, entity or range that matches nothing answers an empty page',
    apply(ctx, out) {
      out.kind = pick(ctx.r, ['', 'scope', 'subject', 'resource', 'role', 'policy']);
      out.fromTime = chance(ctx.r, 0.3) ? new Date(Date.now() - int(ctx.r, 0, 3_600_000)).toISOString() : '';
      out.toTime = chance(ctx.r, 0.2) ? new Date(Date.now() + int(ctx.r, 0, 3_600_000)).toISOString() : '';
      if (chance(ctx.r, 0.7)) delete out.fromRevision;
      else out.fromRevision = int(ctx.r, 1, 20);
      if (chance(ctx.r, 0.7)) delete out.toRevision;
      else out.toRevision = int(ctx.r, 1, 100);
      if (chance(ctx.r, 0.5)) delete out.entityId;
      if (chance(ctx.r, 0.7)) delete out.writerKeyId;
      if (chance(ctx.r, 0.7)) delete out.writerSubjectId;
      out.pageSize = chance(ctx.r, 0.5) ? 0 : int(ctx.r, 1, 50);
    },
  },
  'authz.v1.GetImportRequest': {
    why: 'the import each tenant of the world is seeded with',
    apply(_ctx, out) {
      out.importId = SEED_IMPORT;
    },
  },
  'authz.v1.PlanColumns': {
    why: 'the SQL rendering takes only SQL identifiers as column names (or none: the default)',
    apply(ctx, out) {
      for (const k of Object.keys(out)) out[k] = chance(ctx.r, 0.5) ? '' : `col_${token(ctx.r, 8).replace(/[^A-Za-z0-9_]/g, '_')}`;
    },
  },
  'authz.v1.Consistency': {
    why: 'a `minRevision` ahead of the tenant waits and then answers `unavailable` (contract §5); a past state (`atRevision`, `atTime`) excludes `minRevision`, and a sidecar refuses it',
    apply(_ctx, out) {
      out.minRevision = 1;
      delete out.atRevision;
      delete out.atTime;
    },
  },
};

/** A small model file adding a subject and a role, as YAML or JSON. */
function modelDocument(ctx: Ctx): string {
  const model = { apiVersion: 'authz/v1', kind: 'TenantModel', subjects: [{ externalId: `m-${token(ctx.r, 8)}` }], roles: [{ key: `m-${token(ctx.r, 8)}` }] };
  return chance(ctx.r, 0.5) ? JSON.stringify(model) : renderModel(model as TenantModel);
}

function distinctIds(ctx: Ctx, kind: KindName, n: number): string[] {
  const pool = poolOf(ctx, ctx.t, kind, 'core');
  const out = new Set<string>();
  for (let i = 0; i < n * 3 && out.size < n; i++) out.add(pool.length ? pick(ctx.r, pool).id : refId(ctx, kind));
  return [...out];
}

/** A plain string for a field, by name. */
function stringFor(ctx: Ctx, name: string): string | undefined {
  const r = ctx.r;
  switch (name) {
    case 'cursor':
      return undefined;
    case 'key':
    case 'identifier':
      return `k${token(r, 8)}`;
    case 'action':
      return pick(r, ['read', 'write', 'edit', '*']);
    case 'actions':
      return pick(r, ['read', 'write', 'edit', '*']);
    case 'resourceType':
      return pick(r, [...ctx.t.typeKeys, '*']);
    case 'resourcePattern':
      return chance(r, 0.6) ? '*' : `d${int(r, 0, 9)}`;
    case 'relationshipType':
      return 'contains';
    default:
      return `${name}-${token(r, 8)}`;
  }
}

function structFor(ctx: Ctx, name: string): JsonObj {
  if (name === 'subjectCondition' || name === 'contextCondition') return pick(ctx.r, CONDITIONS);
  if (name === 'match' || name === 'matchDefinition') return pick(ctx.r, MATCH_DEFINITIONS);
  return { level: int(ctx.r, 0, 5), team: pick(ctx.r, ['red', 'blue']), tags: ['a', 'b'], nested: { ok: true } };
}

function validField(ctx: Ctx, msg: DescMessage, f: DescField): Json | undefined {
  const r = ctx.r;
  const name = f.jsonName;
  const optional = f.proto.proto3Optional === true;
  if (f.fieldKind === 'list') {
    if (f.listKind === 'message') {
      const n = int(r, 1, 3);
      return Array.from({ length: n }, () => validMessage(ctx, f.message));
    }
    const ref = refKindOf(msg, f, ctx.m.kind);
    if (ref && ref !== 'target') return distinctIds(ctx, ref, int(r, 1, 2));
    return Array.from({ length: int(r, 1, 2) }, () => stringFor(ctx, name) ?? 'x');
  }
  if (f.fieldKind === 'map') return {};
  if (f.fieldKind === 'message') {
    const tn = f.message.typeName;
    if (tn === 'google.protobuf.Struct') return chance(r, optional ? 0.5 : 0.8) ? structFor(ctx, name) : undefined;
    if (tn === 'google.protobuf.Timestamp') return FUTURE[name] ?? FUTURE.expiresAt;
    if (tn === 'authz.v1.Consistency') return chance(r, 0.5) ? validMessage(ctx, f.message) : undefined;
    return validMessage(ctx, f.message);
  }
  if (f.fieldKind === 'enum') {
    const values = f.enum.values.filter((v) => v.number !== 0);
    return values.length ? pick(r, values).name : undefined;
  }
  // scalars
  switch (f.scalar) {
    case ScalarType.BOOL:
      if (name === 'isLocked') return optional && chance(r, 0.5) ? undefined : false; // keep tag groups open
      return chance(r, 0.5);
    case ScalarType.INT32:
    case ScalarType.INT64:
    case ScalarType.UINT32:
    case ScalarType.UINT64:
    case ScalarType.SINT32:
    case ScalarType.SINT64:
      if (name === 'limit') return chance(r, 0.5) ? undefined : int(r, 1, 50);
      if (name === 'maxAppliedPerTarget') return optional && chance(r, 0.5) ? undefined : 0; // 0: no limit per target
      if (name === 'minRevision') return 1;
      return int(r, 0, 100);
    case ScalarType.STRING: {
      if (name === 'id') {
        if (ctx.m.op === 'create' || ctx.m.op === 'batch') {
          return ctx.m.kind && chance(r, 0.5) ? `${namespaceOf(ctx.m.kind)}_${token(r, 12)}` : undefined;
        }
        return ctx.m.kind ? targetId(ctx, ctx.m.kind) : undefined;
      }
      const ref = refKindOf(msg, f, ctx.m.kind);
      if (ref === 'target') return undefined; // RULES fill it
      if (ref) return refId(ctx, ref);
      const spellings = SPELLINGS[name];
      if (spellings) return pick(r, name === 'kind' ? spellings.slice(0, 2) : spellings);
      if (optional && chance(r, 0.4)) return undefined;
      return stringFor(ctx, name);
    }
    default:
      return int(r, 0, 10);
  }
}

function validMessage(ctx: Ctx, msg: DescMessage): JsonObj {
  const out: JsonObj = {};
  // One member of each oneof: the one field of it that is set.
  const chosen = new Map(msg.oneofs.map((o) => [o, pick(ctx.r, o.fields)]));
  for (const f of msg.fields) {
    if (f.oneof && chosen.get(f.oneof) !== f) continue;
    const v = validField(ctx, msg, f);
    if (v !== undefined) out[f.jsonName] = v;
  }
  RULES[msg.typeName]?.apply(ctx, out);
  return out;
}

/** The id references of a create item (`kind|id,id…`), to avoid reusing a pair that is unique. */
export function comboKey(m: MethodInfo, item: Json): string | undefined {
  if (!m.kind || !isObj(item)) return undefined;
  const ids: string[] = [];
  for (const [k, v] of Object.entries(item)) {
    if (k === 'id' || k === 'tenantId') continue;
    if (/Ids?$/.test(k)) ids.push(`${k}=${Array.isArray(v) ? v.map(String).sort().join('+') : String(v)}`);
  }
  return ids.length ? `${m.kind}|${ids.sort().join('|')}` : undefined;
}

/** The items of a create or batch create (the request itself for a single create). */
export function itemsOf(m: MethodInfo, req: Json): Json[] {
  if (m.op === 'batch') return isObj(req) && Array.isArray(req.items) ? req.items : [];
  return m.op === 'create' ? [req] : [];
}

/** A valid request of `m` against tenant `tenant` of the world. */
export function validRequest(r: Rng, world: World, m: MethodInfo, tenant: TenantKey = 'A'): JsonObj {
  const t = world[tenant];
  const ctx: Ctx = { r, world, t, m };
  let req = validMessage(ctx, m.method.input);
  // Unique pairs (membership, role assignment, …): prefer id combinations no earlier create used.
  for (let attempt = 0; attempt < 8; attempt++) {
    const keys = itemsOf(m, req).map((i) => comboKey(m, i));
    const clash = keys.some((k, i) => k !== undefined && (world.usedCombos.has(k) || keys.indexOf(k) !== i));
    if (!clash) break;
    req = validMessage(ctx, m.method.input);
  }
  return req;
}

/** The item message of a batch create (`items`), or undefined. */
export function itemMessage(m: MethodInfo): DescMessage | undefined {
  const f = m.method.input.fields[0];
  return m.op === 'batch' && f?.fieldKind === 'list' && f.listKind === 'message' ? f.message : undefined;
}

/** Spares a valid request of `m` needs in the pools first (targets of updates and deletes, leaves to move, types for edges). */
export function needs(m: MethodInfo): { kind: KindName; count: number; fresh?: boolean }[] {
  const item = itemMessage(m) ?? m.method.input;
  const edge = /Create(Scope|Resource)TypeEdgeRequest$/.exec(item.typeName);
  if (edge) return [{ kind: edge[1] === 'Scope' ? 'scopeType' : 'resourceType', count: 2, fresh: true }];
  if (m.name.endsWith('.MoveScope')) return [{ kind: 'scope', count: 1 }];
  if (m.name.endsWith('.DeleteResourceEdge')) return [{ kind: 'resourceEdge', count: 1 }];
  if ((m.op === 'update' || m.op === 'delete') && m.kind) return [{ kind: m.kind, count: 1 }];
  return [];
}

// --- what is sent -------------------------------------------------------------------------------

export interface Mutation {
  /** A kind of json-mutations.ts or binary-mutations.ts. */
  kind: string;
  path: Path;
  /** What was put there, for humans: `1e309`, `10000-deep object`, … */
  label: string;
  /** The request field the slot belongs to (JSON and proto name; for a key inside a Struct, the Struct field). */
  field?: { jsonName: string; protoName: string };
}

/** A request to send: a JSON tree (field mutations) or a whole body as bytes (body and binary mutations). */
export interface Payload {
  tree: Json;
  /** Replaces the body entirely (the tree still gives path and query): JSON text, or protobuf bytes on binary surfaces. */
  rawBody?: string | Uint8Array;
}

/** What the REST body of a request is: the whole message (`*`), one field (`items`), or nothing. */
export function restBodyOf(m: MethodInfo, tree: Json, surface: 'rest' | 'connect'): Json {
  if (surface === 'connect') return tree;
  const body = m.route.body;
  if (body.kind === 'field') return isObj(tree) ? (tree[body.field.jsonName] ?? []) : tree;
  return tree;
}
