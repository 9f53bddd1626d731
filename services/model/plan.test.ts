import { describe, expect, it } from 'vitest';
import { sectionsOf } from './normalize.js';
import { planModel, type ModelPlan } from './plan.js';
import { checkModelText } from './validate.js';

const HEAD = 'apiVersion: authz/v1\nkind: TenantModel\n';

/** The plan of `desired` against a tenant whose state is the model `current` (both checked first). */
function plan(desired: string, current: string, prune = false): ModelPlan {
  const c = checkModelText(HEAD + current, 'current.yaml');
  expect(c.errors).toEqual([]);
  const d = checkModelText(HEAD + desired, 'desired.yaml');
  expect(d.errors).toEqual([]);
  return planModel(d.entities!, c.entities!, { prune, managed: new Set(sectionsOf(d.model!)) });
}

const lines = (p: ModelPlan) => p.changes.map((c) => `${c.action} ${c.label}${c.fields.length ? ` [${c.fields.join(', ')}]` : ''}${c.reason ? ` (${c.reason})` : ''}`);

const TENANT = `scopes: [{ path: /eng, type: project }, { path: /eng/web, type: project }]
resourceTypes: [{ key: doc }]
permissions: [{ key: doc:read:* }, { key: doc:write:* }]
roles:
  - { key: viewer, permissions: [doc:read:*] }
  - { key: editor, scope: /eng, permissions: [doc:read:*, doc:write:*] }
subjects: [{ externalId: alice }, { externalId: bob }]
memberships: [{ subject: alice, scope: /eng, roles: [editor] }]
resources: [{ type: doc, externalId: d1, scope: /eng, displayName: One }]
ownershipGrants: [{ subject: bob, resource: doc/d1, role: editor }]
`;

describe('plan', () => {
  it('plans nothing for the same model', () => {
    expect(plan(TENANT, TENANT, true).changes).toEqual([]);
  });

  it('creates what is new, listing kinds in dependency order', () => {
    expect(lines(plan('roles: [{ key: viewer }]\nsubjects: [{ externalId: carol }]', 'roles: []\nsubjects: []'))).toEqual([
      'create role viewer at /',
      'create subject carol',
    ]);
  });

  it('updates in place what the API updates, and replaces (with its dependents) what it cannot', () => {
    const edited = TENANT.replace('displayName: One', 'displayName: Uno');
    expect(lines(plan(edited, TENANT))).toEqual(['update resource doc/d1 [displayName]']);
    const moved = TENANT.replace('{ type: doc, externalId: d1, scope: /eng,', '{ type: doc, externalId: d1, scope: /eng/web,');
    expect(lines(plan(moved, TENANT))).toEqual([
      'replace resource doc/d1 [scope] (scope cannot change in place (the API has no update for it): deleted and created again, with the same id, in the same transaction)',
      'replace ownership of doc/d1 by bob as editor at /eng (created again with resource doc/d1, which is replaced)',
    ]);
  });

  it('keeps what the file leaves out unless prune is on; never deletes what the API cannot', () => {
    const fewer = TENANT.replace('subjects: [{ externalId: alice }, { externalId: bob }]', 'subjects: [{ externalId: alice }]')
      .replace('ownershipGrants: [{ subject: bob, resource: doc/d1, role: editor }]', 'ownershipGrants: []')
      ;
    expect(lines(plan(fewer, TENANT))).toEqual([
      'keep subject bob (not in the file; kept (prune is off))',
      'keep ownership of doc/d1 by bob as editor at /eng (not in the file; kept (prune is off))',
    ]);
    expect(lines(plan(fewer, TENANT, true))).toEqual([
      'delete subject bob (not in the file (prune))',
      'delete ownership of doc/d1 by bob as editor at /eng (not in the file (prune))',
    ]);
    expect(lines(plan('scopes: []', 'scopes: [{ path: /eng, type: project }]', true))).toEqual(['keep scope /eng (not in the file; kept (the API cannot delete it))']);
  });

  it('leaves the sections the file does not hold alone, but deletes with an entity what cannot outlive it (as the API does)', () => {
    // The file manages subjects only: memberships and grants are the server's, left as they are…
    expect(lines(plan('subjects: [{ externalId: alice }, { externalId: bob }]', TENANT, true))).toEqual([]);
    // …until what they refer to goes.
    expect(lines(plan('subjects: [{ externalId: alice }]', TENANT, true))).toEqual([
      'delete subject bob (not in the file (prune))',
      'delete ownership of doc/d1 by bob as editor at /eng (deleted with subject bob)',
    ]);
  });

  it('refuses to delete what the API refuses to delete while it is used', () => {
    const p = plan('resourceTypes: []', TENANT, true);
    expect(lines(p)).toEqual(['delete resource type doc (not in the file (prune))']);
    expect(p.problems.map((x) => x.message)).toEqual(['resource doc/d1 refers to resource type doc, which the plan deletes: remove or change it in the file too']);
    const q = plan('permissions: [{ key: doc:read:* }]', `${TENANT}scopeOverrides: [{ scope: /eng, role: viewer, mode: remove, permissions: [doc:write:*] }]\n`, true);
    expect(q.problems.map((x) => x.message)).toEqual(['remove override of role viewer at / at /eng refers to permission doc:write:* at /, which the plan deletes: remove or change it in the file too']);
  });

  it('refuses changes the API can make neither in place nor by delete and create', () => {
    const p = plan('scopes: [{ path: /eng, type: workspace }, { path: /eng/web, type: project }]', TENANT);
    expect(p.problems).toEqual([{ path: ['scopes', 0, 'type'], message: 'scope /eng: type cannot change (the API neither updates nor deletes scopes)' }]);
  });

  it('adds no tag or assignment to a group locked now, unless the file unlocks it', () => {
    const current = 'tagGroups: [{ key: env, locked: true, tags: [{ identifier: prod }] }]\ntagAssignments: []';
    const desired = 'tagGroups: [{ key: env, locked: true, tags: [{ identifier: prod }, { identifier: dev }] }]\ntagAssignments: [{ tag: { group: env, identifier: prod }, target: { scope: / } }]';
    expect(plan(desired, current).problems.map((x) => x.message)).toEqual([
      'tag group env is locked: it takes no new tags (unlock it first: locked: false)',
      'tag group env is locked: it takes no new assignments (unlock it first: locked: false)',
    ]);
    const unlocked = plan(desired.replace('locked: true', 'locked: false'), current);
    expect(unlocked.problems).toEqual([]);
    expect(lines(unlocked)).toEqual(['update tag group env [locked]', 'create tag env/dev', 'create tag env/prod on scope /']);
  });

  it('never changes or deletes a scope type: they are shared by every tenant', () => {
    expect(lines(plan('scopeTypes: [{ name: team, description: other }]', 'scopeTypes: [{ name: team }, { name: squad }]', true))).toEqual([]);
    expect(lines(plan('scopeTypes: [{ name: guild }]', 'scopeTypes: []'))).toEqual(['create scope type guild']);
  });
});
