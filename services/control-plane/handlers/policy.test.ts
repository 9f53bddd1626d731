import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, type Client } from '@connectrpc/connect';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { JsonObject } from '@bufbuild/protobuf';
import { PolicyService } from '../../../gen/authz/v1/policy_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ResourceTypeService } from '../../../gen/authz/v1/resource_type_service_pb.js';
import { describeEachBackend, createTestApp, seedTenant, type TestApp, expectCode } from '../../../test/harness.js';

/** `{"!": {"!": … true}}`, `depth` operations deep. */
function nested(depth: number): JsonObject {
  let rule: JsonObject = { '!': true };
  for (let i = 1; i < depth; i++) rule = { '!': rule };
  return rule;
}

describeEachBackend('PolicyService on %s', (backend) => {
  let app: TestApp;
  let c: Client<typeof PolicyService>;
  beforeAll(async () => {
    app = await createTestApp(backend);
    await seedTenant(app.db, 'tenant_a');
    await seedTenant(app.db, 'tenant_b');
    const types = app.client(ResourceTypeService);
    await types.createResourceType({ id: 'resource_type_doc', name: 'Doc', key: 'doc', scopeId: 'scope_tenant_a' });
    await types.createResourceType({ id: 'resource_type_b', name: 'B', key: 'b', scopeId: 'scope_tenant_b' });
    const res = app.client(ResourceService);
    await res.createResource({ id: 'resource_a', resourceTypeId: 'resource_type_doc', ownerScopeId: 'scope_tenant_a', externalResourceId: 'a' });
    await res.createResource({ id: 'resource_b', resourceTypeId: 'resource_type_b', ownerScopeId: 'scope_tenant_b', externalResourceId: 'b' });
    c = app.client(PolicyService);
  });
  afterAll(() => app?.close());

  const policy = (extra: Record<string, unknown> = {}) => ({
    scopeId: 'scope_tenant_a', target: { kind: 'resource', resourceId: 'resource_a' }, actions: ['read'], effect: 'allow', ...extra,
  });

  describe('collections', () => {
    it('accepts match or matchDefinition and answers matchDefinition', async () => {
      const def = { fields: { 'attributes.size': { gt: 10 } }, tags: { env: ['prod', 'stage'] }, any: [{ patterns: { displayName: '^Q[0-9]' } }] };
      const a = await c.createResourceCollection({ id: 'collection_big', scopeId: 'scope_tenant_a', resourceTypeId: 'resource_type_doc', name: 'Big', match: def });
      expect(a.resourceCollection).toMatchObject({ id: 'collection_big', tenantId: 'tenant_a', name: 'Big', description: '', matchDefinition: def });
      const b = await c.createResourceCollection({ scopeId: 'scope_tenant_a', resourceTypeId: 'resource_type_doc', name: 'All', description: 'everything', matchDefinition: {} });
      expect(b.resourceCollection).toMatchObject({ description: 'everything', matchDefinition: {} });
      expect((await c.getResourceCollection({ id: 'collection_big' })).resourceCollection?.matchDefinition).toEqual(def);
      expect((await c.listResourceCollections({ scopeId: 'scope_tenant_a' })).resourceCollections).toHaveLength(2);
      await expectCode(c.getResourceCollection({ id: 'collection_nope' }), Code.NotFound);
      await expectCode(c.listResourceCollections({}), Code.InvalidArgument, 'scopeId');
    });

    it('refuses both, neither and invalid match definitions (naming the path), writing nothing', async () => {
      const base = { scopeId: 'scope_tenant_a', resourceTypeId: 'resource_type_doc', name: 'X' };
      await expectCode(c.createResourceCollection({ ...base, id: 'collection_x', match: {}, matchDefinition: {} }), Code.InvalidArgument, 'not both');
      await expectCode(c.createResourceCollection({ ...base, id: 'collection_x' }), Code.InvalidArgument, 'match: is required');
      const err = await expectCode(c.batchCreateResourceCollections({ items: [
        { ...base, id: 'collection_x', match: {} },
        { ...base, id: 'collection_y', match: { fields: { size: { gtx: 1 } } } },
      ] }), Code.InvalidArgument, 'items[1].match.fields.size.gtx');
      expect(err.rawMessage).toContain('unknown operator');
      await expectCode(c.createResourceCollection({ ...base, matchDefinition: { patterns: { displayName: '(' } } }), Code.InvalidArgument, 'matchDefinition.patterns.displayName');
      await expectCode(c.createResourceCollection({ ...base, match: { colour: 'red' } }), Code.InvalidArgument, 'match.colour');
      await expectCode(c.createResourceCollection({ ...base, match: { condition: nested(33) } }), Code.InvalidArgument, 'match.condition');
      await expectCode(c.getResourceCollection({ id: 'collection_x' }), Code.NotFound);
    });

    it('refuses types of another tenant and missing scopes', async () => {
      await expectCode(c.createResourceCollection({ scopeId: 'scope_tenant_a', resourceTypeId: 'resource_type_b', name: 'X', match: {} }), Code.FailedPrecondition, 'resourceTypeId');
      await expectCode(c.createResourceCollection({ scopeId: 'scope_nope', resourceTypeId: 'resource_type_doc', name: 'X', match: {} }), Code.FailedPrecondition, 'scopeId');
      await expectCode(c.createResourceCollection({ scopeId: 'scope_tenant_a', resourceTypeId: '', name: 'X', match: {} }), Code.InvalidArgument, 'resourceTypeId: is required');
    });
  });

  describe('policies', () => {
    it('creates a resource policy with defaults; name and description are dropped', async () => {
      const res = await c.createResourcePolicy(policy({ id: 'policy_one', name: 'Readers', description: 'ignored' }));
      expect(res.resourcePolicy).toMatchObject({
        id: 'policy_one', tenantId: 'tenant_a', target: { kind: 'resource', resourceId: 'resource_a' }, actions: ['read'], effect: 'allow', priority: 0,
      });
      expect(res.resourcePolicy).not.toHaveProperty('name');
      expect(res.resourcePolicy?.target?.collectionId).toBeUndefined();
      const log = (await app.db.orm.em.fork().execute(`select data from change_log where entity_id = 'policy_one'`)) as { data: Record<string, unknown> }[];
      expect(log[0].data).not.toHaveProperty('name');
      expect(log[0].data).not.toHaveProperty('description');
      expect(log[0].data).toMatchObject({ target: { kind: 'resource', resourceId: 'resource_a' } });
    });

    it('targets collections, with conditions, priority and a validity window', async () => {
      const from = new Date('2030-01-01T00:00:00Z');
      const until = new Date('2030-02-01T00:00:00.250Z');
      const res = await c.createResourcePolicy(policy({
        id: 'policy_col', target: { kind: 'collection', collectionId: 'collection_big' }, actions: ['*'], effect: 'deny', priority: 7,
        subjectCondition: { '==': [{ var: 'subject.meta.team' }, 'red'] }, contextCondition: nested(32),
        validFrom: timestampFromDate(from), validUntil: timestampFromDate(until),
      }));
      expect(res.resourcePolicy).toMatchObject({ effect: 'deny', priority: 7, target: { kind: 'collection', collectionId: 'collection_big' } });
      const got = (await c.getResourcePolicy({ id: 'policy_col' })).resourcePolicy!;
      expect(got.subjectCondition).toEqual({ '==': [{ var: 'subject.meta.team' }, 'red'] });
      expect(Number(got.validUntil!.seconds) * 1000 + got.validUntil!.nanos / 1e6).toBe(until.getTime());
      expect((await c.listResourcePolicies({ scopeId: 'scope_tenant_a' })).resourcePolicies.map((p) => p.id)).toEqual(['policy_col', 'policy_one']);
    });

    it('validates target, actions, effect and window, naming fields', async () => {
      await expectCode(c.createResourcePolicy(policy({ target: undefined })), Code.InvalidArgument, 'target: is required');
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'scope', resourceId: 'resource_a' } })), Code.InvalidArgument, 'target.kind');
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'resource' } })), Code.InvalidArgument, 'target.resourceId: is required');
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'resource', resourceId: 'resource_a', collectionId: 'collection_big' } })), Code.InvalidArgument, 'target.collectionId');
      await expectCode(c.createResourcePolicy(policy({ actions: [] })), Code.InvalidArgument, 'actions');
      await expectCode(c.createResourcePolicy(policy({ actions: ['read', 'x'.repeat(257)] })), Code.InvalidArgument, 'actions[1]');
      await expectCode(c.createResourcePolicy(policy({ actions: ['read', ''] })), Code.InvalidArgument, 'actions[1]');
      await expectCode(c.createResourcePolicy(policy({ effect: 'maybe' })), Code.InvalidArgument, 'effect');
      await expectCode(c.createResourcePolicy(policy({ effect: '' })), Code.InvalidArgument, 'effect');
      const t = timestampFromDate(new Date('2030-01-01T00:00:00Z'));
      await expectCode(c.createResourcePolicy(policy({ validFrom: t, validUntil: t })), Code.InvalidArgument, 'validUntil');
      await expectCode(c.batchCreateResourcePolicies({ items: [policy(), policy({ scopeId: '' })] }), Code.InvalidArgument, 'items[1].scopeId: is required');
      await expectCode(c.batchCreateResourcePolicies({ items: Array.from({ length: 1001 }, () => policy()) }), Code.InvalidArgument, 'items');
    });

    it('refuses missing targets and targets of another tenant', async () => {
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'resource', resourceId: 'resource_nope' } })), Code.FailedPrecondition, 'target.resourceId');
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'collection', collectionId: 'collection_nope' } })), Code.FailedPrecondition, 'target.collectionId');
      await expectCode(c.createResourcePolicy(policy({ target: { kind: 'resource', resourceId: 'resource_b' } })), Code.FailedPrecondition, 'target.resourceId');
      await expectCode(c.createResourcePolicy(policy({ scopeId: 'scope_nope' })), Code.FailedPrecondition, 'scopeId');
    });

    it('refuses unsafe JSON Logic (depth 33, prototype access) and writes nothing', async () => {
      const before = (await c.listResourcePolicies({ scopeId: 'scope_tenant_a' })).resourcePolicies.length;
      await expectCode(c.createResourcePolicy(policy({ subjectCondition: nested(33) })), Code.InvalidArgument, 'subjectCondition');
      await expectCode(c.batchCreateResourcePolicies({ items: [
        policy({ id: 'policy_ok' }), policy({ contextCondition: { var: '__proto__.polluted' } }),
      ] }), Code.InvalidArgument, 'items[1].contextCondition');
      await expectCode(c.createResourcePolicy(policy({ subjectCondition: { var: 'subject.constructor.prototype' } })), Code.InvalidArgument, 'subjectCondition');
      const withProtoKey = JSON.parse('{"and": [{"__proto__": {"admin": true}, "x": 1}]}') as JsonObject;
      await expectCode(c.createResourcePolicy(policy({ subjectCondition: withProtoKey })), Code.InvalidArgument, 'subjectCondition');
      await expectCode(c.createResourcePolicy(policy({ subjectCondition: { method: ['subject', 'toString'] } })), Code.InvalidArgument, 'subjectCondition');
      expect((await c.listResourcePolicies({ scopeId: 'scope_tenant_a' })).resourcePolicies).toHaveLength(before);
      await expectCode(c.getResourcePolicy({ id: 'policy_ok' }), Code.NotFound);
    });

    it('deletes a policy; a missing one is not_found', async () => {
      await c.createResourcePolicy(policy({ id: 'policy_gone' }));
      await c.deleteResourcePolicy({ id: 'policy_gone' });
      await expectCode(c.getResourcePolicy({ id: 'policy_gone' }), Code.NotFound);
      await expectCode(c.deleteResourcePolicy({ id: 'policy_gone' }), Code.NotFound);
    });

    it('deleting a collection deletes the policies targeting it, through the change log', async () => {
      await c.deleteResourceCollection({ id: 'collection_big' });
      await expectCode(c.getResourceCollection({ id: 'collection_big' }), Code.NotFound);
      await expectCode(c.getResourcePolicy({ id: 'policy_col' }), Code.NotFound);
      expect((await c.getResourcePolicy({ id: 'policy_one' })).resourcePolicy?.id).toBe('policy_one');
      const log = (await app.db.orm.em.fork().execute(
        `select entity_id from change_log where op = 'delete' and entity_id in ('policy_col', 'collection_big')`,
      )) as { entity_id: string }[];
      expect(log.map((r) => r.entity_id).sort()).toEqual(['collection_big', 'policy_col']);
      await expectCode(c.deleteResourceCollection({ id: 'collection_big' }), Code.NotFound);
    });
  });
});
