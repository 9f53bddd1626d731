import { describe, expect, it } from 'vitest';
import { create, createFileRegistry, setExtension, type DescService } from '@bufbuild/protobuf';
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type, FileDescriptorProtoSchema, MethodOptionsSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { ConsistencySchema, EvaluateRequestSchema, EvaluateResponseSchema } from '../../../gen/authz/v1/decision_service_pb.js';
import { ListResourcesRequestSchema } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { file_google_api_annotations, http } from '../../../gen/google/api/annotations_pb.js';
import { HttpRuleSchema } from '../../../gen/google/api/http_pb.js';
import { checkMessage, int64ToNumbers, setAtPath, valueFromString } from './json.js';
import { resolveFieldPath, RouteConfigError, RouteTable } from './routes.js';

/** A service of its own whose one RPC (a message with `id` and `name`) is bound to `verb path`. */
function serviceBoundTo(verb: 'get' | 'post', path: string): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, { pattern: { case: verb, value: path }, body: verb === 'post' ? '*' : '' }));
  const text = (name: string, number: number) => ({ name, number, jsonName: name, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL });
  const file = create(FileDescriptorProtoSchema, {
    name: 'test/things.proto', package: 'test.v1', syntax: 'proto3', dependency: ['google/api/annotations.proto'],
    messageType: [{ name: 'Thing', field: [text('id', 1), text('name', 2)] }],
    service: [{ name: 'Things', method: [{ name: 'GetThing', inputType: '.test.v1.Thing', outputType: '.test.v1.Thing', options }] }],
  });
  const registry = createFileRegistry(file, (name) => (name === 'google/api/annotations.proto' ? file_google_api_annotations : undefined));
  return registry.getService('test.v1.Things')!;
}

const field = (schema: { fields: readonly { name: string }[] }, name: string) => {
  const f = schema.fields.find((x) => x.name === name);
  if (!f) throw new Error(name);
  return f as Parameters<typeof valueFromString>[0];
};

describe('value conversion by field type', () => {
  it('converts strings to int32, bool and string', () => {
    expect(valueFromString(field(ListResourcesRequestSchema, 'limit'), '25', 'limit')).toBe(25);
    expect(valueFromString(field(EvaluateRequestSchema, 'explain'), 'true', 'explain')).toBe(true);
    expect(valueFromString(field(EvaluateRequestSchema, 'explain'), 'false', 'explain')).toBe(false);
    expect(valueFromString(field(EvaluateRequestSchema, 'scope_id'), '42', 'scopeId')).toBe('42');
    expect(() => valueFromString(field(EvaluateRequestSchema, 'explain'), 'yes', 'explain')).toThrow(/true or false/);
    expect(() => valueFromString(field(ListResourcesRequestSchema, 'limit'), '1.5', 'limit')).toThrow(/integer/);
    expect(() => valueFromString(field(ListResourcesRequestSchema, 'limit'), '99999999999', 'limit')).toThrow(/between/);
    expect(() => valueFromString(field(EvaluateRequestSchema, 'actor'), 'x', 'actor')).toThrow(ConnectError);
  });

  it('takes a timestamp from a query parameter only in RFC 3339, naming the parameter', () => {
    const atTime = field(ConsistencySchema, 'at_time');
    expect(valueFromString(atTime, '2025-03-04T10:11:12Z', 'consistency.atTime')).toBe('2025-03-04T10:11:12Z');
    for (const bad of ['2024-13-45T00:00:00Z', 'yesterday', '']) {
      const err = ConnectError.from((() => { try { valueFromString(atTime, bad, 'consistency.atTime'); } catch (e) { return e; } })());
      expect([err.code, err.rawMessage], bad).toEqual([Code.InvalidArgument, expect.stringMatching(/^consistency\.atTime: must be an RFC 3339 timestamp/)]);
    }
  });

  it('sets nested fields by dotted path, refusing contradictions', () => {
    const path = resolveFieldPath(EvaluateRequestSchema, 'actor.subject_id')!;
    expect(path.map((f) => f.jsonName)).toEqual(['actor', 'subjectId']);
    expect(resolveFieldPath(EvaluateRequestSchema, 'actor.subjectId')).toEqual(path);
    const obj = {};
    setAtPath(obj, path, 'subject_1', 'actor.subjectId');
    expect(obj).toEqual({ actor: { subjectId: 'subject_1' } });
    expect(() => setAtPath(obj, path, 'subject_2', 'actor.subjectId')).toThrow(/differs/);
  });
});

describe('checkMessage', () => {
  it('accepts valid proto JSON and rejects unknown fields and wrong types with a JSON path', () => {
    expect(() => checkMessage(EvaluateRequestSchema, { actor: { subjectId: 'a' }, consistency: { minRevision: '12' }, explain: true })).not.toThrow();
    expect(() => checkMessage(EvaluateRequestSchema, { consistency: { minRevision: 12 } })).not.toThrow();
    const err = (() => {
      try {
        checkMessage(EvaluateRequestSchema, { consistency: { minRev: 1 } });
      } catch (e) {
        return e as ConnectError;
      }
    })();
    expect(err?.rawMessage).toMatch(/consistency\.minRev: unknown field/);
    expect(() => checkMessage(EvaluateRequestSchema, { consistency: { minRevision: 'soon' } })).toThrow(/integer/);
    expect(() => checkMessage(EvaluateRequestSchema, 'x')).toThrow(/must be a JSON object/);
  });
});

describe('int64ToNumbers', () => {
  it('turns int64 strings into numbers, recursively, leaving Struct content alone', () => {
    const json = int64ToNumbers(EvaluateResponseSchema, {
      allowed: true,
      revision: '17',
      trace: [{ step: 'x', details: { revision: '3' } }],
    });
    expect(json).toEqual({ allowed: true, revision: 17, trace: [{ step: 'x', details: { revision: '3' } }] });
  });
});

describe('RouteTable', () => {
  it('matches literal segments before variables, and reports allowed methods', () => {
    const t = new RouteTable([ResourceService, ScopeService]);
    const m = t.match('GET', '/resources/resource_1');
    expect(m.kind === 'match' && m.route.method.name).toBe('GetResource');
    expect(m.kind === 'match' && m.params.get('id')).toBe('resource_1');
    expect(t.match('PUT', '/resources/r')).toEqual({ kind: 'method_not_allowed', allowed: ['DELETE', 'GET', 'PATCH'] });
    expect(t.match('GET', '/resources/')).toEqual({ kind: 'not_found' });
    expect(t.match('GET', '/resources/a/b/c')).toEqual({ kind: 'not_found' });
  });

  it('refuses duplicate services only once, and collisions loudly', () => {
    expect(() => new RouteTable([ResourceService, ResourceService])).not.toThrow();
    expect(() => new RouteTable([ResourceService, serviceBoundTo('get', '/things/{id}')])).not.toThrow();
    // The same verb and path shape, whatever the variable is called.
    for (const path of ['/resources/{id}', '/resources/{name}']) {
      expect(() => new RouteTable([ResourceService, serviceBoundTo('get', path)])).toThrow(
        new RouteConfigError(`GET ${path} of test.v1.Things.GetThing collides with /resources/{id} of authz.v1.ResourceService.GetResource`),
      );
    }
    expect(() => new RouteTable([serviceBoundTo('post', '/resources'), ResourceService])).toThrow(RouteConfigError);
  });
});
