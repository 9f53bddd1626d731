import { readFileSync } from 'node:fs';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend, startTestControlPlane, TEST_BOOTSTRAP_KEY } from '../../test/harness.js';
import { RouteTable } from '../transport/gateway/routes.js';
import { OPENAPI_FILE, renderOpenApi } from './openapi.js';
import { SERVICES } from './services.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const committed = readFileSync(OPENAPI_FILE, 'utf8');
const doc = JSON.parse(committed) as Json;
const VERBS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every operation of the document: verb, path template, operation. */
const operations = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
  VERBS.filter((v) => item[v]).map((verb) => ({ verb: verb.toUpperCase(), path, op: item[verb] as Json })),
);

/** A concrete path for a template: each `{variable}` becomes a value no literal segment uses. */
const concrete = (template: string) => template.replace(/\{[^}]+\}/g, 'v_1');

/** The document's templates that a concrete path matches (as the gateway matches: by segment). */
function docMatches(path: string): { path: string; verbs: string[] }[] {
  const parts = path.split('/');
  return Object.entries(doc.paths as Json)
    .filter(([t]) => {
      const ts = t.split('/');
      return ts.length === parts.length && ts.every((s, i) => s.startsWith('{') || s === parts[i]);
    })
    .map(([t, item]) => ({ path: t, verbs: VERBS.filter((v) => item[v]).map((v) => v.toUpperCase()) }));
}

describe('the OpenAPI document', () => {
  it('is what `npm run openapi` makes from the protos (regenerate and commit when this fails)', () => {
    expect(renderOpenApi()).toBe(committed);
  });

  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser), and every schema compiles as JSON Schema 2020-12', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(JSON.parse(committed)); // a fresh copy: the parser dereferences in place
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    // The OpenAPI meta-schema does not look inside 3.1 schemas; Ajv's strict mode does.
    const ajv = schemaValidator();
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(SCHEMA_ID + name), name).not.toThrow();
    }
  });

  it('describes every route of the gateway once, with its path parameters', () => {
    const table = new RouteTable(SERVICES);
    const documented = operations.map((o) => `${o.verb} ${o.path.replace(/\{[^}]+\}/g, '{}')}`).sort();
    const served = table.routes.map((r) => `${r.verb} /${r.segments.map((s) => (s.kind === 'literal' ? s.value : '{}')).join('/')}`).sort();
    expect(documented).toEqual(served);
    expect(new Set(operations.map((o) => o.op.operationId)).size).toBe(operations.length);
  });

  it('gives proto JSON shapes: bare arrays for body "items" and lists, int64 as numbers, the error body', () => {
    const s = doc.components.schemas;
    expect(doc.paths['/roles/batch'].post.requestBody.content['application/json'].schema).toMatchObject({ type: 'array', items: { $ref: '#/components/schemas/CreateRoleRequest' }, maxItems: 1000 });
    expect(doc.paths['/roles'].get.responses['200'].content['application/json'].schema).toEqual({ type: 'array', items: { $ref: '#/components/schemas/Role' } });
    expect(doc.paths['/roles'].get.responses['200'].headers).toEqual({ 'x-next-cursor': { $ref: '#/components/headers/x-next-cursor' } });
    expect(doc.paths['/roles'].post.responses['200'].headers).toEqual({ 'x-revision': { $ref: '#/components/headers/x-revision' } });
    expect(doc.paths['/roles'].get.parameters.map((p: Json) => p.name)).toEqual(['scopeId', 'limit', 'cursor']);
    expect(s.Tenant.properties.revision).toMatchObject({ type: 'integer', format: 'int64' });
    expect(s.EvaluateResponse.properties.revision).toMatchObject({ type: 'integer', format: 'int64' });
    expect(s.Consistency.properties.minRevision).toMatchObject({ type: ['integer', 'string'], format: 'int64' });
    expect(s.ResourcePolicy.properties.priority).toMatchObject({ type: 'integer' });
    expect(s.TagGroup.properties.maxAppliedPerTarget).toMatchObject({ type: 'integer' });
    expect(s.Role.properties.scopeId).toMatchObject({ type: 'string' });
    // Responses carry every implicit field (required); requests need none, so PolicyTarget has two forms.
    expect(s.PolicyTarget.required).toEqual(['kind']);
    expect(s.PolicyTargetInput.required).toBeUndefined();
    expect(s.CreateResourcePolicyRequest.properties.target).toEqual({ $ref: '#/components/schemas/PolicyTargetInput' });
    expect(s.Role.properties.createdAt).toMatchObject({ type: 'string', format: 'date-time' });
    expect(s.ErrorInfoDetail.properties.reason.enum).toContain('ERROR_REASON_INVALID_FIELD');
    expect(doc.paths['/evaluate'].post['x-access-tier']).toBe('decision');
    expect(doc.paths['/tenants'].post['x-access-tier']).toBe('platform');
    expect(doc.components.securitySchemes).toMatchObject({ apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' }, bearer: { type: 'http', scheme: 'bearer' } });
  });
});

/** Where Ajv finds the component schemas: `#/components/schemas/X` becomes SCHEMA_ID + X. */
const SCHEMA_ID = 'https://authz.invalid/schemas/';
const withAbsoluteRefs = (schema: Json): Json => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${SCHEMA_ID}`)) as Json;

/** Ajv (JSON Schema 2020-12, strict) holding every component schema of the document. */
function schemaValidator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat('uint64', true);
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) ajv.addSchema({ ...withAbsoluteRefs(schema), $id: SCHEMA_ID + name });
  return ajv;
}

describeEachBackend('the OpenAPI document against a running control plane (%s)', (backend) => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  const ajv = schemaValidator();
  const validators = new Map<unknown, ValidateFunction>();
  const check = (schema: Json, value: unknown, what: string) => {
    let v = validators.get(schema);
    if (!v) {
      v = ajv.compile(withAbsoluteRefs(schema));
      validators.set(schema, v);
    }
    expect(v(value) ? [] : v.errors, `${what}: ${JSON.stringify(value).slice(0, 300)}`).toEqual([]);
  };

  beforeAll(async () => {
    cp = await startTestControlPlane(backend);
  });
  afterAll(async () => {
    await cp?.close();
  });

  it('serves the committed document at GET /openapi.json without credentials', async () => {
    const res = await fetch(`${cp.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(doc);
  });

  it('every documented operation is routed (401 without credentials, not a routing 404/405), and each path allows exactly the documented verbs', async () => {
    const problems: string[] = [];
    for (const { verb, path, op } of operations) {
      // A body of the documented shape: the gateway reads the body before the handler checks credentials.
      const schema = op.requestBody?.content['application/json'].schema as Json | undefined;
      const body = schema === undefined ? undefined : schema.type === 'array' ? '[]' : '{}';
      const res = await fetch(cp.url + concrete(path), { method: verb, headers: body ? { 'content-type': 'application/json' } : {}, body });
      const answer = (await res.json()) as Json;
      if (res.status !== 401 || answer.code !== 'unauthenticated') problems.push(`${verb} ${path}: ${res.status} ${JSON.stringify(answer)}`);
    }
    // A verb no route uses: the gateway answers 405 with the verbs it serves on that path.
    for (const path of Object.keys(doc.paths)) {
      const res = await fetch(cp.url + concrete(path), { method: 'PUT' });
      await res.arrayBuffer();
      const expected = [...new Set(docMatches(concrete(path)).flatMap((m) => m.verbs))].sort().join(', ');
      if (res.status !== 405 || res.headers.get('allow') !== expected) problems.push(`PUT ${path}: ${res.status} allow=${res.headers.get('allow')}, documented ${expected}`);
    }
    expect(problems).toEqual([]);
    // The check can tell: a path the document lacks is a routing 404.
    const missing = await fetch(`${cp.url}/no-such-things`);
    expect(missing.status).toBe(404);
  });

  it('real requests and responses of the README flow match the documented schemas and headers', async () => {
    const call = async (verb: string, template: string, params: Record<string, string> = {}, body?: unknown, query = '') => {
      const op = doc.paths[template]?.[verb.toLowerCase()] as Json | undefined;
      if (!op) throw new Error(`${verb} ${template} is not documented`);
      const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(params[name]));
      if (body !== undefined) check(op.requestBody.content['application/json'].schema, body, `${verb} ${template} request`);
      const res = await fetch(cp.url + path + query, {
        method: verb,
        headers: { 'x-api-key': TEST_BOOTSTRAP_KEY, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as Json;
      const documented = op.responses[String(res.status)] ?? op.responses.default;
      const response = documented.$ref ? doc.components.responses[documented.$ref.split('/').pop()] : documented;
      check(response.content['application/json'].schema, json, `${verb} ${template} ${res.status}`);
      // Every header the server sends of ours is documented, with its format.
      for (const h of ['x-revision', 'x-next-cursor']) {
        const value = res.headers.get(h);
        if (value === null) continue;
        expect(response.headers?.[h], `${verb} ${template} sends ${h}`).toBeDefined();
        check(doc.components.headers[h].schema, value, `${h} of ${verb} ${template}`);
      }
      return { status: res.status, json, headers: res.headers };
    };

    const tenant = await call('POST', '/tenants', {}, { name: 'acme' });
    expect(tenant.status).toBe(200);
    expect(tenant.headers.get('x-revision')).toBe(String(tenant.json.revision));
    const T = tenant.json.id as string;
    const type = await call('POST', '/scope-types', {}, { name: 'team' });
    const S = (await call('POST', '/scopes', {}, { tenantId: T, name: 'eng', typeId: type.json.id })).json.id as string;
    const alice = (await call('POST', '/subjects', {}, { tenantId: T, type: 'user', externalId: 'alice', metadata: { team: 'eng' } })).json.id as string;
    const roles = await call('POST', '/roles/batch', {}, [{ scopeId: S, key: 'editor', name: 'Editor' }, { scopeId: S, key: 'viewer', name: 'Viewer' }]);
    expect(roles.json).toHaveLength(2);
    const role = roles.json[0].id as string;
    const perm = (await call('POST', '/permissions', {}, { scopeId: S, action: 'edit', resourceType: 'doc', resourcePattern: '*' })).json.id as string;
    await call('POST', '/role-permissions', {}, { roleId: role, permissionId: perm });
    const M = (await call('POST', '/memberships', {}, { subjectId: alice, scopeId: S })).json.id as string;
    const ra = (await call('POST', '/role-assignments', {}, { membershipId: M, roleId: role })).json.id as string;
    const rt = (await call('POST', '/resource-types', {}, { name: 'Document', key: 'doc', scopeId: S })).json.id as string;
    const R = (await call('POST', '/resources', {}, { resourceTypeId: rt, ownerScopeId: S, externalResourceId: 'readme', attributes: { size: 3 } })).json.id as string;
    await call('POST', '/resource-policies', {}, { scopeId: S, target: { kind: 'resource', resourceId: R }, actions: ['edit'], effect: 'deny', priority: 5, contextCondition: { '==': [{ var: 'ip' }, '10.0.0.1'] } });

    const decision = await call('POST', '/evaluate', {}, { actor: { subjectId: alice }, scopeId: S, action: 'edit', resource: { resourceId: R }, explain: true, consistency: { minRevision: String(tenant.json.revision) } });
    expect(decision.json).toMatchObject({ allowed: true, reason: 'role' });
    expect(typeof decision.json.revision).toBe('number');
    const batch = await call('POST', '/evaluate/batch', {}, { requests: [{ actor: { subjectId: alice }, scopeId: S, action: 'edit' }, { actor: { subjectId: 'subject_nobody' }, scopeId: S, action: 'edit' }] });
    expect(batch.json.results.map((r: Json) => r.allowed)).toEqual([true, false]);
    await call('GET', '/effective-permissions', {}, undefined, `?subjectId=${alice}&scopeId=${S}&resourceId=${R}`);
    await call('GET', '/tenants/{id}', { id: T });
    const page = await call('GET', '/roles', {}, undefined, `?scopeId=${S}&limit=1`);
    expect(page.json).toHaveLength(1);
    expect(page.headers.get('x-next-cursor')).toBeTruthy();
    await call('GET', '/resource-policies', {}, undefined, `?scopeId=${S}`);
    await call('GET', '/subjects/{id}', { id: alice });
    expect((await call('DELETE', '/role-assignments/{id}', { id: ra })).json).toEqual({});

    // Errors: the documented status and body, ErrorInfo included.
    const unknownField = await call('POST', '/roles', {}, { scopeId: S, key: 'x', name: 'X', colour: 'red' });
    expect(unknownField.status).toBe(400);
    const notFound = await call('GET', '/roles/{id}', { id: 'role_nope' });
    expect(notFound.status).toBe(404);
    expect(notFound.json.details[0]).toMatchObject({ type: 'authz.v1.ErrorInfo', reason: 'ERROR_REASON_NOT_FOUND' });
    const clash = await call('POST', '/roles', {}, { scopeId: S, key: 'editor', name: 'Again' });
    expect(clash.status).toBe(409);
  });
});
