/**
 * One decision check as the playground's form holds it, as its URL writes it, and as the
 * Evaluate request sends it. The query string is the check's address: other views link to the
 * playground with these names, so they are fixed (`subjectId` or `externalId`, `scopeId`,
 * `action`, `resourceId` or `resourceType` + `externalResourceId`, `context`, `atRevision`).
 */
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { EvaluateRequestSchema } from '../../../../gen/authz/v1/decision_service_pb.js';

export type SubjectBy = 'externalId' | 'subjectId';
export type ResourceBy = 'none' | 'external' | 'id';

/** The form's fields as typed (strings), before validation. */
export interface CheckForm {
  subjectBy: SubjectBy;
  subject: string;
  scopeId: string;
  action: string;
  resourceBy: ResourceBy;
  resourceType: string;
  externalResourceId: string;
  resourceId: string;
  context: string;
  atRevision: string;
}

/** A check that passed validation: what Evaluate and the commands are built from. */
export interface Check {
  actor: { externalId: string } | { subjectId: string };
  scopeId: string;
  action: string;
  resource?: { resourceId: string } | { resourceType: string; externalResourceId: string };
  context?: JsonObject;
  atRevision?: number;
}

/** A field's problem; `field` is the form field's key, which is also its input's id suffix. */
export interface FieldError {
  field: keyof CheckForm;
  message: string;
}

export const FIELD_LABELS: Record<keyof CheckForm, string> = {
  subjectBy: 'Subject by',
  subject: 'Subject',
  scopeId: 'Scope id',
  action: 'Action',
  resourceBy: 'Resource',
  resourceType: 'Resource type',
  externalResourceId: 'External resource id',
  resourceId: 'Resource id',
  context: 'Context (JSON)',
  atRevision: 'At revision',
};

/** The names the query string uses: a link from elsewhere fills these. */
const QUERY_NAMES = ['subjectId', 'externalId', 'scopeId', 'action', 'resourceId', 'resourceType', 'externalResourceId', 'context', 'atRevision'] as const;

export function emptyForm(scopeId = ''): CheckForm {
  return { subjectBy: 'externalId', subject: '', scopeId, action: '', resourceBy: 'none', resourceType: '', externalResourceId: '', resourceId: '', context: '', atRevision: '' };
}

/** Whether the query string names a check at all (then the playground runs it on load). */
export function namesACheck(params: URLSearchParams): boolean {
  return QUERY_NAMES.some((name) => params.has(name));
}

/** The form a query string describes; `defaultScopeId` fills a missing scope. */
export function formFromSearch(params: URLSearchParams, defaultScopeId = ''): CheckForm {
  const get = (name: string) => params.get(name) ?? '';
  const bySubjectId = params.has('subjectId');
  const byResourceId = params.has('resourceId');
  const byExternal = !byResourceId && (params.has('resourceType') || params.has('externalResourceId'));
  return {
    subjectBy: bySubjectId ? 'subjectId' : 'externalId',
    subject: bySubjectId ? get('subjectId') : get('externalId'),
    scopeId: params.has('scopeId') ? get('scopeId') : defaultScopeId,
    action: get('action'),
    resourceBy: byResourceId ? 'id' : byExternal ? 'external' : 'none',
    resourceType: get('resourceType'),
    externalResourceId: get('externalResourceId'),
    resourceId: get('resourceId'),
    context: get('context'),
    atRevision: get('atRevision'),
  };
}

/** The query string of a form: only the fields its choices use, and only those with a value. */
export function searchFromForm(form: CheckForm): string {
  const out = new URLSearchParams();
  const put = (name: string, value: string) => {
    if (value.trim() !== '') out.set(name, value.trim());
  };
  put(form.subjectBy, form.subject);
  put('scopeId', form.scopeId);
  put('action', form.action);
  if (form.resourceBy === 'id') put('resourceId', form.resourceId);
  if (form.resourceBy === 'external') {
    put('resourceType', form.resourceType);
    put('externalResourceId', form.externalResourceId);
  }
  // The context is kept as typed (not trimmed inside), so that a link shows the same text.
  if (form.context.trim() !== '') out.set('context', form.context);
  put('atRevision', form.atRevision);
  return out.toString();
}

/** Fields of a check another view links with (already known to be valid there). */
export interface CheckLink {
  subjectId?: string;
  externalId?: string;
  scopeId: string;
  action: string;
  resourceId?: string;
  resourceType?: string;
  externalResourceId?: string;
}

/** The playground's address (relative to the tenant) for a check, as other views link to it. */
export function playgroundHref(link: CheckLink): string {
  const params = new URLSearchParams();
  for (const name of QUERY_NAMES) {
    const value = (link as unknown as Record<string, string | undefined>)[name];
    if (value !== undefined && value !== '') params.set(name, value);
  }
  return `/playground?${params.toString()}`;
}

/** The check a form describes, or each field's problem, found before any call. */
export function validateForm(form: CheckForm): { ok: true; check: Check } | { ok: false; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const need = (field: keyof CheckForm, value: string, what: string) => {
    if (value.trim() === '') errors.push({ field, message: `${what} is required` });
    return value.trim();
  };
  const subject = need('subject', form.subject, form.subjectBy === 'externalId' ? 'The subject\'s external id' : 'The subject\'s id');
  const scopeId = need('scopeId', form.scopeId, 'The scope id');
  const action = need('action', form.action, 'The action');
  let resource: Check['resource'];
  if (form.resourceBy === 'id') resource = { resourceId: need('resourceId', form.resourceId, 'The resource id') };
  if (form.resourceBy === 'external') {
    const resourceType = need('resourceType', form.resourceType, 'The resource type');
    const externalResourceId = need('externalResourceId', form.externalResourceId, 'The external resource id');
    if (resourceType.includes('/')) errors.push({ field: 'resourceType', message: 'The resource type is a type key, without "/"' });
    resource = { resourceType, externalResourceId };
  }
  const context = parseContext(form.context);
  if (typeof context === 'string') errors.push({ field: 'context', message: context });
  let atRevision: number | undefined;
  if (form.atRevision.trim() !== '') {
    const text = form.atRevision.trim();
    atRevision = /^[1-9]\d{0,15}$/.test(text) ? Number(text) : undefined;
    if (atRevision === undefined) errors.push({ field: 'atRevision', message: 'The revision must be a whole number, 1 or more' });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    check: {
      actor: form.subjectBy === 'externalId' ? { externalId: subject } : { subjectId: subject },
      scopeId,
      action,
      ...(resource ? { resource } : {}),
      ...(context !== undefined && typeof context !== 'string' ? { context } : {}),
      ...(atRevision !== undefined ? { atRevision } : {}),
    },
  };
}

/** The context as an object, undefined when left empty, or a sentence saying what is wrong. */
export function parseContext(text: string): JsonObject | undefined | string {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `The context is not JSON: ${(err as Error).message}`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'The context must be a JSON object, e.g. {"ip": "10.0.0.1"}';
  return parsed as JsonObject;
}

/** The Evaluate request of a check, with its trace asked for. */
export function evaluateRequest(check: Check): MessageInitShape<typeof EvaluateRequestSchema> {
  return {
    actor: check.actor,
    scopeId: check.scopeId,
    action: check.action,
    explain: true,
    ...(check.resource ? { resource: check.resource } : {}),
    ...(check.context ? { context: check.context } : {}),
    ...(check.atRevision !== undefined ? { consistency: { atRevision: BigInt(check.atRevision) } } : {}),
  };
}

/** The same request as the REST surface takes it (POST /evaluate), in the JSON the curl command sends. */
export function restBody(check: Check): JsonObject {
  return {
    actor: check.actor,
    scopeId: check.scopeId,
    action: check.action,
    ...(check.resource ? { resource: check.resource } : {}),
    ...(check.context ? { context: check.context } : {}),
    explain: true,
    ...(check.atRevision !== undefined ? { consistency: { atRevision: check.atRevision } } : {}),
  };
}
