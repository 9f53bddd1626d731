/**
 * The example models (examples/<name>/model.yaml with tests.yaml), as CI runs them: each model
 * validates; its decision tests pass offline, against a real control plane (PostgreSQL when
 * DATABASE_URL is set, with the strict reachability gate the tests assume) on a scratch tenant,
 * and against a sidecar of a tenant the model is applied to, the three targets giving the same
 * answer to every case; and that tenant's export plans nothing. A broken expectation fails on
 * every target, with its diff.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient, type AuthzClient } from '../../client/client.js';
import { REPO_ROOT, runAuthz, type CliRun } from '../authz-cli.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../harness.js';
import { startProcess, type RunningProcess } from '../processes.js';

const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';
const EXAMPLES = readdirSync(join(REPO_ROOT, 'examples'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(REPO_ROOT, 'examples', d.name, 'tests.yaml')))
  .map((d) => d.name)
  .sort();

interface CaseJson { name: string; passed: boolean; allowed?: boolean; reason?: string; policy?: string; permissions?: string[]; listed?: string[]; diffs?: string[]; error?: string }
interface RunsJson { passed: number; failed: number; errors: number; runs: { target: string; file: string; cases: CaseJson[] }[] }

const json = (r: CliRun): RunsJson => {
  try {
    return JSON.parse(r.stdout) as RunsJson;
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
};

/** A case's answer, whatever the target. */
const answer = (c: CaseJson) => ({ name: c.name, passed: c.passed, allowed: c.allowed, reason: c.reason, policy: c.policy, permissions: c.permissions, listed: c.listed });

describe('the example models and their decision tests', () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let platform: AuthzClient;
  let home: string;
  const sidecars: RunningProcess[] = [];
  const env = () => ({ AUTHZ_API_KEY: TEST_BOOTSTRAP_KEY });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'authz-examples-'));
    cp = await startTestControlPlane(BACKEND, { SERVICE_RESOURCE_SCOPE_GATE: 'strict' });
    platform = createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(sidecars.map((s) => s.stop()));
    await cp?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('finds the three examples', () => {
    expect(EXAMPLES).toEqual(expect.arrayContaining(['documents', 'records', 'saas']));
  });

  for (const name of EXAMPLES) {
    const tests = `examples/${name}/tests.yaml`;

    it(`${name}: passes offline, on a scratch tenant of the control plane, and on a sidecar, with the same answers`, async () => {
      const model = `examples/${name}/model.yaml`;
      const valid = await runAuthz(['validate', '-f', model], env(), { home });
      expect([valid.code, valid.stdout], valid.stderr).toEqual([0, expect.stringContaining(`${model}: valid`)]);
      const offline = await runAuthz(['test', tests, '-o', 'json'], env(), { home });
      expect(offline.code, offline.stdout + offline.stderr).toBe(0);
      const cases = json(offline).runs[0].cases;
      expect(cases.length).toBeGreaterThan(10);
      // Every example lists too: resources and subjects, each paged to the end on the servers.
      expect(cases.filter((c) => c.listed !== undefined).length, name).toBeGreaterThanOrEqual(4);

      // A scratch tenant: made, applied to, tested, emptied.
      const before = new Set((await platform.tenancy.listTenants({ limit: 1000 })).tenants.map((t) => t.id));
      const scratch = await runAuthz(['test', '--url', cp.url, tests, '-o', 'json'], env(), { home });
      expect(scratch.code, scratch.stdout + scratch.stderr).toBe(0);
      expect(json(scratch).runs.map((r) => r.target)).toEqual(['control-plane']);
      const tenants = (await platform.tenancy.listTenants({ limit: 1000 })).tenants;
      const made = tenants.filter((t) => !before.has(t.id));
      expect(made.map((t) => t.name)).toEqual([expect.stringMatching(/^authz-test-[0-9a-f]{8}$/)]);
      const scratchTenant = made[0];
      // Emptied of what the API deletes (scopes, tag groups and tags it cannot).
      expect((await platform.subjects.listSubjects({ tenantId: scratchTenant.id, limit: 10 })).subjects).toEqual([]);
      expect(await runAuthz(['export', '--url', cp.url, '--tenant', scratchTenant.id, '--sections', 'roles,policies,resources,memberships'], env(), { home }))
        .toMatchObject({ code: 0, stdout: 'apiVersion: authz/v1\nkind: TenantModel\nroles: []\npolicies: []\nmemberships: []\nresources: []\n' });

      // A sidecar of a tenant of its own: the model applied there, every case waits for that revision.
      const { tenant } = await platform.tenancy.createTenant({ name: name });
      const key = await platform.apiKeys.createApiKey({ name: 'sidecar', kind: 'service', tenantId: tenant!.id });
      const sidecar = await startProcess('sidecar', {
        SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: key.apiKey!.secretKey!, SIDECAR_TENANT_ID: tenant!.id, SIDECAR_PORT: '0', SIDECAR_LOG_LEVEL: 'info',
      });
      sidecars.push(sidecar);
      const all = await runAuthz(['test', '--offline', '--url', cp.url, '--tenant', tenant!.id, '--sidecar', sidecar.url, tests, '-o', 'json'], env(), { home });
      expect(all.code, all.stdout + all.stderr).toBe(0);
      const runs = json(all).runs;
      expect(runs.map((r) => r.target)).toEqual(['offline', 'control-plane', 'sidecar']);
      for (const r of runs) expect(r.cases.map(answer), r.target).toEqual(cases.map(answer));

      // The tenant's export plans nothing against it: the model round-trips.
      const exported = join(home, `${name}-export.yaml`);
      const exportRun = await runAuthz(['export', '--url', cp.url, '--tenant', tenant!.id, '--out', exported], env(), { home });
      expect(exportRun.code, exportRun.stderr).toBe(0);
      const plan = await runAuthz(['plan', '--url', cp.url, '--tenant', tenant!.id, '-f', exported], env(), { home });
      expect([plan.code, plan.stdout], plan.stderr).toEqual([0, expect.stringMatching(/\nNo changes\.\n$/)]);
      // And so does the model file itself, once applied.
      const again = await runAuthz(['plan', '--url', cp.url, '--tenant', tenant!.id, '-f', model], env(), { home });
      expect([again.code, again.stdout], again.stderr).toEqual([0, expect.stringMatching(/\nNo changes\.\n$/)]);
    }, 120_000);
  }

  it('a broken expectation fails on every target, with the expected and actual answer, in the table and in JUnit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-broken-'));
    try {
      writeFileSync(join(dir, 'model.yaml'), readFileSync(join(REPO_ROOT, 'examples/documents/model.yaml')));
      const text = readFileSync(join(REPO_ROOT, 'examples/documents/tests.yaml'), 'utf8');
      const broken = text
        .replace('    reason: inherited', '    reason: role')
        .replace('expect: [alice, dave, erin]', 'expect: [alice, dave]')
        .replace('expect: [erin]', 'expect: [erin, alice]');
      expect(broken.split('\n').filter((l, i) => l !== text.split('\n')[i])).toHaveLength(3);
      writeFileSync(join(dir, 'tests.yaml'), broken);
      const junit = join(dir, 'junit.xml');
      const r = await runAuthz(['test', '--offline', '--url', cp.url, join(dir, 'tests.yaml'), '--junit', junit], env(), { home });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('✗ the folder\'s owner deletes a document in it, through the hierarchy');
      expect(r.stdout).toContain('expected allow (reason role)');
      expect(r.stdout).toContain('actual   allow (reason inherited)');
      // The trace names the model's entities, not ids.
      expect(r.stdout).toMatch(/hierarchy\s+✓ ancestor folder\/designs/);
      // A listing's difference, as sets: what it lacks and what it has beyond the expectation.
      expect(r.stdout).toMatch(/✗ who reads the roadmap in the team.*\n.*tests\.yaml:\d+\n\s+\+ erin  \(listed, not expected\)\n/);
      expect(r.stdout).toMatch(/✗ only the folder's owner deletes the spec.*\n.*tests\.yaml:\d+\n\s+- alice  \(expected, not listed\)\n/);
      expect(r.stdout).toMatch(/16 passed, 3 failed\n[\s\S]*16 passed, 3 failed\n[\s\S]*all: 32 passed, 6 failed/);
      const xml = readFileSync(junit, 'utf8');
      expect(xml.match(/<testsuite /g)).toHaveLength(2);
      expect(xml.match(/<failure /g)).toHaveLength(6);
      expect(xml).toContain('failures="6"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a test file with errors says where, and asks nothing of a server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-invalid-'));
    try {
      writeFileSync(join(dir, 'tests.yaml'), 'apiVersion: authz/v1\nkind: DecisionTests\nmodel: missing.yaml\nchecks:\n  - subject: a\n    scope: eng\n    action: read\n    expect: allow\n');
      const r = await runAuthz(['test', join(dir, 'tests.yaml')], env(), { home });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${join(dir, 'tests.yaml')}:6:12: checks[0].scope: must be a scope path`);
      // A lookup case is one kind or the other, and its resource a "<type key>/<external id>".
      writeFileSync(join(dir, 'tests.yaml'), 'apiVersion: authz/v1\nkind: DecisionTests\nmodel: missing.yaml\nlookups:\n  - expect: []\n  - subjects: { scope: /eng, action: read, resource: nope }\n    expect: []\n');
      const lookups = await runAuthz(['test', join(dir, 'tests.yaml')], env(), { home });
      expect([lookups.code, lookups.stderr.trim().split('\n')]).toEqual([1, [
        `${join(dir, 'tests.yaml')}:5:5: lookups[0]: give exactly one of resources (a LookupResources case) and subjects (a LookupSubjects case)`,
        `${join(dir, 'tests.yaml')}:6:54: lookups[1].subjects.resource: must name a resource as "<type key>/<external id>"`,
      ]]);
      writeFileSync(join(dir, 'tests.yaml'), 'apiVersion: authz/v1\nkind: DecisionTests\nmodel: missing.yaml\n');
      const missing = await runAuthz(['test', '--url', 'http://127.0.0.1:1', join(dir, 'tests.yaml')], env(), { home });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/tests\.yaml:3:8: model: cannot read the model file .*missing\.yaml: ENOENT/);
      const usage = await runAuthz(['test', '--sidecar', 'http://127.0.0.1:1', join(dir, 'tests.yaml')], env(), { home });
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--sidecar needs --tenant');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
