/**
 * The decision-test file (`authz test`), written once like the model format: these TypeBox
 * values are its TypeScript types and its JSON Schema (DECISION_TESTS_SCHEMA_FILE). A file names
 * a model (a path next to it, or inline), an optional clock, and the decisions and effective
 * permissions the model must give, by the model's own names.
 */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_BATCH, MAX_STRING } from '../common/validate.js';
import { GATE_MODES } from '../common/settings.js';
import { SUBJECT_TYPES } from '../common/vocabulary.js';
import { DECISION_REASONS } from '../engine/mod.js';
import { API_VERSION, TenantModelSchema } from './format.js';

export const DECISION_TESTS_KIND = 'DecisionTests';
export const DECISION_TESTS_SCHEMA_FILE = 'schemas/decision-tests.schema.json';
const SCHEMA_ID = 'https://authz.example.com/schemas/decision-tests.schema.json';

const strict = { additionalProperties: false } as const;
const text = (description: string) => Type.String({ minLength: 1, maxLength: MAX_STRING, description });
const scope = Type.String({ pattern: '^/([^/]+(/[^/]+)*)?$', description: 'The scope, as a path from the tenant root ("/eng/platform"; "/" is the root).' });
const resource = Type.String({ pattern: '^[a-z0-9_-]+/.+$', maxLength: 2 * MAX_STRING + 1, description: 'The resource, as "<type key>/<external id>".' });
const subject = text('The subject\'s external id, as the model lists it.');
const subjectType = Type.Optional(Type.Unsafe<(typeof SUBJECT_TYPES)[number]>({ type: 'string', enum: [...SUBJECT_TYPES], description: 'Sent as actor.subjectType: the decision also checks it.' }));

export const CheckCase = Type.Object({
  name: Type.Optional(text('What the case shows; the report and JUnit name the case by it.')),
  subject,
  subjectType,
  scope,
  action: text('The action.'),
  resource: Type.Optional(resource),
  context: Type.Optional(Type.Unsafe<{ [key: string]: unknown }>({ type: 'object', description: 'The request context, read by policies\' contextCondition.' })),
  expect: Type.Unsafe<'allow' | 'deny'>({ type: 'string', enum: ['allow', 'deny'], description: 'The decision the case expects.' }),
  reason: Type.Optional(Type.Unsafe<(typeof DECISION_REASONS)[number]>({ type: 'string', enum: [...DECISION_REASONS], description: 'The reason the decision must give.' })),
  policy: Type.Optional(text('The name of the policy that must decide (evaluatedPolicy).')),
}, { ...strict, description: 'One decision and what it must be.' });

export const PermissionsCase = Type.Object({
  name: Type.Optional(text('What the case shows.')),
  subject,
  scope,
  resource: Type.Optional(resource),
  expect: Type.Array(Type.String({ minLength: 1, maxLength: 3 * MAX_STRING, description: 'A permission key "<resourceType>:<action>:<resourcePattern>"; one held on the resource itself (ownership) has the resource as "<type key>/<external id>" for its pattern.' }), {
    maxItems: MAX_BATCH, uniqueItems: true, description: 'Exactly the permission keys the subject holds there, from every source, in any order.',
  }),
}, { ...strict, description: 'The exact set of permissions a subject holds at a scope (on a resource, with ownership).' });

const context = Type.Optional(Type.Unsafe<{ [key: string]: unknown }>({ type: 'object', description: 'The request context, read by policies\' conditions.' }));
const lookupExpect = (item: string) => Type.Array(Type.String({ minLength: 1, maxLength: 2 * MAX_STRING + 1, description: item }), {
  maxItems: MAX_BATCH, uniqueItems: true, description: 'Exactly the set the listing gives, in any order (every page of it).',
});

export const ResourcesLookup = Type.Object({
  subject,
  subjectType,
  scope,
  action: text('The action.'),
  resourceType: Type.Optional(text('Only resources of this type key.')),
  context,
}, { ...strict, description: 'LookupResources: the resources on which the subject may do the action in the scope.' });

export const SubjectsLookup = Type.Object({
  scope,
  action: text('The action.'),
  resource: Type.Optional(resource),
  subjectType: Type.Optional(Type.Unsafe<(typeof SUBJECT_TYPES)[number]>({ type: 'string', enum: [...SUBJECT_TYPES], description: 'Only subjects of this type.' })),
  context,
}, { ...strict, description: 'LookupSubjects: the subjects that may do the action on the resource (without one: in the scope).' });

export const LookupCase = Type.Union([
  Type.Object({
    name: Type.Optional(text('What the case shows.')),
    resources: ResourcesLookup,
    expect: lookupExpect('A resource, as "<type key>/<external id>".'),
  }, { ...strict, description: 'The exact set of resources a subject may act on.' }),
  Type.Object({
    name: Type.Optional(text('What the case shows.')),
    subjects: SubjectsLookup,
    expect: lookupExpect('A subject\'s external id.'),
  }, { ...strict, description: 'The exact set of subjects that may act on a resource.' }),
], { description: 'One listing and the exact set it must give: `resources` or `subjects`.' });

export const DecisionTestsSchema = Type.Object({
  $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this format, for editors.' })),
  apiVersion: Type.Literal(API_VERSION, { description: `Always "${API_VERSION}".` }),
  kind: Type.Literal(DECISION_TESTS_KIND, { description: `Always "${DECISION_TESTS_KIND}".` }),
  model: Type.Union([
    Type.String({ minLength: 1, description: 'The model file, relative to this file.' }),
    TenantModelSchema,
  ], { description: 'The model under test: a path relative to this file, or the model inline.' }),
  now: Type.Optional(Type.String({ format: 'date-time', description: 'The clock of every case (RFC 3339): policies\' time windows and the context\'s `time` read it. Against a server, `time` is sent in the context; windows are judged by the server\'s clock.' })),
  gate: Type.Optional(Type.Unsafe<(typeof GATE_MODES)[number]>({ type: 'string', enum: [...GATE_MODES], description: 'The reachability gate the cases assume (SERVICE_RESOURCE_SCOPE_GATE): offline runs use it; a server decides with its own setting, which must be this one. `off` when absent.' })),
  checks: Type.Optional(Type.Array(CheckCase, { maxItems: MAX_BATCH, description: 'Decisions.' })),
  effectivePermissions: Type.Optional(Type.Array(PermissionsCase, { maxItems: MAX_BATCH, description: 'Effective-permission sets.' })),
  lookups: Type.Optional(Type.Array(LookupCase, { maxItems: MAX_BATCH, description: 'Listings: LookupResources and LookupSubjects, paged to the end.' })),
}, { ...strict, title: 'Decision tests', description: 'Decisions a tenant model must give: run offline, against a control plane or against a sidecar by `authz test`.' });

export type CheckCase = Static<typeof CheckCase>;
export type PermissionsCase = Static<typeof PermissionsCase>;
export type LookupCase = Static<typeof LookupCase>;
export type ResourcesLookup = Static<typeof ResourcesLookup>;
export type SubjectsLookup = Static<typeof SubjectsLookup>;
export type DecisionTests = Static<typeof DecisionTestsSchema>;

/** The JSON Schema (draft 2020-12) of the decision-test file. */
export function decisionTestsJsonSchema(): Record<string, unknown> {
  const body = JSON.parse(JSON.stringify(DecisionTestsSchema)) as Record<string, unknown>;
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: SCHEMA_ID, ...body };
}
