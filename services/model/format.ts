/**
 * The tenant model file, written once: these TypeBox values are both the TypeScript types of a
 * model and its JSON Schema (draft 2020-12, `tenantModelJsonSchema`), so the schema editors and
 * `authz validate` use cannot drift from what the code reads. Limits come from the same constants
 * the API enforces (common/validate.ts).
 */
import { getOption, hasOption, type DescField } from '@bufbuild/protobuf';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { max_items } from '../../gen/authz/v1/options_pb.js';
import { CreateResourcePolicyRequestSchema } from '../../gen/authz/v1/policy_service_pb.js';
import { MAX_BATCH, MAX_STRING } from '../common/validate.js';
import { CASCADES, EFFECTS, LINK_TYPES, OVERRIDE_MODES, RESOURCE_TYPE_KEY, SUBJECT_TYPES } from '../common/vocabulary.js';

export const API_VERSION = 'authz/v1';
export const MODEL_KIND = 'TenantModel';
/** Where the published schema lives in the repository (and the `$id` it carries). */
export const SCHEMA_FILE = 'schemas/tenant-model.schema.json';
export const SCHEMA_ID = 'https://authz.example.com/schemas/tenant-model.schema.json';

/** Scope types every tenant has: a model may use them without listing them. */
export const BUILT_IN_SCOPE_TYPES = ['environment', 'project', 'tenant', 'workspace'] as const;

/** A policy's name: what its id is made of (contract §3 id suffix characters). */
export const POLICY_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The root scope is `/`; below it, scope names joined by `/` (`/eng/platform`). */
const SCOPE_REF = '^/([^/]+(/[^/]+)*)?$';
const SCOPE_PATH = '^(/[^/]+)+$';

/** The most items the API takes in a request list (its `max_items` option, else a batch). */
const maxItemsOf = (f: DescField) => (hasOption(f, max_items) ? getOption(f, max_items) : MAX_BATCH);

const strings = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description });
const text = (description: string, minLength = 1) => Type.String({ minLength, maxLength: MAX_STRING, description });
const optionalText = (description: string) => Type.Optional(text(description, 0));
const list = <T extends TSchema>(items: T, description: string) => Type.Array(items, { maxItems: MAX_BATCH, description });
const jsonObject = (description: string) => Type.Unsafe<{ [key: string]: unknown }>({ type: 'object', description });
const strict = { additionalProperties: false } as const;

const scopeRef = (description: string) => Type.String({ pattern: SCOPE_REF, description });
const optionalScope = (what: string) => Type.Optional(scopeRef(`The scope ${what}, as a path from the tenant root ("/eng/platform"); the root ("/") when absent.`));
const resourceRef = (description: string) => Type.String({ pattern: '^[a-z0-9_-]+/.+$', maxLength: 2 * MAX_STRING + 1, description });
const roleRef = (description: string) => text(`${description} A role key, resolved at the referring scope: the nearest role with that key at that scope or above it.`);
const tagRef = Type.Object({
  group: text('The tag group\'s key.'),
  identifier: text('The tag\'s identifier within the group.'),
}, { ...strict, description: 'A tag, by its group\'s key and its identifier.' });

export const ScopeTypeItem = Type.Object({
  name: text('The scope type\'s name (scope types are global: shared by every tenant).'),
  description: optionalText('What the scope type is for; used when a platform key creates it.'),
}, strict);

export const ScopeItem = Type.Object({
  path: Type.String({ pattern: SCOPE_PATH, description: 'The scope\'s path from the tenant root: its ancestors\' names and its own, each after a "/".' }),
  type: text('The scope type\'s name.'),
}, strict);

export const ResourceTypeItem = Type.Object({
  key: Type.String({ pattern: RESOURCE_TYPE_KEY.source, maxLength: MAX_STRING, description: 'The type\'s key: what permissions name and resources refer to.' }),
  name: Type.Optional(text('A human-readable name; the key when absent.')),
  scope: optionalScope('where the type is defined (usable there and below)'),
}, strict);

export const ResourceTypeEdgeItem = Type.Object({
  parent: text('The containing type\'s key.'),
  child: text('The contained type\'s key.'),
}, strict);

export const PermissionItem = Type.Object({
  key: Type.String({ pattern: '^[^:]+:[^:]+:.+$', maxLength: 3 * MAX_STRING + 2, description: '<resourceType>:<action>:<resourcePattern>.' }),
  scope: optionalScope('where the permission is defined'),
  name: optionalText('A display name.'),
  description: optionalText('What the permission allows.'),
}, strict);

export const RoleItem = Type.Object({
  key: text('The role\'s key, unique at its scope.'),
  scope: optionalScope('where the role is defined (usable there and below)'),
  name: Type.Optional(text('A display name; the key when absent.')),
  description: optionalText('What the role is for.'),
  permissions: Type.Optional(list(text('A permission key, resolved at the role\'s scope: the nearest permission with that key at that scope or above it.'), 'The permissions the role grants.')),
}, strict);

export const ScopeOverrideItem = Type.Object({
  scope: optionalScope('where the override applies (and below)'),
  role: roleRef('The role the override changes.'),
  mode: strings(OVERRIDE_MODES, '`block` stops the role flowing down past the scope; `add` and `remove` change its permissions there and below.'),
  permissions: Type.Optional(list(text('A permission key.'), 'Required for `add` and `remove`; absent for `block`.')),
}, strict);

export const TagItem = Type.Object({
  identifier: text('The tag\'s identifier, unique in its group.'),
  label: optionalText('A display label.'),
  scope: optionalScope('of the tag; the group\'s scope when absent'),
}, strict);

export const TagGroupItem = Type.Object({
  key: text('The group\'s key, unique in the tenant (match definitions name it).'),
  scope: optionalScope('where the group is defined'),
  name: Type.Optional(text('A display name; the key when absent.')),
  description: optionalText('What the group is for.'),
  maxAppliedPerTarget: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'The most tags of the group one target may carry; 0 (no limit) when absent.' })),
  locked: Type.Optional(Type.Boolean({ description: 'A locked group takes no new tags or assignments through the API.' })),
  tags: Type.Optional(list(TagItem, 'The group\'s tags.')),
}, strict);

export const CollectionItem = Type.Object({
  name: text('The collection\'s name, unique in the model (policies name it).'),
  scope: optionalScope('where the collection is defined (it applies there and below)'),
  resourceType: text('The key of the resource type the collection holds.'),
  description: optionalText('What the collection holds.'),
  match: jsonObject('The match definition: fields, tags, patterns, time, condition, any, all, none.'),
}, strict);

export const PolicyTarget = Type.Object({
  resource: Type.Optional(resourceRef('A resource, as "<type key>/<external id>".')),
  collection: Type.Optional(text('A collection\'s name.')),
}, { ...strict, minProperties: 1, maxProperties: 1, description: 'Exactly one of `resource` or `collection`.' });

export const PolicyItem = Type.Object({
  name: Type.String({ pattern: POLICY_NAME.source, description: 'The policy\'s name, unique in the tenant: letters, digits, `_` and `-` (the policy\'s id is made from it).' }),
  scope: optionalScope('where the policy is defined'),
  target: PolicyTarget,
  actions: Type.Array(text('An action, or "*" for all.'), { minItems: 1, maxItems: maxItemsOf(CreateResourcePolicyRequestSchema.field.actions), description: 'The actions the policy decides.' }),
  effect: strings(EFFECTS, '`allow` or `deny`.'),
  priority: Type.Optional(Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647, description: 'Only the matching policies of the highest priority decide; 0 when absent.' })),
  subjectCondition: Type.Optional(jsonObject('JSON Logic over {subject: {id, type, externalId, meta}}.')),
  contextCondition: Type.Optional(jsonObject('JSON Logic over the request context.')),
  validFrom: Type.Optional(Type.String({ format: 'date-time', description: 'The policy applies from this time (inclusive).' })),
  validUntil: Type.Optional(Type.String({ format: 'date-time', description: 'The policy applies until this time (exclusive).' })),
}, strict);

export const TagBindingItem = Type.Object({
  tag: tagRef,
  role: roleRef('The role every subject carrying the tag holds at the scope.'),
  scope: optionalScope('where the role is held'),
}, strict);

export const SubjectItem = Type.Object({
  externalId: text('The subject\'s id in the caller\'s systems, unique in the model.'),
  type: Type.Optional(strings(SUBJECT_TYPES, '`user` (when absent), `service` or `agent`.')),
  metadata: Type.Optional(jsonObject('Free-form attributes; conditions read them as subject.meta.')),
}, strict);

export const MembershipItem = Type.Object({
  subject: text('The subject\'s external id (an API key\'s subject: the key\'s id).'),
  scope: optionalScope('the subject is a member of'),
  roles: Type.Optional(list(roleRef('A role assigned on the membership.'), 'The roles assigned on the membership.')),
}, strict);

export const ResourceItem = Type.Object({
  type: text('The resource type\'s key.'),
  externalId: text('The resource\'s id in the caller\'s systems, unique per type.'),
  scope: optionalScope('that owns the resource'),
  displayName: optionalText('A display name.'),
  attributes: Type.Optional(jsonObject('Free-form attributes; match definitions read them as attributes.<path>.')),
}, strict);

export const ResourceEdgeItem = Type.Object({
  parent: resourceRef('The parent resource, as "<type key>/<external id>".'),
  child: resourceRef('The child resource (a resource has at most one parent).'),
  cascade: Type.Optional(strings(CASCADES, '`inherit`: permissions patterned to an ancestor apply to the child; `none` (when absent): they do not.')),
  relationshipType: optionalText('contains, references, owns, depends-on, ...'),
}, strict);

export const ScopeLinkItem = Type.Object({
  resource: resourceRef('The linked resource, as "<type key>/<external id>".'),
  scope: scopeRef('The scope the resource is linked to.'),
  linkType: strings(LINK_TYPES, '`share`, `alias` or `mirror`.'),
  metadata: Type.Optional(jsonObject('Free attributes of the link.')),
}, strict);

export const OwnershipGrantItem = Type.Object({
  subject: text('The owner\'s external id.'),
  resource: resourceRef('The owned resource, as "<type key>/<external id>".'),
  role: roleRef('The role whose permissions the owner holds on the resource (resolved at the resource\'s scope).'),
}, strict);

export const TagTarget = Type.Object({
  resource: Type.Optional(resourceRef('A resource, as "<type key>/<external id>".')),
  subject: Type.Optional(text('A subject\'s external id.')),
  scope: Type.Optional(scopeRef('A scope path.')),
}, { ...strict, minProperties: 1, maxProperties: 1, description: 'Exactly one of `resource`, `subject` or `scope`.' });

export const TagAssignmentItem = Type.Object({
  tag: tagRef,
  target: TagTarget,
}, strict);

/**
 * One tenant's authorization model. Every section is optional: a section the file leaves out
 * is not managed by it (its entities are neither compared nor deleted, and the file may refer
 * to them by name); a section present, even empty, is the whole desired list of its kind.
 */
export const TenantModelSchema = Type.Object({
  $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this format, for editors.' })),
  apiVersion: Type.Literal(API_VERSION, { description: `Always "${API_VERSION}".` }),
  kind: Type.Literal(MODEL_KIND, { description: `Always "${MODEL_KIND}".` }),
  scopeTypes: Type.Optional(list(ScopeTypeItem, 'Scope types the scopes use, beyond the built-in ones (tenant, project, environment, workspace).')),
  scopes: Type.Optional(list(ScopeItem, 'The scope tree below the tenant\'s root.')),
  resourceTypes: Type.Optional(list(ResourceTypeItem, 'Resource types.')),
  resourceTypeHierarchy: Type.Optional(list(ResourceTypeEdgeItem, 'Which resource types may contain which.')),
  permissions: Type.Optional(list(PermissionItem, 'Permissions.')),
  roles: Type.Optional(list(RoleItem, 'Roles with the permissions they grant.')),
  scopeOverrides: Type.Optional(list(ScopeOverrideItem, 'Overrides of inherited roles.')),
  tagGroups: Type.Optional(list(TagGroupItem, 'Tag groups with their tags.')),
  collections: Type.Optional(list(CollectionItem, 'Resource collections.')),
  policies: Type.Optional(list(PolicyItem, 'Resource policies.')),
  tagBindings: Type.Optional(list(TagBindingItem, 'Roles held by every subject carrying a tag.')),
  subjects: Type.Optional(list(SubjectItem, 'Subjects (the subjects of API keys are managed with the keys, not here).')),
  memberships: Type.Optional(list(MembershipItem, 'Memberships with their role assignments.')),
  resources: Type.Optional(list(ResourceItem, 'Resources.')),
  resourceHierarchy: Type.Optional(list(ResourceEdgeItem, 'Parent-child edges between resources.')),
  scopeLinks: Type.Optional(list(ScopeLinkItem, 'Links of resources into further scopes.')),
  ownershipGrants: Type.Optional(list(OwnershipGrantItem, 'owns(subject, resource, role) grants.')),
  tagAssignments: Type.Optional(list(TagAssignmentItem, 'Tags applied to resources, subjects and scopes.')),
}, { ...strict, title: 'Tenant model', description: 'One tenant\'s authorization model, by names and keys, never by server ids.' });

export type TenantModel = Static<typeof TenantModelSchema>;
export type ScopeTypeItem = Static<typeof ScopeTypeItem>;
export type ScopeItem = Static<typeof ScopeItem>;
export type ResourceTypeItem = Static<typeof ResourceTypeItem>;
export type ResourceTypeEdgeItem = Static<typeof ResourceTypeEdgeItem>;
export type PermissionItem = Static<typeof PermissionItem>;
export type RoleItem = Static<typeof RoleItem>;
export type ScopeOverrideItem = Static<typeof ScopeOverrideItem>;
export type TagGroupItem = Static<typeof TagGroupItem>;
export type TagItem = Static<typeof TagItem>;
export type CollectionItem = Static<typeof CollectionItem>;
export type PolicyItem = Static<typeof PolicyItem>;
export type TagBindingItem = Static<typeof TagBindingItem>;
export type SubjectItem = Static<typeof SubjectItem>;
export type MembershipItem = Static<typeof MembershipItem>;
export type ResourceItem = Static<typeof ResourceItem>;
export type ResourceEdgeItem = Static<typeof ResourceEdgeItem>;
export type ScopeLinkItem = Static<typeof ScopeLinkItem>;
export type OwnershipGrantItem = Static<typeof OwnershipGrantItem>;
export type TagAssignmentItem = Static<typeof TagAssignmentItem>;
export type TagRef = Static<typeof tagRef>;

/** The sections of a model, in the order the file and every listing use. */
export const SECTIONS = [
  'scopeTypes', 'scopes', 'resourceTypes', 'resourceTypeHierarchy', 'permissions', 'roles', 'scopeOverrides',
  'tagGroups', 'collections', 'policies', 'tagBindings', 'subjects', 'memberships', 'resources',
  'resourceHierarchy', 'scopeLinks', 'ownershipGrants', 'tagAssignments',
] as const satisfies readonly (keyof TenantModel)[];
export type Section = (typeof SECTIONS)[number];

/** The JSON Schema (draft 2020-12) of the model file, as written to SCHEMA_FILE. */
export function tenantModelJsonSchema(): Record<string, unknown> {
  // JSON round trip: TypeBox marks its schemas with symbol keys, which JSON leaves out.
  const body = JSON.parse(JSON.stringify(TenantModelSchema)) as Record<string, unknown>;
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: SCHEMA_ID, ...body };
}
