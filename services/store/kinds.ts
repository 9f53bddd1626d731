import type { EntitySchema } from '@mikro-orm/core';
import {
  ScalarType, create, fromJson, toJson, type DescField, type DescMessage, type JsonObject, type JsonValue, type MessageShape,
} from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Namespace } from '../common/ids.js';
import * as S from './schema.js';
import { TenantSchema, ProjectSchema, EnvironmentSchema, WorkspaceSchema } from '../../gen/authz/v1/tenancy_pb.js';
import { ScopeSchema, ScopeTypeSchema, ScopeTypeEdgeSchema } from '../../gen/authz/v1/scope_pb.js';
import { SubjectSchema } from '../../gen/authz/v1/subject_pb.js';
import {
  RoleSchema, PermissionSchema, RolePermissionSchema, MembershipSchema, RoleAssignmentSchema,
  ScopeOverrideSchema, OwnershipGrantSchema,
} from '../../gen/authz/v1/access_pb.js';
import { TagGroupSchema, TagSchema, TagAssignmentSchema, TagBindingSchema } from '../../gen/authz/v1/tag_pb.js';
import {
  ResourceTypeSchema, ResourceTypeEdgeSchema, ResourceSchema, ResourceEdgeSchema, ResourceScopeLinkSchema,
} from '../../gen/authz/v1/resource_pb.js';
import { ResourceCollectionSchema, ResourcePolicySchema } from '../../gen/authz/v1/policy_pb.js';
import { ApiKeySchema } from '../../gen/authz/v1/api_key_pb.js';

/** A stored row: proto field names, Date for timestamps, plain JSON for json columns. */
export type Row = Record<string, unknown>;

export interface KindDef<M extends DescMessage = DescMessage> {
  /** The change-log `kind` and the engine's name for the entity. */
  kind: string;
  /** What error messages call it. */
  label: string;
  namespace: Namespace;
  entity: EntitySchema<Row>;
  message: M;
  /** Whether rows carry a (non-null) tenant and reach the tenant's change log. */
  tenantOwned: boolean;
}

function def<M extends DescMessage>(kind: string, label: string, namespace: Namespace, entity: EntitySchema<Row>, message: M, tenantOwned = true): KindDef<M> {
  return { kind, label, namespace, entity, message, tenantOwned };
}

export const KINDS = {
  tenant: def('tenant', 'tenant', 'tenant', S.TenantEntity, TenantSchema, false),
  project: def('project', 'project', 'project', S.ProjectEntity, ProjectSchema),
  environment: def('environment', 'environment', 'environment', S.EnvironmentEntity, EnvironmentSchema),
  workspace: def('workspace', 'workspace', 'workspace', S.WorkspaceEntity, WorkspaceSchema),
  scopeType: def('scope_type', 'scope type', 'scope_type', S.ScopeTypeEntity, ScopeTypeSchema, false),
  scopeTypeEdge: def('scope_type_edge', 'scope type edge', 'scope_type_edge', S.ScopeTypeEdgeEntity, ScopeTypeEdgeSchema, false),
  scope: def('scope', 'scope', 'scope', S.ScopeEntity, ScopeSchema),
  subject: def('subject', 'subject', 'subject', S.SubjectEntity, SubjectSchema),
  role: def('role', 'role', 'role', S.RoleEntity, RoleSchema),
  permission: def('permission', 'permission', 'permission', S.PermissionEntity, PermissionSchema),
  rolePermission: def('role_permission', 'role permission', 'role_permission', S.RolePermissionEntity, RolePermissionSchema),
  membership: def('membership', 'membership', 'membership', S.MembershipEntity, MembershipSchema),
  roleAssignment: def('role_assignment', 'role assignment', 'role_assignment', S.RoleAssignmentEntity, RoleAssignmentSchema),
  scopeOverride: def('scope_override', 'scope override', 'scope_override', S.ScopeOverrideEntity, ScopeOverrideSchema),
  ownershipGrant: def('ownership_grant', 'ownership grant', 'ownership_grant', S.OwnershipGrantEntity, OwnershipGrantSchema),
  tagGroup: def('tag_group', 'tag group', 'tag_group', S.TagGroupEntity, TagGroupSchema),
  tag: def('tag', 'tag', 'tag', S.TagEntity, TagSchema),
  tagAssignment: def('tag_assignment', 'tag assignment', 'tag_assignment', S.TagAssignmentEntity, TagAssignmentSchema),
  tagBinding: def('tag_binding', 'tag binding', 'tag_binding', S.TagBindingEntity, TagBindingSchema),
  resourceType: def('resource_type', 'resource type', 'resource_type', S.ResourceTypeEntity, ResourceTypeSchema),
  resourceTypeEdge: def('resource_type_edge', 'resource type edge', 'resource_type_edge', S.ResourceTypeEdgeEntity, ResourceTypeEdgeSchema),
  resource: def('resource', 'resource', 'resource', S.ResourceEntity, ResourceSchema),
  resourceEdge: def('resource_edge', 'resource edge', 'resource_edge', S.ResourceEdgeEntity, ResourceEdgeSchema),
  resourceScopeLink: def('resource_scope_link', 'resource scope link', 'rsl', S.ResourceScopeLinkEntity, ResourceScopeLinkSchema),
  collection: def('collection', 'collection', 'collection', S.ResourceCollectionEntity, ResourceCollectionSchema),
  policy: def('policy', 'policy', 'policy', S.ResourcePolicyEntity, ResourcePolicySchema),
  apiKey: def('api_key', 'API key', 'apk', S.ApiKeyEntity, ApiKeySchema),
} as const;

export type KindName = keyof typeof KINDS;
export type MessageOf<K extends KindName> = MessageShape<(typeof KINDS)[K]['message']>;

/** The row in proto JSON form (what the change log and the Watch stream carry). */
export function rowToJson(kind: KindDef, row: Row): JsonObject {
  const out: JsonObject = {};
  for (const f of kind.message.fields) {
    const v = row[f.localName];
    if (v === null || v === undefined) continue;
    out[f.jsonName] = v instanceof Date ? v.toISOString() : (v as JsonValue);
  }
  // Resources answer with the owner scope under both names (spec: get/list carry `scopeId`).
  if (kind.kind === 'resource') out.scopeId = out.ownerScopeId ?? '';
  return out;
}

/** Messages made ahead of time by prepareMessages, with the row contents they were made from. */
const prepared = new WeakMap<Row, { kind: KindName; keys: string[]; values: unknown[]; message: unknown }>();

/**
 * Converts rows to messages ahead of time (the store does it while PostgreSQL runs the insert),
 * so that a later rowToMessage of the same row object is free. A row whose fields changed since
 * (compared value by value) is converted afresh, so the answer is always that of rowToMessage.
 */
export function prepareMessages(kind: KindName, rows: Row[]): void {
  for (const row of rows) {
    prepared.set(row, { kind, keys: Object.keys(row), values: Object.values(row), message: convert(kind, row) });
  }
}

/** The row as its generated message. */
export function rowToMessage<K extends KindName>(kind: K, row: Row): MessageOf<K> {
  const hit = prepared.get(row);
  if (hit) {
    prepared.delete(row);
    if (hit.kind === kind && hit.keys.length === Object.keys(row).length && hit.keys.every((k, i) => row[k] === hit.values[i])) {
      return hit.message as MessageOf<K>;
    }
  }
  return convert(kind, row);
}

function convert<K extends KindName>(kind: K, row: Row): MessageOf<K> {
  const d = KINDS[kind] as KindDef;
  const plan = planOf(d);
  const init = plan && directInit(d, plan, row);
  if (init) return create(d.message, init) as MessageOf<K>;
  return fromJson(d.message, rowToJson(d, row), { ignoreUnknownFields: true }) as MessageOf<K>;
}

/** The message in the change log's JSON form, every field present. */
export function messageToChangeData(kind: KindDef, row: Row): JsonObject {
  const plan = planOf(kind);
  const direct = plan && directChangeData(kind, plan, row);
  if (direct) return direct;
  return toJson(kind.message, fromJson(kind.message, rowToJson(kind, row), { ignoreUnknownFields: true }), {
    alwaysEmitImplicit: true,
  }) as JsonObject;
}

/**
 * The rows as the JSON array of their messages, as every surface writes them (every implicit
 * field): a batch create's REST body, without making the messages.
 */
export function rowsToJsonText(kind: KindName, rows: Row[]): string {
  const d = KINDS[kind] as KindDef;
  const plan = planOf(d);
  const keys = plan?.map((f) => `${JSON.stringify(f.json)}:`);
  const iso = lastIso();
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    const text = (plan && directJsonText(d, plan, keys!, rows[i], iso)) ?? JSON.stringify(messageToChangeData(d, rows[i]));
    out += i === 0 ? text : `,${text}`;
  }
  return `${out}]`;
}

/** A Date's JSON text as protobuf-es writes a Timestamp, remembered for the last Date asked (a batch's rows share one). */
function lastIso(): (d: Date) => string {
  let last: Date | undefined;
  let text = '';
  return (d) => {
    if (d !== last) {
      last = d;
      text = JSON.stringify(d.toISOString().replace('.000Z', 'Z'));
    }
    return text;
  };
}

const ZERO_TEXT: Record<'string' | 'bool' | 'int32' | 'strings', string> = { string: '""', bool: 'false', int32: '0', strings: '[]' };

/** JSON.stringify(directChangeData(…)) written directly; null where directChangeData is null. */
function directJsonText(kind: KindDef, plan: FieldPlan[], keys: string[], row: Row, iso: (d: Date) => string): string | null {
  let out = '{';
  for (let k = 0; k < plan.length; k++) {
    const f = plan[k];
    const v = valueOf(kind, row, f);
    let text: string;
    if (v === null || v === undefined) {
      if (f.explicit || f.shape === 'timestamp' || f.shape === 'struct') continue;
      text = ZERO_TEXT[f.shape];
    } else {
      if (!fits(f, v)) return null;
      text = f.shape === 'timestamp' ? iso(v as Date) : JSON.stringify(v);
    }
    out += out.length === 1 ? `${keys[k]}${text}` : `,${keys[k]}${text}`;
  }
  return `${out}}`;
}

// --- direct conversions -------------------------------------------------------------------------
//
// rowToMessage and messageToChangeData run once per written or answered row, so for batches of
// 1,000 the generic route (row -> JSON -> fromJson -> toJson) dominated the write path. For kinds
// whose fields are all of the simple shapes below, the same results are built directly from the
// row; any other kind, and any row holding an unexpected value, takes the generic route, so the
// output is unchanged (resource.test.ts compares both routes).

/** How a field maps between a row value and its message / JSON form. */
interface FieldPlan {
  local: string;
  json: string;
  shape: 'string' | 'bool' | 'int32' | 'timestamp' | 'struct' | 'strings';
  /** Explicit presence (message fields, proto3 `optional`): omitted from JSON when unset. */
  explicit: boolean;
}

const IMPLICIT_PRESENCE = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT
const plans = new WeakMap<KindDef, FieldPlan[] | null>();

function shapeOf(f: DescField): FieldPlan['shape'] | null {
  if (f.fieldKind === 'scalar') {
    if (f.scalar === ScalarType.STRING) return 'string';
    if (f.scalar === ScalarType.BOOL) return 'bool';
    if (f.scalar === ScalarType.INT32) return 'int32';
    return null;
  }
  if (f.fieldKind === 'message' && !f.oneof) {
    if (f.message.typeName === 'google.protobuf.Timestamp') return 'timestamp';
    if (f.message.typeName === 'google.protobuf.Struct') return 'struct';
    return null;
  }
  if (f.fieldKind === 'list' && f.listKind === 'scalar' && f.scalar === ScalarType.STRING) return 'strings';
  return null;
}

function planOf(kind: KindDef): FieldPlan[] | null {
  let plan = plans.get(kind);
  if (plan !== undefined) return plan;
  plan = [];
  for (const f of [...kind.message.fields].sort((a, b) => a.number - b.number)) {
    const shape = f.oneof ? null : shapeOf(f);
    if (!shape) {
      plan = null;
      break;
    }
    plan.push({ local: f.localName, json: f.jsonName, shape, explicit: f.presence !== IMPLICIT_PRESENCE });
  }
  plans.set(kind, plan);
  return plan;
}

/** The row value of a field; resources carry their owner scope under `scopeId` too (as rowToJson). */
function valueOf(kind: KindDef, row: Row, f: FieldPlan): unknown {
  if (kind.kind === 'resource' && f.local === 'scopeId') return row.ownerScopeId ?? '';
  return row[f.local];
}

const MIN_TIME = Date.parse('0001-01-01T00:00:00Z');
const MAX_TIME = Date.parse('9999-12-31T23:59:59Z');
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function isPlainObject(v: unknown): v is JsonObject {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Whether a present (non-null) row value fits the field's shape. */
function fits(f: FieldPlan, v: unknown): boolean {
  switch (f.shape) {
    case 'string': return typeof v === 'string';
    case 'bool': return typeof v === 'boolean';
    case 'int32': return typeof v === 'number' && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;
    case 'timestamp': return v instanceof Date && v.getTime() >= MIN_TIME && v.getTime() <= MAX_TIME;
    case 'struct': return isPlainObject(v);
    case 'strings': return Array.isArray(v) && v.every((x) => typeof x === 'string');
  }
}

/** The init object of `create` for the row, or null when a value needs the generic route. */
function directInit(kind: KindDef, plan: FieldPlan[], row: Row): Record<string, unknown> | null {
  const init: Record<string, unknown> = {};
  for (const f of plan) {
    const v = valueOf(kind, row, f);
    if (v === null || v === undefined) continue;
    if (!fits(f, v)) return null;
    init[f.local] = f.shape === 'timestamp' ? timestampFromDate(v as Date) : v;
  }
  return init;
}

const ZERO: Record<'string' | 'bool' | 'int32' | 'strings', () => JsonValue> = {
  string: () => '', bool: () => false, int32: () => 0, strings: () => [],
};

/** toJson(alwaysEmitImplicit) of the row's message, or null when a value needs the generic route. */
function directChangeData(kind: KindDef, plan: FieldPlan[], row: Row): JsonObject | null {
  const out: JsonObject = {};
  for (const f of plan) {
    const v = valueOf(kind, row, f);
    if (v === null || v === undefined) {
      if (!f.explicit && f.shape !== 'timestamp' && f.shape !== 'struct') out[f.json] = ZERO[f.shape]();
      continue;
    }
    if (!fits(f, v)) return null;
    switch (f.shape) {
      case 'timestamp':
        // protobuf-es writes whole seconds without a fraction, else milliseconds.
        out[f.json] = (v as Date).toISOString().replace('.000Z', 'Z');
        break;
      case 'struct': // rows are not mutated once built, so the JSON object is shared
        out[f.json] = v as JsonObject;
        break;
      case 'strings':
        out[f.json] = [...(v as string[])];
        break;
      default:
        out[f.json] = v as JsonValue;
    }
  }
  return out;
}

/** Per field index of a row block (JSON name → place), each plan field's place there, or null when one is missing. */
const placesByIndex = new WeakMap<ReadonlyMap<string, number>, Map<FieldPlan[], number[] | null>>();
function placesOf(plan: FieldPlan[], index: ReadonlyMap<string, number>): number[] | null {
  let byPlan = placesByIndex.get(index);
  if (byPlan === undefined) placesByIndex.set(index, (byPlan = new Map()));
  let places = byPlan.get(plan);
  if (places === undefined) {
    const found = plan.map((f) => index.get(f.json) ?? -1);
    byPlan.set(plan, (places = found.includes(-1) ? null : found));
  }
  return places;
}

/**
 * A kind's row as PostgreSQL's text (tenant-rows.ts reads whole tenants that way): where each
 * property's column is, and what each column's text is.
 */
export interface TextColumns {
  def: KindDef;
  /** The column of each property (proto field name). */
  at: ReadonlyMap<string, number>;
  /** Properties not read per row, with the one text every row has (the tenant's id). */
  fixed: ReadonlyMap<string, string>;
  /**
   * Per column: `text` as it is; `jsonb` PostgreSQL's JSON text; `bool` `t`/`f`; `int4` decimal
   * digits; `date` an ISO time in milliseconds (`2026-01-02T03:04:05.678Z`) for years 1 to 9999,
   * else something else (see TEXT_ISO_TIME); `other` anything the direct route leaves alone.
   */
  types: readonly ('text' | 'jsonb' | 'bool' | 'int4' | 'date' | 'other')[];
}

/** A timestamp's text when it is in the range protobuf-es writes as JSON (tenant-rows.ts). */
export const TEXT_ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/**
 * A JSON number of 309 digits or more overflows a double: JSON.parse makes it Infinity, which
 * the JSON route writes as null. Such a text takes that route (no API call writes one).
 */
const HUGE_NUMBER = /\d{309}/;

/**
 * Per field of a kind's plan, its column in a TextColumns (-1: none), and its fixed text when it
 * has one; null when the direct route cannot read the kind.
 */
interface TextPlan {
  columns: number[];
  fixed: (string | undefined)[];
}
const textPlans = new WeakMap<TextColumns, TextPlan | null>();
function textPlanOf(plan: FieldPlan[], cols: TextColumns): TextPlan | null {
  let found = textPlans.get(cols);
  if (found !== undefined) return found;
  const want: Record<FieldPlan['shape'], string> = { string: 'text', bool: 'bool', int32: 'int4', timestamp: 'date', struct: 'jsonb', strings: 'jsonb' };
  found = { columns: [], fixed: [] };
  for (const f of plan) {
    // Resources carry their owner scope under `scopeId` too (as valueOf).
    const prop = cols.def.kind === 'resource' && f.local === 'scopeId' ? 'ownerScopeId' : f.local;
    const c = cols.at.get(prop);
    const fixed = cols.fixed.get(prop);
    if ((c !== undefined && cols.types[c] !== want[f.shape]) || (fixed !== undefined && f.shape !== 'string')) {
      found = null;
      break;
    }
    found.columns.push(c ?? -1);
    found.fixed.push(fixed);
  }
  textPlans.set(cols, found);
  return found;
}

/**
 * The values of `messageToChangeData(kind, row)` as a snapshot's row block holds them, read
 * straight from the row's PostgreSQL text, at each field's place in `index` (JSON name → place):
 * a string as it is (`isString`), any other value as its JSON text, undefined where the JSON has
 * no key. No row object, no JSON parsed and written again, no Date: for a snapshot of millions of
 * rows those were most of the control plane's work. A JSON value is PostgreSQL's text of it
 * (`{"a": 1}`), which a client parses to the same value. False when the kind or a value needs the
 * generic route: the caller then hydrates the row and goes through messageToChangeData
 * (`snapshot.test.ts` compares the two over every kind). `values` and `isString` come cleared
 * (undefined) and as long as the block's fields.
 */
export function changeDataText(cols: TextColumns, text: (string | null)[], index: ReadonlyMap<string, number>, values: (string | undefined)[], isString: boolean[]): boolean {
  const kind = cols.def;
  const plan = planOf(kind);
  const places = plan && placesOf(plan, index);
  const read = plan && textPlanOf(plan, cols);
  if (!plan || !places || !read) return false;
  for (let i = 0; i < plan.length; i++) {
    const f = plan[i];
    const at = places[i];
    const c = read.columns[i];
    let v = c < 0 ? read.fixed[i] ?? null : text[c];
    if (v === null && kind.kind === 'resource' && f.local === 'scopeId') v = '';
    if (v === null) {
      if (f.explicit || f.shape === 'timestamp' || f.shape === 'struct') continue;
      const zero = ZERO[f.shape]();
      values[at] = typeof zero === 'string' ? zero : JSON.stringify(zero);
      isString[at] = typeof zero === 'string';
      continue;
    }
    switch (f.shape) {
      case 'string':
        values[at] = v;
        isString[at] = true;
        continue;
      case 'timestamp':
        if (!TEXT_ISO_TIME.test(v)) return false;
        // As directChangeData: whole seconds without a fraction, else milliseconds.
        values[at] = v.endsWith('.000Z') ? `${v.slice(0, -5)}Z` : v;
        isString[at] = true;
        continue;
      case 'bool':
        if (v !== 't' && v !== 'f') return false;
        values[at] = v === 't' ? 'true' : 'false';
        break;
      case 'int32': // int4's text is a JSON number
        values[at] = v;
        break;
      case 'struct':
        if (v.charCodeAt(0) !== 0x7b /* { */ || HUGE_NUMBER.test(v)) return false;
        values[at] = v;
        break;
      case 'strings': {
        const list = JSON.parse(v) as unknown;
        if (!fits(f, list)) return false;
        values[at] = v;
        break;
      }
    }
    isString[at] = false;
  }
  return true;
}

/** Per kind, its change data's JSON names in plan order and their places (for changeDataOfText). */
const textObjectPlaces = new WeakMap<KindDef, { names: string[]; index: ReadonlyMap<string, number> }>();

/**
 * `messageToChangeData(kind, row)` of a row read as PostgreSQL's text, through changeDataText
 * (the snapshot's route: no row object hydrated, no Date made and formatted again); undefined
 * where that route gives way to the generic one. What the control plane's own decision index is
 * built from.
 */
export function changeDataOfText(cols: TextColumns, text: (string | null)[]): JsonObject | undefined {
  const plan = planOf(cols.def);
  if (!plan) return undefined;
  let places = textObjectPlaces.get(cols.def);
  if (!places) {
    const names = plan.map((f) => f.json);
    textObjectPlaces.set(cols.def, (places = { names, index: new Map(names.map((n, i) => [n, i])) }));
  }
  const values = new Array<string | undefined>(plan.length).fill(undefined);
  const isString = new Array<boolean>(plan.length).fill(false);
  if (!changeDataText(cols, text, places.index, values, isString)) return undefined;
  const out: JsonObject = {};
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v !== undefined) out[places.names[i]] = isString[i] ? v : (JSON.parse(v) as JsonObject[string]);
  }
  return out;
}

/** Kind definitions by their change-log name (`resource_scope_link`, …). */
const BY_LOG_KIND = new Map<string, KindDef>(Object.values(KINDS).map((d) => [d.kind, d as KindDef]));

/**
 * A change-log row (the store row as JSON) in the proto JSON form readers use (every field
 * present, ISO timestamps); undefined for a kind the store does not know.
 */
export function changeLogData(kind: string, row: Row): JsonObject | undefined {
  const d = BY_LOG_KIND.get(kind);
  return d ? messageToChangeData(d, row) : undefined;
}
