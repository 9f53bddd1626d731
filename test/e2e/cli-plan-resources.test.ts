/**
 * `authz plan-resources` through the package's bin against a real control plane (PostgreSQL
 * when DATABASE_URL is set, else the embedded database): a model applied with `authz apply`,
 * then the plan printed as text (kind, tree, SQL and parameters) and as JSON, a column mapping,
 * and usage errors.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient } from '../../client/client.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../harness.js';
import { runAuthz } from '../authz-cli.js';

const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';

const MODEL = `apiVersion: authz/v1
kind: TenantModel
scopeTypes:
  - name: team
scopes:
  - path: /eng
    type: team
resourceTypes:
  - key: doc
    scope: /eng
permissions:
  - key: doc:read:readme
    scope: /eng
roles:
  - key: reader
    scope: /eng
    permissions: [doc:read:readme]
subjects:
  - externalId: alice
memberships:
  - subject: alice
    scope: /eng
    roles: [reader]
`;

describe(`authz plan-resources (${BACKEND})`, () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let dir: string;
  let as: Record<string, string>;
  const authz = (args: string[]) => runAuthz(args, as, { home: dir, cwd: dir });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authz-cli-plan-'));
    cp = await startTestControlPlane(BACKEND);
    const platform = createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY });
    const tenantId = (await platform.tenancy.createTenant({ name: 'acme' })).tenant!.id;
    as = { AUTHZ_URL: cp.url, AUTHZ_API_KEY: TEST_BOOTSTRAP_KEY, AUTHZ_TENANT: tenantId };
    writeFileSync(join(dir, 'model.yaml'), MODEL);
    const applied = await authz(['apply', '-f', 'model.yaml', '--yes']);
    expect(applied.code, applied.stderr).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await cp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('prints the plan, its tree and its SQL with parameters; -o json the answer; --column renames a column', async () => {
    const [text, json, mapped] = await Promise.all([
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read', '--type', 'doc']),
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read', '--type', 'doc', '-o', 'json']),
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read', '--type', 'doc', '--column', 'externalResourceId=ext', '-o', 'json']),
    ]);
    expect([text.code, text.stderr]).toEqual([0, '']);
    expect(text.stdout).toMatch(/^plan: conditional \(revision \d+\)\ncondition:\n  any of\n    id in \["readme"\]\n    externalResourceId in \["readme"\]\nsql: "resource_type" = \$1 AND \(COALESCE\("id" = ANY\(\$2::text\[\]\), false\) OR COALESCE\("external_resource_id" = ANY\(\$3::text\[\]\), false\)\)\nparams: \["doc",\["readme"\],\["readme"\]\]\n$/);
    const plan = JSON.parse(json.stdout);
    expect([json.code, plan.kind, plan.hasResidual, plan.sqlParams]).toEqual([0, 'PLAN_KIND_CONDITIONAL', false, ['doc', ['readme'], ['readme']]]);
    expect(plan.condition).toEqual({ any: { conditions: [{ compare: { field: 'id', operator: 'in', value: ['readme'] } }, { compare: { field: 'externalResourceId', operator: 'in', value: ['readme'] } }] } });
    expect(JSON.parse(mapped.stdout).sql).toContain('"ext" = ANY');
    const denied = await authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'write', '--type', 'doc']);
    expect([denied.code, denied.stdout]).toEqual([0, 'plan: always_denied (revision ' + plan.revision + ')\nsql: false\nparams: []\n']);
  }, 60_000);

  it('refuses a bad column mapping (exit 2) and a column name the service refuses (exit 1, naming the field)', async () => {
    const [usage, refused, noType] = await Promise.all([
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read', '--type', 'doc', '--column', 'colour=x']),
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read', '--type', 'doc', '--column', 'id=a b']),
      authz(['plan-resources', '--subject', 'alice', '--scope', '/eng', '--action', 'read']),
    ]);
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining('--column colour=x')]);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('columns.id')]);
    expect(noType.code).toBe(2);
  }, 60_000);
});
