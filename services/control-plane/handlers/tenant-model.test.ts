/**
 * TenantModelService over a real database: plan writes nothing, apply is one transaction and
 * one revision, an edit is an update, prune, optimistic concurrency, who may call it, refused
 * files, and export in normal form.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Code, ConnectError } from '@connectrpc/connect';
import { parse } from 'yaml';
import { TenancyService } from '../../../gen/authz/v1/tenancy_service_pb.js';
import { TenantModelService } from '../../../gen/authz/v1/tenant_model_service_pb.js';
import { DecisionService } from '../../../gen/authz/v1/decision_service_pb.js';
import { ResourceService } from '../../../gen/authz/v1/resource_service_pb.js';
import { ApiKeyService } from '../../../gen/authz/v1/api_key_service_pb.js';
import { ErrorInfoSchema } from '../../../gen/authz/v1/error_reason_pb.js';
import { normaliseModel, renderModel, sectionsOf } from '../../model/normalize.js';
import type { TenantModel } from '../../model/format.js';
import { PLATFORM, createTestApp, describeEachBackend, expectCode, revisionGaps, storeDigest, userOf, type TestApp } from '../../../test/harness.js';
import type { Principal } from '../auth/principal.js';
import { TenantIndex, evaluate } from '../../engine/mod.js';
import { stateToModel, type TenantState } from '../../model/from-state.js';
import { modelSnapshot } from '../../model/snapshot.js';
import { checkModelText } from '../../model/validate.js';
import { inReadSnapshot, readTenantModelRows } from '../../store/tenant-model.js';

const EXAMPLE = readFileSync(new URL('../../model/testdata/acme.yaml', import.meta.url), 'utf8');

describeEachBackend('TenantModelService on %s', (backend) => {
  let app: TestApp;
  let names = 0;
  beforeAll(async () => {
    app = await createTestApp(backend);
  });
  afterAll(() => app?.close());

  const models = (principal: Principal = PLATFORM) => app.client(TenantModelService, principal);
  const newTenant = async () => (await app.client(TenancyService).createTenant({ name: `t${names++}` })).tenant!;
  const revisionOf = async (tenantId: string) => Number((await app.client(TenancyService).getTenant({ id: tenantId })).tenant!.revision);
  const changeLog = async (tenantId: string, revision: number) =>
    (await app.db.orm.em.fork().execute('select op, kind, entity_id as id from change_log where tenant_id = ? and revision = ? order by seq', [tenantId, revision])) as { op: string; kind: string; id: string }[];
  const resourceId = async (tenantId: string, type: string, externalId: string) => {
    const [r] = (await app.db.orm.em.fork().execute(
      'select r.id from resources r join resource_types t on t.id = r.resource_type_id where r.tenant_id = ? and t.key = ? and r.external_resource_id = ?', [tenantId, type, externalId])) as { id: string }[];
    return r?.id;
  };

  it('plans without writing anything, at the tenant\'s revision', async () => {
    const t = await newTenant();
    const before = await storeDigest(app.db);
    const plan = await models().planTenantModel({ tenantId: t.id, document: EXAMPLE });
    expect(await storeDigest(app.db)).toEqual(before);
    expect(plan.revision).toBe(1n);
    expect(plan.changes.every((c) => c.action === 'create')).toBe(true);
    expect(plan.changes.find((c) => c.kind === 'role' && c.key === 'role editor at /')).toMatchObject({ action: 'create', path: 'roles[1]' });
    expect(plan.changes.length).toBe(37);
  });

  it('applies the whole file in one transaction as one revision, a change-log row for each entity; applying it again changes nothing', async () => {
    const t = await newTenant();
    const plan = await models().planTenantModel({ tenantId: t.id, document: EXAMPLE });
    const applied = await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE, expectedRevision: plan.revision });
    expect(applied.revision).toBe(2n);
    expect(await revisionOf(t.id)).toBe(2);
    const logged = await changeLog(t.id, 2);
    // Every entity of the plan but the scope type (global: no tenant's change log) is one upsert;
    // the locked-after-create tag group is none here (the example locks nothing).
    expect(logged.length).toBe(plan.changes.length - 1);
    expect(logged.every((l) => l.op === 'upsert')).toBe(true);
    expect(await revisionGaps(app.db)).toEqual([]);

    const before = await storeDigest(app.db);
    expect((await models().planTenantModel({ tenantId: t.id, document: EXAMPLE, prune: true })).changes).toEqual([]);
    const again = await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE, prune: true });
    expect(again.revision).toBe(2n);
    expect(again.changes).toEqual([]);
    expect(await storeDigest(app.db)).toEqual(before);
  });

  it('turns an edit into an update of the same entity, and a change the API cannot update into a replace that keeps the id', async () => {
    const t = await newTenant();
    await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const roadmap = await resourceId(t.id, 'document', 'roadmap');
    const renamed = EXAMPLE.replace('displayName: Roadmap', 'displayName: Roadmap 2026');
    const applied = await models().applyTenantModel({ tenantId: t.id, document: renamed });
    expect(applied.changes.map((c) => `${c.action} ${c.key} ${c.fields.join(',')}`)).toEqual(['update resource document/roadmap displayName']);
    expect(await changeLog(t.id, Number(applied.revision))).toEqual([{ op: 'upsert', kind: 'resource', id: roadmap }]);
    expect((await app.client(ResourceService).getResource({ id: roadmap })).resource?.displayName).toBe('Roadmap 2026');

    const moved = renamed.replace('externalId: roadmap\n    scope: /eng', 'externalId: roadmap\n    scope: /eng/platform');
    const replaced = await models().applyTenantModel({ tenantId: t.id, document: moved });
    expect(replaced.changes.map((c) => `${c.action} ${c.key}`)).toEqual([
      'replace resource document/roadmap',
      'replace parent of resource document/roadmap',
      'replace ownership of document/roadmap by alice as owner at /',
      'replace tag classification/confidential on resource document/roadmap',
    ]);
    expect(replaced.changes[0].reason).toContain('scope cannot change in place');
    expect(await resourceId(t.id, 'document', 'roadmap')).toBe(roadmap);
    const log = await changeLog(t.id, Number(replaced.revision));
    expect(log.filter((l) => l.op === 'delete').map((l) => l.kind).sort()).toEqual(['ownership_grant', 'resource', 'resource_edge', 'tag_assignment']);
    expect(log.filter((l) => l.op === 'upsert').map((l) => l.kind).sort()).toEqual(['ownership_grant', 'resource', 'resource_edge', 'tag_assignment']);
    expect((await app.client(ResourceService).getResource({ id: roadmap })).resource?.ownerScopeId).not.toBe('');
    expect((await models().planTenantModel({ tenantId: t.id, document: moved, prune: true })).changes).toEqual([]);
  });

  it('keeps what the file leaves out unless prune is on', async () => {
    const t = await newTenant();
    await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const withoutBob = EXAMPLE.replace('  - externalId: bob\n    metadata: { employment: contractor }\n', '')
      .replace('  - subject: bob\n    scope: /eng/platform\n    roles: [viewer]\n', '');
    const kept = await models().applyTenantModel({ tenantId: t.id, document: withoutBob });
    expect(kept.changes.map((c) => `${c.action} ${c.key}`)).toEqual([
      'keep subject bob', 'keep membership of bob in /eng/platform', 'keep assignment of role viewer at / to bob in /eng/platform',
    ]);
    expect(kept.revision).toBe(2n);
    const pruned = await models().applyTenantModel({ tenantId: t.id, document: withoutBob, prune: true });
    expect(pruned.changes.map((c) => `${c.action} ${c.key}`)).toEqual([
      'delete subject bob', 'delete membership of bob in /eng/platform', 'delete assignment of role viewer at / to bob in /eng/platform',
    ]);
    expect(pruned.revision).toBe(3n);
    expect((await changeLog(t.id, 3)).map((l) => `${l.op} ${l.kind}`)).toEqual(['delete role_assignment', 'delete membership', 'delete subject']);
  });

  it('refuses an apply with `aborted` when the tenant moved since the plan, and writes nothing', async () => {
    const t = await newTenant();
    const plan = await models().planTenantModel({ tenantId: t.id, document: EXAMPLE });
    await models().applyTenantModel({ tenantId: t.id, document: 'apiVersion: authz/v1\nkind: TenantModel\nsubjects: [{ externalId: zed }]\n' });
    const before = await storeDigest(app.db);
    const err = await expectCode(models().applyTenantModel({ tenantId: t.id, document: EXAMPLE, expectedRevision: plan.revision }), Code.Aborted, 'not at the expected revision 1');
    expect(err.findDetails(ErrorInfoSchema)[0]?.field).toBe('expectedRevision');
    expect(await storeDigest(app.db)).toEqual(before);
    const replanned = await models().planTenantModel({ tenantId: t.id, document: EXAMPLE });
    expect((await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE, expectedRevision: replanned.revision })).revision).toBe(3n);
  });

  it('serves the tenant\'s own user keys and platform keys; another tenant\'s key, or a key bound to an environment, is refused', async () => {
    const t = await newTenant();
    const other = await newTenant();
    const mine = models(userOf(t.id));
    const doc = 'apiVersion: authz/v1\nkind: TenantModel\nsubjects: [{ externalId: ann }]\n';
    expect((await mine.applyTenantModel({ tenantId: t.id, document: doc })).revision).toBe(2n);
    expect((await mine.exportTenantModel({ tenantId: t.id, sections: ['subjects'] })).document).toContain('ann');
    const before = await storeDigest(app.db);
    for (const call of [
      () => models(userOf(other.id)).applyTenantModel({ tenantId: t.id, document: doc }),
      () => models(userOf(other.id)).planTenantModel({ tenantId: t.id, document: doc }),
      () => models(userOf(other.id)).exportTenantModel({ tenantId: t.id }),
      () => models({ ...userOf(t.id), environment: { id: 'environment_x', scopeId: 'scope_x' } }).applyTenantModel({ tenantId: t.id, document: doc }),
    ]) await expectCode(call(), Code.PermissionDenied);
    expect(await storeDigest(app.db)).toEqual(before);
  });

  it('creates missing scope types for a platform key only: a user key is refused, naming the field', async () => {
    const t = await newTenant();
    const doc = `apiVersion: authz/v1\nkind: TenantModel\nscopeTypes: [{ name: guild-${backend} }]\nscopes: [{ path: /g, type: guild-${backend} }]\n`;
    const before = await storeDigest(app.db);
    const err = await expectCode(models(userOf(t.id)).applyTenantModel({ tenantId: t.id, document: doc }), Code.PermissionDenied, 'only a platform key creates scope types');
    expect(err.findDetails(ErrorInfoSchema)[0]?.field).toBe('scopeTypes[0].name');
    expect(await storeDigest(app.db)).toEqual(before);
    await models().applyTenantModel({ tenantId: t.id, document: doc });
    // Once it exists, the tenant's user key uses it.
    const more = doc.replace('scopes: [{ path: /g', 'scopes: [{ path: /h, type: guild-' + backend + ' }, { path: /g');
    expect((await models(userOf(t.id)).applyTenantModel({ tenantId: t.id, document: more })).changes.map((c) => `${c.action} ${c.key}`)).toEqual(['create scope /h']);
  });

  it('refuses an invalid file with invalid_argument naming its path and line, and writes nothing', async () => {
    const t = await newTenant();
    const before = await storeDigest(app.db);
    const broken = EXAMPLE.replace('    roles: [editor]\n', '    roles: [edtior]\n');
    const err = await expectCode(models().applyTenantModel({ tenantId: t.id, document: broken, fileName: 'acme.yaml' }), Code.InvalidArgument);
    expect(err.rawMessage).toContain('acme.yaml:90:13: memberships[0].roles[0]: no role "edtior" is defined at /eng or above it');
    expect(err.findDetails(ErrorInfoSchema)[0]?.field).toBe('memberships[0].roles[0]');
    await expectCode(models().planTenantModel({ tenantId: t.id, document: 'apiVersion: authz/v1\nkind: TenantModel\nscopes: {' }), Code.InvalidArgument, 'model.yaml:3:');
    expect(await storeDigest(app.db)).toEqual(before);
    // References to the tenant's own entities are checked against it: a scope it does not have.
    await expectCode(models().planTenantModel({ tenantId: t.id, document: 'apiVersion: authz/v1\nkind: TenantModel\nroles: [{ key: r, scope: /nowhere }]\n' }),
      Code.InvalidArgument, 'model.yaml:3:26: roles[0].scope: scope /nowhere does not exist');
    await expectCode(models().planTenantModel({ tenantId: 'tenant_missing', document: EXAMPLE }), Code.NotFound);
  });

  it('exports the tenant in normal form: the same bytes every time, the applied file back, and nothing to plan', async () => {
    const t = await newTenant();
    await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const first = await models().exportTenantModel({ tenantId: t.id });
    const second = await models().exportTenantModel({ tenantId: t.id });
    expect(second.document).toBe(first.document);
    expect(first.revision).toBe(2n);
    const { $schema: _, ...file } = parse(EXAMPLE) as TenantModel;
    // Every section, those the file leaves out empty; with the file's sections, the file back.
    expect(first.document).toBe(renderModel(normaliseModel({ ...file, tagBindings: [], scopeLinks: [] })));
    expect((await models().exportTenantModel({ tenantId: t.id, sections: sectionsOf(file) })).document).toBe(renderModel(normaliseModel(file)));
    expect((await models().planTenantModel({ tenantId: t.id, document: first.document, prune: true })).changes).toEqual([]);
    const json = await models().exportTenantModel({ tenantId: t.id, format: 'json', sections: ['subjects', 'roles'] });
    expect(Object.keys(JSON.parse(json.document))).toEqual(['apiVersion', 'kind', 'roles', 'subjects']);
    await expectCode(models().exportTenantModel({ tenantId: t.id, sections: ['people'] }), Code.InvalidArgument, 'sections[0]');
    await expectCode(models().exportTenantModel({ tenantId: t.id, format: 'xml' }), Code.InvalidArgument, 'format');
  });

  it('is what decisions answer from once applied', async () => {
    const t = await newTenant();
    const applied = await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const scopes = (await app.db.orm.em.fork().execute("select id, name from scopes where tenant_id = ? and name = 'eng'", [t.id])) as { id: string }[];
    const subject = (await app.db.orm.em.fork().execute("select id, external_id as e from subjects where tenant_id = ?", [t.id])) as { id: string; e: string }[];
    const alice = subject.find((s) => s.e === 'alice')!.id;
    const bob = subject.find((s) => s.e === 'bob')!.id;
    const decide = (subjectId: string, action: string) => app.client(DecisionService).evaluate({
      actor: { subjectId }, scopeId: scopes[0].id, action, resource: { resourceType: 'document', externalResourceId: 'roadmap' },
      consistency: { minRevision: applied.revision },
    });
    expect((await decide(alice, 'write')).allowed).toBe(true);
    // bob is a member below /eng only; the confidential policy denies contractors anyway.
    expect((await decide(bob, 'read')).allowed).toBe(false);
  });

  it('decides as the engine does on an index built from the file offline (the same decisions, names mapped to ids)', async () => {
    const t = await newTenant();
    const applied = await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const serverIds = stateToModel((await inReadSnapshot(app.db, (tx) => readTenantModelRows(tx, t.id))) as unknown as TenantState).ids;
    const offline = modelSnapshot(checkModelText(EXAMPLE, 'acme.yaml').entities!);
    const index = TenantIndex.fromSnapshot(offline.snapshot);
    const scopeKey = (path: string) => `scope ${JSON.stringify([path])}`;
    const subjectKey = (externalId: string) => `subject ${JSON.stringify([externalId])}`;
    serverIds.set(scopeKey('/'), t.scopeId);
    let compared = 0;
    for (const subject of ['alice', 'bob']) {
      for (const scope of ['/', '/eng', '/eng/platform', '/sales']) {
        for (const action of ['read', 'write', 'delete']) {
          for (const resource of [undefined, { resourceType: 'document', externalResourceId: 'roadmap' }, { resourceType: 'folder', externalResourceId: 'designs' }]) {
            const here = evaluate(index, { actor: { subjectId: offline.ids.get(subjectKey(subject))! }, scopeId: offline.ids.get(scopeKey(scope))!, action, resource }, { now: new Date(), gate: 'off' });
            const there = await app.client(DecisionService).evaluate({
              actor: { subjectId: serverIds.get(subjectKey(subject))! }, scopeId: serverIds.get(scopeKey(scope))!, action, resource, consistency: { minRevision: applied.revision },
            });
            expect({ allowed: there.allowed, reason: there.reason }, `${subject} ${action} ${JSON.stringify(resource)} at ${scope}`).toEqual({ allowed: here.allowed, reason: here.reason });
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(72);
  });

  it('names an API key\'s subject by the key\'s id in memberships, never lists, creates or prunes it', async () => {
    const t = await newTenant();
    const key = (await app.client(ApiKeyService).createApiKey({ tenantId: t.id, name: 'ci', kind: 'service' })).apiKey!;
    const doc = `apiVersion: authz/v1\nkind: TenantModel\nroles: [{ key: reader }]\nsubjects: []\nmemberships: [{ subject: ${key.id}, roles: [reader] }]\n`;
    const applied = await models().applyTenantModel({ tenantId: t.id, document: doc, prune: true });
    expect(applied.changes.map((c) => `${c.action} ${c.key}`)).toEqual([
      'create role reader at /', `create membership of ${key.id} in /`, `create assignment of role reader at / to ${key.id} in /`,
    ]);
    const exported = await models().exportTenantModel({ tenantId: t.id, sections: ['subjects', 'memberships'] });
    expect(exported.document).toBe(`apiVersion: authz/v1\nkind: TenantModel\nsubjects: []\nmemberships:\n  - subject: ${key.id}\n    roles:\n      - reader\n`);
    await expectCode(models().applyTenantModel({ tenantId: t.id, document: `${doc}`.replace('subjects: []', `subjects: [{ externalId: ${key.id}, type: service }]`) }),
      Code.FailedPrecondition, `subjects[0].externalId: subject ${key.id} is an API key's subject`);
  });

  it('answers a refused plan with every problem, each at its line', async () => {
    const t = await newTenant();
    await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE });
    const err = await models().applyTenantModel({ tenantId: t.id, document: EXAMPLE.replace('path: /sales\n    type: team', 'path: /sales\n    type: project') }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toBe('the plan cannot be applied:\nmodel.yaml:19:11: scopes[2].type: scope /sales: type cannot change (the API neither updates nor deletes scopes)');
  });
});
