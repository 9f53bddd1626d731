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
 * - `mutate` picks one slot of the request (a field, a list element, a key inside a Struct, or
 *   the whole body) and one mutation that applies to it: wrong JSON types, extreme numbers,
 *   NUL, lone surrogates, long strings, deep nesting, huge arrays, ids of the other tenant,
 *   unknown fields, empty and malformed bodies.
 * - `toRest` / `toConnect` turn a request into HTTP: the route's verb, path, query and body,
 *   or `POST /<package.Service>/<Method>` with the proto JSON body.
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

// --- JSON with raw tokens ---------------------------------------------------------------------

/** A JSON text spliced in verbatim: numbers JSON.stringify cannot write (`1e309`, `-0`), deep nesting. */
export class Raw {
  constructor(readonly text: string) {}
}
export type Json = null | boolean | number | string | Raw | Json[] | { [k: string]: Json };
export type JsonObj = { [k: string]: Json };
export type Path = (string | number)[];

const isObj = (v: unknown): v is JsonObj => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Raw);

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

function getAt(v: Json | undefined, p: Path): Json | undefined {
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

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const chance = (r: Rng, p: number) => r() < p;
const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
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
  'authz.v1.Consistency': {
    why: 'a `minRevision` ahead of the tenant waits and then answers `unavailable` (contract §5)',
    apply(_ctx, out) {
      out.minRevision = 1;
    },
  },
};

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
  for (const f of msg.fields) {
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

// --- mutations ------------------------------------------------------------------------------------

export type MutationKind =
  | 'wrongType' | 'extremeNumber' | 'nul' | 'surrogate' | 'longString' | 'emptyValue' | 'deepNesting'
  | 'hugeArray' | 'otherTenantId' | 'unknownId' | 'takenId' | 'spelling' | 'pathChars' | 'badTimestamp'
  | 'unknownField' | 'emptyBody' | 'malformedBody';

export interface Mutation {
  kind: MutationKind;
  path: Path;
  /** What was put there, for humans: `1e309`, `10000-deep object`, … */
  label: string;
  /** The request field the slot belongs to (JSON and proto name; for a key inside a Struct, the Struct field). */
  field?: { jsonName: string; protoName: string };
}

/** A request to send: a JSON tree (field mutations) or a whole body as bytes (body mutations). */
export interface Payload {
  tree: Json;
  /** Replaces the body entirely (REST and Connect), the tree still gives path and query. */
  rawBody?: string | Uint8Array;
}

type SlotType = 'string' | 'int' | 'bool' | 'enum' | 'message' | 'struct' | 'structValue' | 'timestamp' | 'list';

interface Slot {
  path: Path;
  type: SlotType;
  field?: DescField;
  ref?: KindName | 'target';
  createId?: boolean;
  spelled?: boolean;
  /** The list holds the request's items (batch `items`, evaluate `requests`). */
  items?: boolean;
}

const INT_TYPES = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64, ScalarType.SINT32, ScalarType.SINT64, ScalarType.FIXED32, ScalarType.FIXED64, ScalarType.SFIXED32, ScalarType.SFIXED64, ScalarType.DOUBLE, ScalarType.FLOAT]);

function slotsOf(m: MethodInfo, msg: DescMessage, value: Json | undefined, path: Path, out: Slot[], creates: boolean) {
  for (const f of msg.fields) {
    const p = [...path, f.jsonName];
    const v = isObj(value) ? value[f.jsonName] : undefined;
    if (f.fieldKind === 'list') {
      out.push({ path: p, type: 'list', field: f, items: f.listKind === 'message' });
      if (Array.isArray(v) && v.length > 0) {
        const i = v.length - 1;
        if (f.listKind === 'message') slotsOf(m, f.message, v[i], [...p, i], out, creates);
        else out.push({ path: [...p, i], type: 'string', field: f, ref: refKindOf(msg, f, m.kind) });
      }
    } else if (f.fieldKind === 'message') {
      const tn = f.message.typeName;
      if (tn === 'google.protobuf.Struct') {
        out.push({ path: p, type: 'struct', field: f });
        if (isObj(v)) for (const k of Object.keys(v)) out.push({ path: [...p, k], type: 'structValue', field: f });
      } else if (tn === 'google.protobuf.Timestamp') out.push({ path: p, type: 'timestamp', field: f });
      else {
        out.push({ path: p, type: 'message', field: f });
        slotsOf(m, f.message, v, p, out, creates);
      }
    } else if (f.fieldKind === 'enum') out.push({ path: p, type: 'enum', field: f });
    else if (f.fieldKind === 'scalar') {
      const type: SlotType = f.scalar === ScalarType.BOOL ? 'bool' : INT_TYPES.has(f.scalar) ? 'int' : 'string';
      out.push({
        path: p, type, field: f,
        ref: f.jsonName === 'id' ? (creates ? undefined : m.kind) : refKindOf(msg, f, m.kind),
        createId: f.jsonName === 'id' && creates,
        spelled: f.jsonName in SPELLINGS,
      });
    }
  }
}

/** The issue's extreme numbers, drawn more often than the rest. */
const CORE_NUMBERS = ['1e309', '-1e309', '-0', '9007199254740993', '-2147483649', '"NaN"'];
const EXTREME_NUMBERS = ['1e309', '-1e309', '-0', '9007199254740993', '-2147483649', '2147483648', '4294967296', '18446744073709551616', '-9223372036854775809', '1e-400', '0.5', '-1', '"NaN"', '"Infinity"', '"-Infinity"', '"1e309"', '"0x10"', '" 12"'];
const BAD_TIMESTAMPS = ['2024-13-45T00:00:00Z', '2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z', '10000-01-01T00:00:00Z', '2024-01-01', 'now', '', '1e309', '2024-01-01T00:00:00+99:00', '1970-01-01T00:00:00Z', '2024-01-01T00:00:00.0000000000000Z'];
const DEPTHS = [10_000, 10_000, 10_000, 33, 65, 1_000];

function deep(r: Rng): [Raw, string] {
  const d = pick(r, DEPTHS);
  return chance(r, 0.5)
    ? [new Raw('{"a":'.repeat(d) + '1' + '}'.repeat(d)), `${d}-deep object`]
    : [new Raw('['.repeat(d) + ']'.repeat(d)), `${d}-deep array`];
}

/** The JSON type a slot takes (what a wrong type must differ from, also when the field is absent). */
const JSON_TYPE_OF: Record<SlotType, string> = {
  string: 'string', int: 'number', bool: 'boolean', enum: 'string', message: 'object', struct: 'object', structValue: 'any', timestamp: 'string', list: 'array',
};

function wrongTypeFor(r: Rng, current: Json | undefined, slotType: SlotType): [Json, string] {
  const cur = current === undefined ? JSON_TYPE_OF[slotType] : current === null ? 'null' : Array.isArray(current) ? 'array' : current instanceof Raw ? 'raw' : typeof current;
  const options: [Json, string][] = [
    ['x', 'string'], ['123', 'numeric string'], [123, 'number'], [1.5, 'fraction'], [true, 'true'], [false, 'false'],
    [null, 'null'], [{}, 'empty object'], [{ a: 1 }, 'object'], [[], 'empty array'], [['x'], 'array of strings'], [[1, 2], 'array of numbers'],
  ];
  const typeOf = (v: Json) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  const ok = options.filter(([v]) => typeOf(v) !== cur);
  const [v, label] = pick(r, ok);
  return [v, `${label} (${JSON.stringify(v)})`];
}

function withNul(r: Rng, s: string): [string, string] {
  return pick(r, [
    [`${s}\u0000`, 'value + \\u0000'],
    [`\u0000${s}`, '\\u0000 + value'],
    [`${s.slice(0, 1)}\u0000${s.slice(1)}`, '\\u0000 inside the value'],
    ['\u0000', 'just \\u0000'],
  ] as [string, string][]);
}

function withSurrogate(r: Rng, s: string): [string, string] {
  return pick(r, [
    ['\ud800', 'lone high surrogate \\ud800'],
    [`${s}\ud800`, 'value + \\ud800'],
    [`a\udc00b`, 'lone low surrogate \\udc00'],
    ['\udfff\ud800', 'reversed pair \\udfff\\ud800'],
  ] as [string, string][]);
}

function longString(r: Rng): [string, string] {
  return pick(r, [
    ['x'.repeat(257), '257 characters'],
    ['x'.repeat(102_400), '100 KiB string'],
    ['x'.repeat(256), '256 characters (the limit)'],
    ['é'.repeat(257), '257 two-byte characters'],
    ['😀'.repeat(129), '129 emoji (258 UTF-16 units)'],
  ] as [string, string][]);
}

function otherId(r: Rng, world: World, kind: KindName, from: TenantWorld): string | undefined {
  if (kind === 'tenant') return from.tenantId;
  const pools = kind === 'scopeType' ? world.global : from;
  const all = [...(pools.core[kind] ?? []), ...(pools.spare[kind] ?? [])];
  return all.length ? pick(r, all).id : undefined;
}

/** Relative frequency of each mutation kind (among those that fit the method). */
const WEIGHTS: Record<MutationKind, number> = {
  wrongType: 1, extremeNumber: 1, nul: 1, surrogate: 1, longString: 1, deepNesting: 1, hugeArray: 1, otherTenantId: 1,
  unknownField: 0.6, emptyValue: 0.6, badTimestamp: 0.6, spelling: 0.5, unknownId: 0.4, takenId: 0.4, pathChars: 0.4,
  emptyBody: 0, malformedBody: 0,
};

/** The mutations that fit a slot. */
function kindsFor(slot: Slot): MutationKind[] {
  switch (slot.type) {
    case 'string': {
      const kinds: MutationKind[] = ['wrongType', 'nul', 'surrogate', 'longString', 'emptyValue', 'pathChars'];
      // Scope types are global: there is no other tenant's scope type to send.
      if (slot.ref && slot.ref !== 'scopeType') kinds.push('otherTenantId');
      if (slot.ref && slot.ref !== 'target') kinds.push('unknownId');
      if (slot.createId) kinds.push('takenId');
      if (slot.spelled) kinds.push('spelling');
      return kinds;
    }
    case 'int':
      return ['wrongType', 'extremeNumber'];
    case 'bool':
    case 'enum':
      return ['wrongType'];
    case 'message':
      return ['wrongType', 'unknownField', 'deepNesting', 'emptyValue'];
    case 'struct':
    case 'structValue':
      return ['wrongType', 'deepNesting', 'extremeNumber', 'nul', 'surrogate', 'hugeArray', 'longString'];
    case 'timestamp':
      return ['wrongType', 'badTimestamp', 'nul', 'surrogate', 'longString'];
    case 'list':
      return ['wrongType', 'hugeArray', 'deepNesting', 'emptyValue'];
  }
}

/**
 * Picks one slot of the valid request and one mutation for it. `bodyless` routes (GET,
 * DELETE on REST) cannot take body-level mutations on that surface.
 */
export function mutate(r: Rng, world: World, m: MethodInfo, valid: JsonObj, surface: 'rest' | 'connect'): { mutation: Mutation; payload: Payload } {
  const creates = m.op === 'create' || m.op === 'batch';
  const slots: Slot[] = [];
  slotsOf(m, m.method.input, valid, [], slots, creates);
  const hasBody = surface === 'connect' || m.route.body.kind !== 'none';
  if (chance(r, hasBody ? 0.12 : 0.04) || slots.length === 0) return bodyMutation(r, m, valid, surface);
  // The mutation kind first (every kind that fits some slot, weighted), then a slot it fits:
  // each kind gets its share whatever the shape of the message.
  const byKind = new Map<MutationKind, Slot[]>();
  for (const slot of slots) for (const k of kindsFor(slot)) byKind.set(k, [...(byKind.get(k) ?? []), slot]);
  const kinds = [...byKind.keys()];
  let roll = r() * kinds.reduce((n, k) => n + WEIGHTS[k], 0);
  const kind = kinds.find((k) => (roll -= WEIGHTS[k]) < 0) ?? kinds[kinds.length - 1];
  const slot = pick(r, byKind.get(kind)!);
  const cur = getAt(valid, slot.path);
  const curStr = typeof cur === 'string' ? cur : 'x';
  let unknownKey: string | undefined;
  let value: Json | undefined;
  let label: string;
  const inStruct = slot.type === 'struct';
  switch (kind) {
    case 'wrongType':
      [value, label] = wrongTypeFor(r, cur, slot.type);
      break;
    case 'extremeNumber': {
      const n = chance(r, 0.6) ? pick(r, CORE_NUMBERS) : pick(r, EXTREME_NUMBERS);
      value = inStruct ? { n: new Raw(n), ok: 1 } : new Raw(n);
      label = inStruct ? `{"n": ${n}}` : n;
      break;
    }
    case 'nul': {
      if (inStruct) {
        const inKey = chance(r, 0.5);
        value = inKey ? { 'k\u0000ey': 'v' } : { k: 'a\u0000b' };
        label = inKey ? '\\u0000 in a key' : '\\u0000 in a value';
      } else [value, label] = withNul(r, curStr);
      break;
    }
    case 'surrogate': {
      if (inStruct) {
        const inKey = chance(r, 0.5);
        value = inKey ? { 'k\ud800': 'v' } : { k: 'a\ud800' };
        label = inKey ? 'lone surrogate in a key' : 'lone surrogate in a value';
      } else [value, label] = withSurrogate(r, curStr);
      break;
    }
    case 'longString': {
      const [s, l] = longString(r);
      value = inStruct ? { s } : s;
      label = inStruct ? `{"s": ${l}}` : l;
      break;
    }
    case 'emptyValue':
      value = slot.type === 'list' ? [] : slot.type === 'message' ? {} : '';
      label = JSON.stringify(value);
      break;
    case 'pathChars':
      [value, label] = pick(r, [['../x', '../x'], ['a/b', 'a/b'], ['%2F', '%2F'], ['x?limit=1', 'x?limit=1'], ['#x', '#x'], [' ', 'space'], ['*', '*']] as [string, string][]);
      break;
    case 'spelling':
      [value, label] = pick(r, [[curStr.toUpperCase(), 'upper case'], [` ${curStr}`, 'leading space'], [`${slot.field!.name.toUpperCase()}_${curStr.toUpperCase()}`, 'proto enum style'], ['unknown', '"unknown"']] as [string, string][]);
      break;
    case 'otherTenantId': {
      const refKind = slot.ref === 'target' ? pick(r, ['resource', 'subject', 'scope'] as const) : (slot.ref as KindName);
      value = otherId(r, world, refKind, world.B) ?? `${namespaceOf(refKind)}_nosuch`;
      label = `a ${refKind} of the other tenant`;
      break;
    }
    case 'unknownId': {
      const ns = namespaceOf(slot.ref as KindName);
      value = `${ns}_${token(r, 12)}`;
      label = 'a well-formed id that does not exist';
      break;
    }
    case 'takenId': {
      const own = m.kind ? otherId(r, world, m.kind, chance(r, 0.5) ? world.A : world.B) : undefined;
      value = own ?? `${m.kind ? namespaceOf(m.kind) : 'x'}_taken`;
      label = 'the id of an existing entity';
      break;
    }
    case 'badTimestamp':
      value = pick(r, BAD_TIMESTAMPS);
      label = JSON.stringify(value);
      break;
    case 'unknownField': {
      const [key, v, l] = pick(r, [['bogusField', 1, '"bogusField": 1'], ['__proto__', { polluted: true }, '"__proto__": {…}'], ['constructor', { prototype: 1 }, '"constructor": {…}']] as [string, Json, string][]);
      const base = isObj(cur) ? cur : {};
      // Raw keeps a literal "__proto__" key (an object literal would set the prototype instead).
      value = new Raw(`{${[...Object.keys(base).map((k) => `${JSON.stringify(k)}:${serialize(base[k])}`), `${JSON.stringify(key)}:${serialize(v)}`].join(',')}}`);
      label = l;
      unknownKey = key;
      break;
    }
    case 'deepNesting': {
      const [v, l] = deep(r);
      value = slot.type === 'list' && chance(r, 0.5) ? [v] : v;
      label = Array.isArray(value) ? `[${l}]` : l;
      // Where a message is expected, a nested object is first of all an unknown field "a".
      if (v.text.startsWith('{') && (slot.type === 'message' || (slot.type === 'list' && slot.items))) unknownKey = 'a';
      break;
    }
    case 'hugeArray': {
      if (slot.items) {
        const n = chance(r, 0.7) ? 1_001 : 1_000;
        const el = Array.isArray(cur) && cur.length ? cur[0] : {};
        const one = isObj(el) ? Object.fromEntries(Object.entries(el).filter(([k]) => k !== 'id')) : el;
        value = new Array(n).fill(one);
        label = `${n} items`;
      } else if (slot.type === 'list') {
        const el = Array.isArray(cur) && cur.length ? cur[0] : 'x';
        const distinct = chance(r, 0.5);
        value = distinct ? Array.from({ length: 10_000 }, (_, i) => `${String(el)}-${i}`) : new Array(10_000).fill(el);
        label = distinct ? '10,000 distinct elements' : '10,000 copies of an element';
      } else {
        const inner = chance(r, 0.5) ? new Array(10_000).fill(0) : new Array(10_000).fill({ a: 'b' });
        value = inStruct ? { xs: inner } : inner;
        label = inStruct ? '{"xs": [10,000 elements]}' : '[10,000 elements]';
      }
      break;
    }
    default:
      throw new Error(`unhandled mutation ${kind}`);
  }
    // An unknown field is named by its own key; any other slot by its field.
  const field = unknownKey ? { jsonName: unknownKey, protoName: unknownKey } : slot.field ? { jsonName: slot.field.jsonName, protoName: slot.field.name } : undefined;
  return { mutation: { kind, path: slot.path, label, field }, payload: { tree: setAt(valid, slot.path, value) } };
}

/** Mutations of the body as a whole. */
function bodyMutation(r: Rng, m: MethodInfo, valid: JsonObj, surface: 'rest' | 'connect'): { mutation: Mutation; payload: Payload } {
  const hasBody = surface === 'connect' || m.route.body.kind !== 'none';
  const choices: MutationKind[] = hasBody ? ['emptyBody', 'emptyBody', 'malformedBody', 'wrongType', 'deepNesting', 'unknownField'] : ['unknownField'];
  const kind = pick(r, choices);
  const mk = (label: string, payload: Payload) => ({ mutation: { kind, path: [] as Path, label }, payload });
  switch (kind) {
    case 'emptyBody': {
      const [text, label] = pick(r, [['', 'no body'], [' \n', 'whitespace'], ['{}', '{}'], ['[]', '[]'], ['null', 'null'], ['""', '""'], ['0', '0']] as [string, string][]);
      return mk(label, { tree: valid, rawBody: text });
    }
    case 'malformedBody': {
      const text = serialize(restBodyOf(m, valid, surface));
      const [body, label] = pick(r, [
        [text.slice(0, Math.max(1, text.length >> 1)), 'truncated JSON'],
        [`${text}}`, 'trailing }'],
        [Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]), 'invalid UTF-8'],
        [dupKeys(text), 'a key twice, second value a number'],
        [`\ufeff${text}`, 'byte order mark'],
      ] as [string | Uint8Array, string][]);
      return mk(label, { tree: valid, rawBody: body });
    }
    case 'wrongType': {
      const [v, label] = pick(r, [[[], '[]'], ['x', '"x"'], [1, '1'], [true, 'true'], [[valid], '[valid request]']] as [Json, string][]);
      return mk(`whole body ${label}`, { tree: valid, rawBody: serialize(v) });
    }
    case 'deepNesting': {
      const [v, label] = deep(r);
      return mk(`whole body ${label}`, { tree: valid, rawBody: v.text });
    }
    case 'unknownField':
    default: {
      const tree = { ...valid, bogusField: 'x' };
      return { mutation: { kind: 'unknownField', path: ['bogusField'], label: '"bogusField": "x" at the top', field: { jsonName: 'bogusField', protoName: 'bogusField' } }, payload: { tree } };
    }
  }
}

function dupKeys(text: string): string {
  const m = /^\{"([^"]+)":/.exec(text);
  return m ? `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"${m[1]}":12345}` : `{"a":1,"a":2}`;
}

// --- HTTP ----------------------------------------------------------------------------------------

export interface HttpRequest {
  method: string;
  path: string;
  body?: string | Uint8Array;
}

/** Percent-encodes like encodeURIComponent, but a lone surrogate becomes its 3 WTF-8 bytes. */
export function pctEncode(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(s[i]);
  }
  return out;
}

const asText = (v: Json): string => (typeof v === 'string' ? v : v instanceof Raw ? v.text : serialize(v));

/** What the REST body of a request is: the whole message (`*`), one field (`items`), or nothing. */
function restBodyOf(m: MethodInfo, tree: Json, surface: 'rest' | 'connect'): Json {
  if (surface === 'connect') return tree;
  const body = m.route.body;
  if (body.kind === 'field') return isObj(tree) ? (tree[body.field.jsonName] ?? []) : tree;
  return tree;
}

export function toRest(m: MethodInfo, payload: Payload): HttpRequest {
  let rest: Json = payload.tree;
  const parts: string[] = [];
  for (const seg of m.route.segments) {
    if (seg.kind === 'literal') {
      parts.push(seg.value);
      continue;
    }
    const p = seg.fields.map((f) => f.jsonName);
    const v = getAt(rest, p);
    parts.push(v === undefined ? '' : pctEncode(asText(v)));
    if (isObj(rest)) rest = setAt(rest, p, undefined);
  }
  let path = '/' + parts.join('/');
  const body = m.route.body;
  if (body.kind === 'none') {
    const query: string[] = [];
    const add = (prefix: string, v: Json | undefined) => {
      if (v === undefined) return;
      if (isObj(v)) for (const [k, x] of Object.entries(v)) add(prefix ? `${prefix}.${k}` : k, x);
      else if (Array.isArray(v)) for (const x of v) query.push(`${pctEncode(prefix)}=${pctEncode(asText(x))}`);
      else query.push(`${pctEncode(prefix)}=${pctEncode(asText(v))}`);
    };
    if (isObj(rest)) add('', rest);
    else if (rest !== undefined) query.push(`body=${pctEncode(asText(rest))}`);
    if (query.length) path += `?${query.join('&')}`;
    return { method: m.route.verb, path };
  }
  if (payload.rawBody !== undefined) return { method: m.route.verb, path, body: payload.rawBody };
  if (body.kind === 'field') {
    const inner = isObj(rest) ? rest[body.field.jsonName] : rest;
    const others = isObj(rest) ? Object.keys(rest).filter((k) => k !== body.field.jsonName) : [];
    if (others.length && isObj(rest)) {
      // A field outside the body (a mutation's unknown field) goes to the query, like any other.
      path += `?${others.map((k) => `${pctEncode(k)}=${pctEncode(asText(rest[k] ?? ''))}`).join('&')}`;
    }
    return { method: m.route.verb, path, body: inner === undefined ? '' : serialize(inner) };
  }
  return { method: m.route.verb, path, body: serialize(rest) };
}

export function toConnect(m: MethodInfo, payload: Payload): HttpRequest {
  return {
    method: 'POST',
    path: `/${m.method.parent.typeName}/${m.method.name}`,
    body: payload.rawBody ?? serialize(payload.tree),
  };
}
