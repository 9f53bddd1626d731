/**
 * `authz lookup resources|subjects` run through the package's bin (bin/authz.js) as a child
 * process against a real control plane: paged to the end, `--limit` saying when more may follow,
 * `--explain` giving each subject's grant, table, JSON and YAML output, usage errors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient } from '../../client/client.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../harness.js';
import { seedCliTenant, type CliTenant } from '../cli-tenant.js';
import { runAuthz } from '../authz-cli.js';

const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';

describe(`authz lookup (${BACKEND})`, () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let t: CliTenant;
  let env: Record<string, string>;
  let home: string;
  const authz = (args: string[], extra: Record<string, string> = {}) => runAuthz(args, { ...env, ...extra }, { home });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'authz-cli-lookup-'));
    cp = await startTestControlPlane(BACKEND);
    t = await seedCliTenant(createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY }));
    env = { AUTHZ_URL: cp.url, AUTHZ_API_KEY: TEST_BOOTSTRAP_KEY, AUTHZ_TENANT: t.tenantId };
  }, 60_000);
  afterAll(async () => {
    await cp?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const sorted = (xs: string[]) => [...xs].sort();

  it('lists the resources a subject may act on, by scope path and external id, paged to the end', async () => {
    const r = await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'bob', '--action', 'edit', '--page-size', '1', '--output', 'json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const out = JSON.parse(r.stdout);
    expect(out.resources.map((x: { id: string }) => x.id)).toEqual(sorted([t.folder, t.readme]));
    expect(out.resources[0]).toMatchObject({ resourceType: 'doc', ownerScopeId: t.scopeId });
    expect(out.truncated).toBe(false);
    // The deny policy on readme applies with its context.
    const ctx = await authz(['lookup', 'resources', '--scope-id', t.scopeId, '--subject-id', t.alice, '--action', 'edit', '--context', '{"ip":"10.0.0.1"}', '--output', 'yaml']);
    expect(ctx.code).toBe(0);
    expect(parseYaml(ctx.stdout).resources.map((x: { externalResourceId: string }) => x.externalResourceId)).toEqual(['folder']);
    // The table: a row per resource and a footer.
    const table = await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--type', 'doc']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+EXTERNAL ID\s+OWNER SCOPE$/);
    expect(lines.slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(sorted([t.folder, t.readme]));
    expect(lines[3]).toMatch(/^2 resources at revision \d+ \(1 page\)$/);
  });

  it('stops at --limit and says that more may follow', async () => {
    const table = await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--limit', '1', '--page-size', '1']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/1 resources at revision \d+ \(1 page\); stopped at --limit 1: more may follow/);
    const json = JSON.parse((await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--limit', '1', '--output', 'json'])).stdout);
    expect([json.resources.length, json.truncated]).toEqual([1, true]);
    // A limit the listing does not reach cuts nothing.
    const all = JSON.parse((await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--limit', '2', '--output', 'json'])).stdout);
    expect([all.resources.length, all.truncated]).toEqual([2, false]);
  });

  it('lists the subjects that may act on a resource, with --explain giving each grant', async () => {
    const r = await authz(['lookup', 'subjects', '--scope', '/eng', '--resource', 'doc/readme', '--action', 'edit', '--explain', '--page-size', '1', '--output', 'json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const out = JSON.parse(r.stdout);
    const byId = new Map(out.subjects.map((s: { id: string; grant: Record<string, unknown> }) => [s.id, s.grant]));
    expect(out.subjects.map((s: { id: string }) => s.id)).toEqual(sorted([t.alice, t.bob]));
    expect(byId.get(t.alice)).toMatchObject({ reason: 'role', roleId: t.roleId, sourceScopeId: t.scopeId, membershipId: expect.stringMatching(/^membership_/) });
    expect(byId.get(t.bob)).toMatchObject({ reason: 'inherited', roleId: t.roleId, ancestorResourceId: t.folder, ownershipGrantId: expect.stringMatching(/^ownership_grant_/) });
    expect((byId.get(t.bob) as { trace: unknown[] }).trace.length).toBeGreaterThan(3);
    const table = await authz(['lookup', 'subjects', '--scope', '/eng', '--resource-id', t.readme, '--action', 'edit', '--explain']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+TYPE\s+EXTERNAL ID\s+GRANT$/m);
    expect(table.stdout).toContain(`inherited · role ${t.roleId} · ownership grant `);
    expect(table.stdout).toContain(`on ancestor ${t.folder}`);
    expect(table.stdout).toMatch(new RegExp(`${t.alice}\\s+user\\s+alice\\s+role · role ${t.roleId} · membership membership_\\S+ at ${t.scopeId}`));
    // A policy allow: carol may read readme.
    const read = JSON.parse((await authz(['lookup', 'subjects', '--scope', '/eng', '--resource', 'doc/readme', '--action', 'read', '--explain', '--output', 'json'])).stdout);
    expect(read.subjects.map((s: { externalId: string; grant: { reason: string; policyId: string } }) => [s.externalId, s.grant.reason, s.grant.policyId])).toEqual([['carol', 'policy_allow', t.allowPolicy]]);
    // Without --explain no grant; an unknown resource id lists nobody.
    const plain = JSON.parse((await authz(['lookup', 'subjects', '--scope', '/eng', '--resource', 'doc/readme', '--action', 'edit', '--output', 'json'])).stdout);
    expect(plain.subjects.every((s: { grant?: unknown }) => s.grant === undefined)).toBe(true);
    const none = await authz(['lookup', 'subjects', '--scope', '/eng', '--resource-id', 'resource_nope', '--action', 'edit']);
    expect([none.code, none.stdout.trim()]).toEqual([0, expect.stringMatching(/^0 subjects at revision \d+ \(1 page\)$/)]);
  });

  it('refuses usage mistakes with exit 2 and service errors with exit 1', async () => {
    const noScope = await authz(['lookup', 'subjects', '--action', 'edit']);
    expect([noScope.code, noScope.stderr]).toEqual([2, expect.stringContaining('give the scope')]);
    const noSubject = await authz(['lookup', 'resources', '--scope', '/eng', '--action', 'edit']);
    expect([noSubject.code, noSubject.stderr]).toEqual([2, expect.stringContaining('give the subject')]);
    const bigPage = await authz(['lookup', 'resources', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--page-size', '5000']);
    expect(bigPage.code).toBe(2);
    const unknownScope = await authz(['lookup', 'subjects', '--scope-id', 'scope_nope', '--action', 'edit']);
    expect([unknownScope.code, unknownScope.stderr]).toEqual([1, expect.stringContaining('not_found')]);
  });
});
