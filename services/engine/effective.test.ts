import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { effectivePermissions } from './effective.js';
import { ResourceNotFoundError, ScopeNotFoundError } from './errors.js';
import { TenantIndex } from './tenant-index/mod.js';
import type { TenantSnapshot } from './model.js';

const { tenant } = JSON.parse(readFileSync(new URL('./testdata/decisions.json', import.meta.url), 'utf8')) as { tenant: TenantSnapshot };
const index = TenantIndex.fromSnapshot(tenant);
const brief = (xs: ReturnType<typeof effectivePermissions>) => xs.map((e) => `${e.source} ${e.roleId} ${e.key}`);

describe('effectivePermissions', () => {
  it('lists role permissions with overrides applied, sorted', () => {
    expect(brief(effectivePermissions(index, { subjectId: 'subject_alice', scopeId: 'scope_env' }))).toEqual([
      'role role_reader doc:read:*',
      'role role_reader doc:write:*', // add override at scope_env
    ]);
    expect(brief(effectivePermissions(index, { subjectId: 'subject_alice', scopeId: 'scope_blocked' }))).toEqual([]);
    expect(brief(effectivePermissions(index, { subjectId: 'subject_tuner', scopeId: 'scope_env2' }))).toEqual(['role role_tuned doc:list:*']);
  });

  it('marks roles from tag bindings', () => {
    expect(brief(effectivePermissions(index, { subjectId: 'subject_tagged', scopeId: 'scope_env2' }))).toEqual(['tag_binding role_reader doc:read:*']);
  });

  it('binds ownership permissions to the resource, keeping only those whose pattern covers it', () => {
    expect(effectivePermissions(index, { subjectId: 'subject_owner', scopeId: 'scope_proj', resourceId: 'resource_doc4' })).toEqual([
      { key: 'doc:share:resource_doc4', resourceType: 'doc', action: 'share', resourcePattern: 'resource_doc4', source: 'ownership', roleId: 'role_owner' },
    ]);
    expect(effectivePermissions(index, { subjectId: 'subject_owner', scopeId: 'scope_proj' })).toEqual([]);
  });

  it('fails like evaluate on unknown ids', () => {
    expect(() => effectivePermissions(index, { subjectId: 'subject_alice', scopeId: 'scope_nope' })).toThrow(ScopeNotFoundError);
    expect(() => effectivePermissions(index, { subjectId: 'subject_alice', scopeId: 'scope_proj', resourceId: 'resource_nope' })).toThrow(ResourceNotFoundError);
    expect(effectivePermissions(index, { subjectId: 'subject_ghost', scopeId: 'scope_proj' })).toEqual([]);
  });
});
