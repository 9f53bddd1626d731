import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { normaliseModel, renderModel } from './normalize.js';
import { SCHEMA_FILES, schemaPath } from './schema-file.js';
import { SCHEMA_FILE, type TenantModel } from './format.js';
import { DECISION_TESTS_SCHEMA_FILE } from './tests-format.js';
import { checkModelText } from './validate.js';

const EXAMPLE = readFileSync(new URL('./testdata/acme.yaml', import.meta.url), 'utf8');
const example = () => checkModelText(EXAMPLE, 'acme.yaml').model!;

/** Every object's keys in reverse order, at any depth. */
function keysReversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(keysReversed);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, keysReversed(x)]));
  return v;
}

/** The model's sections and the lists inside its entries reversed (not JSON values: their order is meaning), keys reversed. */
function shuffled(m: TenantModel): TenantModel {
  const nested = ['permissions', 'roles', 'tags', 'actions'];
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    out[k] = Array.isArray(v)
      ? v.map((item: Record<string, unknown>) => Object.fromEntries(Object.entries(item).map(([f, x]) => [f, nested.includes(f) && Array.isArray(x) ? [...x].reverse() : x]))).reverse()
      : v;
  }
  return keysReversed(out) as TenantModel;
}

describe('the normal form', () => {
  it('is the same bytes whatever the order of lists and keys', () => {
    const m = example();
    const text = renderModel(m);
    expect(renderModel(shuffled(m))).toBe(text);
    expect(renderModel(shuffled(m), 'json')).toBe(renderModel(m, 'json'));
  });

  it('reads back as itself (YAML and JSON), and normalising it again changes nothing', () => {
    const m = normaliseModel(example());
    expect(parse(renderModel(m))).toEqual(m);
    expect(JSON.parse(renderModel(m, 'json'))).toEqual(m);
    expect(normaliseModel(m)).toEqual(m);
  });

  it('leaves out defaults and spells times one way', () => {
    const m = normaliseModel({
      apiVersion: 'authz/v1', kind: 'TenantModel',
      roles: [{ key: 'viewer', name: 'viewer', scope: '/', description: '', permissions: [] }],
      subjects: [{ externalId: 'a', type: 'user', metadata: {} }],
      policies: [{ name: 'p', scope: '/', target: { collection: 'c' }, actions: ['write', 'read', 'read'], effect: 'allow', priority: 0, validFrom: '2026-01-01T01:00:00+01:00' }],
      resourceHierarchy: [{ parent: 'd/1', child: 'd/2', cascade: 'none', relationshipType: '' }],
    });
    expect(m.roles).toEqual([{ key: 'viewer' }]);
    expect(m.subjects).toEqual([{ externalId: 'a' }]);
    expect(m.policies).toEqual([{ name: 'p', target: { collection: 'c' }, actions: ['read', 'write'], effect: 'allow', validFrom: '2026-01-01T00:00:00.000Z' }]);
    expect(m.resourceHierarchy).toEqual([{ parent: 'd/1', child: 'd/2' }]);
  });

  it('keeps the sections a model holds, empty ones too (they are managed), and no others', () => {
    const m = normaliseModel({ apiVersion: 'authz/v1', kind: 'TenantModel', subjects: [] });
    expect(Object.keys(m)).toEqual(['apiVersion', 'kind', 'subjects']);
    expect(renderModel(m)).toBe('apiVersion: authz/v1\nkind: TenantModel\nsubjects: []\n');
  });
});

describe('the JSON Schema files', () => {
  it('validate every example model and its decision tests, read on their own as an editor reads them', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const models = ajv.compile(JSON.parse(readFileSync(schemaPath(SCHEMA_FILE), 'utf8')) as object);
    const tests = ajv.compile(JSON.parse(readFileSync(schemaPath(DECISION_TESTS_SCHEMA_FILE), 'utf8')) as object);
    const root = new URL('../../examples/', import.meta.url);
    const examples = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory() && existsSync(new URL(`${d.name}/tests.yaml`, root)));
    expect(examples.length).toBeGreaterThanOrEqual(3);
    for (const d of examples) {
      expect(models(parse(readFileSync(new URL(`${d.name}/model.yaml`, root), 'utf8'))), `${d.name}: ${JSON.stringify(models.errors)}`).toBe(true);
      expect(tests(parse(readFileSync(new URL(`${d.name}/tests.yaml`, root), 'utf8'))), `${d.name}: ${JSON.stringify(tests.errors)}`).toBe(true);
    }
    expect(tests({ apiVersion: 'authz/v1', kind: 'DecisionTests', model: 'm.yaml', checks: [{ subject: 'a', scope: '/', action: 'r', expect: 'maybe' }] })).toBe(false);
  });

  it.each(SCHEMA_FILES.map((s) => [s.file, s.render] as const))('%s is what `npm run schema` makes from its format (regenerate and commit when this fails)', (file, render) => {
    expect(readFileSync(schemaPath(file), 'utf8')).toBe(render());
  });

  it('validates the example, and refuses what the format refuses (read on its own, as an editor reads it)', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(schemaPath(SCHEMA_FILE), 'utf8')) as object);
    expect(validate(parse(EXAMPLE)), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ apiVersion: 'authz/v1', kind: 'TenantModel', scopes: [{ path: 'eng', type: 'team' }] })).toBe(false);
    expect(validate({ apiVersion: 'authz/v1', kind: 'TenantModel', policies: [{ name: 'p', target: { resource: 'd/1', collection: 'c' }, actions: ['*'], effect: 'allow' }] })).toBe(false);
  });
});
