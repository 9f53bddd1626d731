import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkModelText } from './validate.js';
import type { ModelError } from './parse.js';

const EXAMPLE = new URL('./testdata/acme.yaml', import.meta.url);
const HEAD = 'apiVersion: authz/v1\nkind: TenantModel\n';

/** The errors of a model text, as `line:column path: message`. */
function errorsOf(text: string, file = 'm.yaml'): string[] {
  return checkModelText(text, file).errors.map((e) => `${e.line}:${e.column} ${e.path}: ${e.message}`);
}

describe('checking a model file offline', () => {
  it('accepts the example tenant', () => {
    expect(checkModelText(readFileSync(EXAMPLE, 'utf8'), 'acme.yaml').errors).toEqual([]);
  });

  it('names the file, line, column and path of each schema error', () => {
    const text = `${HEAD}scopes:
  - path: eng
    type: team
roles:
  - key: viewer
    colour: blue
  - name: no key
subjects:
  - externalId: alice
    type: robot
`;
    const errors: ModelError[] = checkModelText(text, 'tenant.yaml').errors;
    expect(errors.every((e) => e.file === 'tenant.yaml')).toBe(true);
    expect(errors.map((e) => `${e.line}:${e.column} ${e.path}: ${e.message}`)).toEqual([
      '4:11 scopes[0].path: must be a scope path below the root: "/name" or "/name/name..."',
      '8:5 roles[0].colour: is not a field of this entry',
      '9:5 roles[1].key: is required',
      '12:11 subjects[0].type: must be one of user, service, agent',
    ]);
  });

  it('names the line of a YAML syntax error, and reads JSON the same way as YAML', () => {
    expect(errorsOf(`${HEAD}scopes: [\n  {path: /a, type: team\n`)[0]).toMatch(/^\d+:\d+ : /);
    expect(errorsOf('{"apiVersion": "authz/v1", "kind": "TenantModel", "scopes": [{"path": "/a", "type": 7}]}', 'm.json'))
      .toEqual(['1:85 scopes[0].type: must be string']);
    expect(errorsOf('{"apiVersion": "authz/v2", "kind": "TenantModel"}')).toEqual(['1:16 apiVersion: must be "authz/v1"']);
  });

  it('holds a policy\'s actions to the API\'s limit (64)', () => {
    const actions = Array.from({ length: 65 }, (_, i) => `a${i}`).join(', ');
    const text = `${HEAD}policies:\n  - { name: p, target: { collection: c }, effect: allow, actions: [${actions}] }\n`;
    expect(errorsOf(text)).toEqual(['4:67 policies[0].actions: holds more than 64 items (the API\'s limit)']);
    expect(errorsOf(text.replace(', a64]', ']'))).toEqual([]);
  });

  it('refuses a section longer than a batch (1,000 items)', () => {
    const subjects = Array.from({ length: 1001 }, (_, i) => `  - externalId: s${i}`).join('\n');
    expect(errorsOf(`${HEAD}subjects:\n${subjects}\n`)).toEqual(['4:3 subjects: holds more than 1000 items (the API\'s batch limit)']);
  });

  it('resolves a role or permission key from the referring scope upwards, never downwards', () => {
    const text = `${HEAD}scopes:
  - { path: /eng, type: project }
  - { path: /eng/web, type: project }
permissions:
  - key: doc:read:*
    scope: /eng/web
roles:
  - key: viewer
    scope: /eng
    permissions: [doc:read:*]
  - key: viewer
    scope: /eng/web
subjects:
  - externalId: alice
memberships:
  - subject: alice
    scope: /eng/web
    roles: [viewer]
  - subject: alice
    scope: /
    roles: [viewer]
`;
    expect(errorsOf(text)).toEqual([
      '12:19 roles[0].permissions[0]: no permission "doc:read:*" is defined at /eng or above it',
      '23:13 memberships[1].roles[0]: no role "viewer" is defined at / or above it',
    ]);
    const entities = checkModelText(text.replace('    permissions: [doc:read:*]\n', '').replace('    scope: /\n    roles: [viewer]\n', '    scope: /eng\n'), 'm.yaml').entities!;
    // /eng/web's own viewer wins over /eng's: the nearest definition.
    expect([...entities.get('roleAssignment')!.values()].map((e) => e.label)).toEqual(['assignment of role viewer at /eng/web to alice in /eng/web']);
  });

  it('reports references to entities the file does not define, when it manages their section', () => {
    const text = `${HEAD}scopeTypes: []
scopes:
  - { path: /eng/web, type: galaxy }
resourceTypes:
  - key: doc
resources:
  - { type: folder, externalId: f1, scope: /nowhere }
tagGroups: []
tagAssignments:
  - tag: { group: env, identifier: prod }
    target: { subject: carol }
`;
    expect(errorsOf(text)).toEqual([
      '5:13 scopes[0].path: the parent scope /eng does not exist',
      '5:29 scopes[0].type: scope type "galaxy" is neither built in nor listed in scopeTypes',
      '9:13 resources[0].type: resource type "folder" does not exist',
      '9:44 resources[0].scope: scope /nowhere does not exist',
      '12:19 tagAssignments[0].tag.group: tag group "env" does not exist',
    ]);
    // Sections the file leaves out are the server's: references to them are checked when planning.
    expect(errorsOf(`${HEAD}memberships:\n  - { subject: carol, scope: /x, roles: [admin] }\n`)).toEqual([]);
  });

  it('takes an API key\'s id as its subject offline (the server checks the key is the tenant\'s)', () => {
    const text = `${HEAD}roles: [{ key: r }]\nsubjects: []\nmemberships: [{ subject: apk_0199ab, roles: [r] }, { subject: apk-not-a-key, roles: [r] }]\n`;
    expect(errorsOf(text)).toEqual(['5:63 memberships[1].subject: subject "apk-not-a-key" does not exist']);
    expect(checkModelText(text, 'm.yaml', { keySubjects: ['apk_other'] }).errors.map((e) => e.message)).toEqual([
      'subject "apk_0199ab" does not exist', 'subject "apk-not-a-key" does not exist',
    ]);
  });

  it('refuses duplicate identities, naming where the first one is', () => {
    expect(errorsOf(`${HEAD}roles:\n  - key: a\n  - key: b\n  - key: a\n    scope: /\n`)).toEqual(['6:5 roles[2]: role a at / appears twice (first at roles[0])']);
  });

  it('checks the resource hierarchy: no self edge, no cycle, types the type hierarchy allows, at most 64 deep', () => {
    const resources = Array.from({ length: 66 }, (_, i) => `  - { type: doc, externalId: d${i} }`).join('\n');
    const chain = Array.from({ length: 65 }, (_, i) => `  - { parent: doc/d${i}, child: doc/d${i + 1} }`).join('\n');
    const base = `${HEAD}resourceTypes: [{ key: doc }, { key: img }]\nresourceTypeHierarchy: [{ parent: doc, child: doc }]\nresources:\n${resources}\n  - { type: img, externalId: i1 }\n`;
    expect(errorsOf(`${base}resourceHierarchy:\n  - { parent: doc/d0, child: doc/d0 }\n  - { parent: doc/d1, child: doc/d2 }\n  - { parent: doc/d2, child: doc/d1 }\n  - { parent: doc/d3, child: img/i1 }\n`)).toEqual([
      '74:30 resourceHierarchy[0].child: a resource cannot be its own parent',
      '75:15 resourceHierarchy[1].parent: making doc/d1 the parent of doc/d2 creates a cycle',
      '76:15 resourceHierarchy[2].parent: making doc/d2 the parent of doc/d1 creates a cycle',
      '77:30 resourceHierarchy[3].child: the resource type hierarchy does not allow type "doc" to contain type "img"',
    ]);
    // 65 edges: the 64th makes 65 levels (d0 ... d64), the 65th 66.
    expect(errorsOf(`${base}resourceHierarchy:\n${chain}\n`)).toEqual([
      '137:15 resourceHierarchy[63].parent: the hierarchy above doc/d64 is deeper than 64 levels',
      '138:15 resourceHierarchy[64].parent: the hierarchy above doc/d65 is deeper than 64 levels',
    ]);
    expect(errorsOf(`${base}resourceHierarchy:\n${chain.split('\n').slice(0, 63).join('\n')}\n`)).toEqual([]);
  });

  it('uses a resource type only at or below the scope that defines it', () => {
    const text = `${HEAD}scopes: [{ path: /eng, type: project }]\nresourceTypes: [{ key: doc, scope: /eng }]\nresources:\n  - { type: doc, externalId: a, scope: /eng }\n  - { type: doc, externalId: b }\n`;
    expect(errorsOf(text)).toEqual(['7:13 resources[1].type: resource type "doc" is defined at /eng, which is neither / nor above it']);
  });

  it('holds tag assignments to the group\'s per-target limit', () => {
    const text = `${HEAD}tagGroups:
  - key: env
    maxAppliedPerTarget: 1
    tags: [{ identifier: prod }, { identifier: dev }]
tagAssignments:
  - { tag: { group: env, identifier: prod }, target: { scope: / } }
  - { tag: { group: env, identifier: dev }, target: { scope: / } }
`;
    expect(errorsOf(text)).toEqual(['9:5 tagAssignments[1]: scope / carries more than 1 tag(s) of group "env"']);
    expect(errorsOf(text.replace('maxAppliedPerTarget: 1', 'maxAppliedPerTarget: 2'))).toEqual([]);
  });

  it('checks match definitions, regular expressions and JSON Logic with the API\'s validators', () => {
    let deep: unknown = true;
    for (let i = 0; i < 33; i++) deep = { '!': [deep] };
    const text = `${HEAD}resourceTypes: [{ key: doc }]
collections:
  - name: odd
    resourceType: doc
    match: { colour: red }
  - name: slow
    resourceType: doc
    match: { patterns: { displayName: "(a" } }
policies:
  - name: deep
    target: { collection: odd }
    actions: ["*"]
    effect: deny
    subjectCondition: ${JSON.stringify(deep)}
  - name: late
    target: { collection: odd }
    actions: [read]
    effect: allow
    validFrom: 2026-02-01T00:00:00Z
    validUntil: 2026-01-01T00:00:00Z
`;
    const errors = errorsOf(text);
    expect(errors[0]).toBe('7:22 collections[0].match.colour: unknown key');
    expect(errors[1]).toBe('10:39 collections[1].match.patterns.displayName: invalid regular expression: error parsing regexp: missing closing ): `(a`');
    // The path reaches into the rule: line 16, at the innermost operation.
    expect(errors[2]).toMatch(/^16:215 policies\[0\]\.subjectCondition(\.!\[0\]){32}: nested deeper than 32$/);
    expect(errors[3]).toBe('22:17 policies[1].validUntil: must be later than validFrom');
    expect(errors).toHaveLength(4);
    expect(errorsOf(text.replace('validFrom: 2026-02-01T00:00:00Z', 'validFrom: 0000-12-31T00:00:00Z'))[3])
      .toBe('21:16 policies[1].validFrom: must be a timestamp between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z');
  });

  it('refuses what the store cannot hold: a NUL character, JSON values over 16 KiB, names over 256 characters, scopes deeper than 64', () => {
    const big = 'x'.repeat(17 * 1024);
    const deepPath = Array.from({ length: 64 }, (_, i) => `/s${i}`).join('');
    const text = `${HEAD}subjects:
  - externalId: "al\\0ice"
  - externalId: bob
    metadata: { note: ${big} }
  - externalId: ${'c'.repeat(257)}
scopes:
  - { path: ${deepPath}, type: project }
`;
    const errors = errorsOf(text);
    expect(errors).toEqual(['7:17 subjects[2].externalId: is longer than 256 characters']);
    // The schema refuses first; the rest is checked once the schema holds.
    expect(errorsOf(text.replace(`${'c'.repeat(257)}`, 'carol'))).toEqual([
      '4:17 subjects[0].externalId: must not contain a NUL character (U+0000)',
      '6:15 subjects[1].metadata: is larger than 16384 bytes of JSON',
      '9:13 scopes[0].path: is 65 levels deep; at most 64 are allowed',
      '9:13 scopes[0].path: the parent scope /s0/s1/s2/s3/s4/s5/s6/s7/s8/s9/s10/s11/s12/s13/s14/s15/s16/s17/s18/s19/s20/s21/s22/s23/s24/s25/s26/s27/s28/s29/s30/s31/s32/s33/s34/s35/s36/s37/s38/s39/s40/s41/s42/s43/s44/s45/s46/s47/s48/s49/s50/s51/s52/s53/s54/s55/s56/s57/s58/s59/s60/s61/s62 does not exist',
    ]);
  });

  it('requires permissions for add and remove overrides, none for block', () => {
    const text = `${HEAD}permissions: [{ key: doc:read:* }]\nroles: [{ key: r }]\nscopeOverrides:\n  - { role: r, mode: block, permissions: [doc:read:*] }\n  - { role: r, mode: add }\n`;
    expect(errorsOf(text)).toEqual(['6:42 scopeOverrides[0].permissions: must be absent for mode block', '7:5 scopeOverrides[1].permissions: is required for mode add']);
  });
});

describe('documents built to cost', () => {
  it('refuses nesting deeper than a model can before the parser recurses into it', () => {
    const deep = `apiVersion: authz/v1\nkind: TenantModel\nx: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
    expect(errorsOf(deep)).toEqual(['3:132 : the document nests deeper than 128 levels, more than a model can']);
    expect(errorsOf(`apiVersion: authz/v1\nkind: TenantModel\nscopes:\n${'- '.repeat(130)}x\n`)).toEqual([
      '4:1 : the document nests deeper than a model can (more than 256 columns of indentation or 128 levels)',
    ]);
    // Brackets inside quoted or plain scalars, and comments, are not nesting.
    const fine = `apiVersion: authz/v1\nkind: TenantModel\nscopeTypes:\n  - name: "${'['.repeat(100)}"\n    description: a${'['.repeat(100)} # ${'{'.repeat(100)}\n`;
    expect(errorsOf(fine)).toEqual([]);
  });

  it('finds a repeated key among many, at its line', () => {
    const keys = Array.from({ length: 20_000 }, (_, i) => `      k${i}: 1\n`).join('');
    const text = `apiVersion: authz/v1\nkind: TenantModel\nsubjects:\n  - externalId: a\n    metadata:\n${keys}      k7: 2\n`;
    expect(errorsOf(text)).toEqual(['20006:7 : Map keys must be unique']);
  });

  it('places the first errors and counts the rest', () => {
    const text = `apiVersion: authz/v1\nkind: TenantModel\n${Array.from({ length: 500 }, (_, i) => `extra${i}: 1\n`).join('')}`;
    const errors = checkModelText(text, 'm.yaml').errors;
    expect(errors).toHaveLength(101);
    expect(errors[0]).toMatchObject({ line: 3, path: 'extra0', message: 'is not a field of a tenant model' });
    expect(errors[100]).toMatchObject({ line: 0, message: '… and 400 more errors' });
  });
});
