import { describe, expect, it } from 'vitest';
import { ConnectError } from '@connectrpc/connect';
import { EvaluateRequestSchema, EvaluateResponseSchema } from '../../../gen/authz/v1/decision_service_pb.js';
import { ListResourcesRequestSchema } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ScopeService } from '../../../gen/authz/v1/scope_service_pb.js';
import { checkMessage, int64ToNumbers, setAtPath, valueFromString } from './json.js';
import { resolveFieldPath, RouteTable } from './routes.js';

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
  });
});
