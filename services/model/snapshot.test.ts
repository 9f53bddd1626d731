import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TenantIndex, evaluate } from '../engine/mod.js';
import { modelSnapshot, planModelTexts } from './mod.js';
import { checkModelText } from './validate.js';

const EXAMPLE = readFileSync(new URL('./testdata/acme.yaml', import.meta.url), 'utf8');

describe('a tenant index straight from a model file', () => {
  const built = modelSnapshot(checkModelText(EXAMPLE, 'acme.yaml').entities!);
  const index = TenantIndex.fromSnapshot(built.snapshot);
  const id = (kind: string, ...identity: string[]) => built.ids.get(`${kind} ${JSON.stringify(identity)}`)!;
  const decide = (subject: string, scope: string, action: string, resource?: string) => evaluate(index, {
    actor: { subjectId: id('subject', subject) }, scopeId: id('scope', scope), action,
    ...(resource ? { resource: { resourceType: resource.split('/')[0], externalResourceId: resource.split('/')[1] } } : {}),
  }, { now: new Date('2026-06-01T00:00:00Z'), gate: 'off' });

  it('answers the file\'s decisions with the engine, names mapped to ids', () => {
    expect(decide('alice', '/eng', 'write', 'document/roadmap')).toMatchObject({ allowed: true });
    // The policy on confidential documents denies contractors, whatever their roles.
    expect(decide('bob', '/eng/platform', 'read', 'document/roadmap')).toMatchObject({ allowed: false, reason: 'policy_deny' });
    // The owner role through the ownership grant: delete, which alice's editor role lacks.
    expect(decide('alice', '/eng', 'delete', 'document/roadmap')).toMatchObject({ allowed: true, reason: 'ownership' });
    // The block override at /sales stops the root's viewer role there.
    expect(decide('alice', '/sales', 'read')).toMatchObject({ allowed: false });
  });
});

describe('planning one model text against another (a tenant\'s export)', () => {
  it('resolves the file\'s references to sections it leaves out against the export, as the server does', () => {
    const current = EXAMPLE;
    const plan = planModelTexts('apiVersion: authz/v1\nkind: TenantModel\nmemberships:\n  - { subject: alice, scope: /eng, roles: [viewer] }\n', current, { prune: true });
    expect(plan.errors).toEqual([]);
    expect(plan.plan!.changes.map((c) => `${c.action} ${c.label}`)).toEqual([
      'delete membership of bob in /eng/platform',
      'delete assignment of role editor at / to alice in /eng',
      'create assignment of role viewer at / to alice in /eng',
      'delete assignment of role viewer at / to bob in /eng/platform',
    ]);
    const unknown = planModelTexts('apiVersion: authz/v1\nkind: TenantModel\nmemberships: [{ subject: zoe, roles: [viewer] }]\n', current);
    expect(unknown.errors.map((e) => `${e.file}:${e.line} ${e.path}: ${e.message}`)).toEqual(['model.yaml:3 memberships[0].subject: subject "zoe" does not exist']);
  });
});
