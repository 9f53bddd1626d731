import { describe, expect, it } from 'vitest';
import { readModel } from './read-model.js';

describe('readModel', () => {
  it('reads YAML and JSON alike', () => {
    expect(readModel('apiVersion: authz/v1\nkind: TenantModel\nscopes: []\n', 'm.yaml')).toEqual({ ok: true, value: { apiVersion: 'authz/v1', kind: 'TenantModel', scopes: [] } });
    expect(readModel('{"apiVersion": "authz/v1", "kind": "TenantModel"}', 'm.json')).toEqual({ ok: true, value: { apiVersion: 'authz/v1', kind: 'TenantModel' } });
  });

  it('names the file, line and column of a syntax error', () => {
    const r = readModel('apiVersion: authz/v1\nscopes:\n  - path: /eng\n   type: team\n', 'acme.yaml');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems[0]).toMatchObject({ line: 4 });
    expect(r.problems[0].text).toMatch(/^acme\.yaml:4:\d+: /);
  });

  it('refuses a repeated key, as the server does, where the repeat is', () => {
    const r = readModel('kind: TenantModel\nkind: TenantModel\n', 'm.yaml');
    expect(r).toEqual({ ok: false, problems: [{ line: 2, column: 1, text: 'm.yaml:2:1: Map keys must be unique' }] });
  });

  it('refuses an empty text and a document that is not a mapping', () => {
    expect(readModel('  \n', 'm.yaml')).toMatchObject({ ok: false, problems: [{ text: 'The model is empty: paste one or choose a file.' }] });
    expect(readModel('- a\n- b\n', 'm.yaml')).toMatchObject({ ok: false, problems: [{ line: 1, column: 1, text: 'm.yaml:1:1: a model is a mapping (apiVersion, kind, then its sections), not a list' }] });
  });
});
