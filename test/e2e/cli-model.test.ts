/**
 * The model and import commands of `authz` as people and scripts run them: child processes
 * through the package's bin against a real control plane over a fresh database (PostgreSQL when
 * DATABASE_URL is set, else the embedded one). validate and schema run offline; plan, apply and
 * export round-trip a model through files; a terminal (util-linux `script`) confirms an apply
 * and shows colour; import streams an NDJSON file. Every run's output is kept, and the last test
 * checks that no API key appears in any of it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient, type AuthzClient } from '../../client/client.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../harness.js';
import { runAuthz } from '../authz-cli.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/authz.js');
const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';
const hasScript = spawnSync('script', ['--version']).status === 0;
if (!hasScript) console.warn('skipping the terminal apply test: util-linux `script` is not on PATH');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const printed: string[] = [];
let dir: string;

async function authz(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  const run = await runAuthz(args, env, { input, home: dir, cwd: dir });
  printed.push(run.stdout, run.stderr);
  return run;
}

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
  - key: doc:edit:*
    scope: /eng
roles:
  - key: editor
    scope: /eng
    permissions: [doc:edit:*]
subjects:
  - externalId: alice
memberships:
  - subject: alice
    scope: /eng
    roles: [editor]
`;

describe(`the authz model and import commands (${BACKEND})`, () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let platform: AuthzClient;
  let tenantId: string;
  let userKey: string;
  let as: Record<string, string>;
  const revision = async (id = tenantId) => Number((await platform.tenancy.getTenant({ id })).tenant!.revision);
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authz-cli-model-'));
    cp = await startTestControlPlane(BACKEND);
    platform = createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY });
    tenantId = (await platform.tenancy.createTenant({ name: 'acme' })).tenant!.id;
    userKey = (await platform.apiKeys.createApiKey({ name: 'cli-user', kind: 'user', tenantId })).apiKey!.secretKey!;
    as = { AUTHZ_URL: cp.url, AUTHZ_API_KEY: TEST_BOOTSTRAP_KEY, AUTHZ_TENANT: tenantId };
    file('model.yaml', MODEL);
  }, 60_000);
  afterAll(async () => {
    await cp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('offline', () => {
    it('validate prints each error as file:line:column: path: message and exits 1; a valid file one line, exit 0', async () => {
      const broken = file('broken.yaml', MODEL.replace('roles: [editor]', 'roles: [edtior]').replace('  - key: doc\n', '  - key: doc\n    colour: blue\n'));
      const [bad, good, stdin, json, missing] = await Promise.all([
        authz(['validate', '-f', 'broken.yaml']),
        authz(['validate', '-f', 'model.yaml']),
        authz(['validate', '-f', '-'], {}, 'apiVersion: authz/v1\nkind: TenantModel\nscopes:\n  - path: eng\n    type: team\n'),
        authz(['validate', '--file', broken, '-o', 'json']),
        authz(['validate', '-f', 'nope.yaml']),
      ]);
      expect([bad.code, bad.stdout]).toEqual([1, 'broken.yaml:10:5: resourceTypes[0].colour: is not a field of this entry\n']);
      expect([good.code, good.stdout]).toEqual([0, 'model.yaml: valid, 7 entries in 7 sections (scopeTypes, scopes, resourceTypes, permissions, roles, subjects, memberships)\n']);
      expect([stdin.code, stdin.stdout]).toEqual([1, expect.stringMatching(/^<stdin>:4:11: scopes\[0\]\.path: /)]);
      expect([json.code, JSON.parse(json.stdout)]).toEqual([1, { file: broken, valid: false, errors: [{ file: broken, line: 10, column: 5, path: 'resourceTypes[0].colour', message: 'is not a field of this entry' }] }]);
      expect([missing.code, missing.stderr]).toEqual([1, 'error: cannot read nope.yaml: ENOENT\n']);
      // References are checked once the schema holds.
      const unknownRole = await authz(['validate', '-f', file('typo.yaml', MODEL.replace('roles: [editor]', 'roles: [edtior]'))]);
      expect([unknownRole.code, unknownRole.stdout]).toEqual([1, expect.stringMatching(/typo\.yaml:23:13: memberships\[0\]\.roles\[0\]: .*edtior/)]);
    }, 60_000);

    it('schema prints the committed JSON Schema byte for byte', async () => {
      const r = await authz(['schema']);
      expect([r.code, r.stdout === readFileSync(join(ROOT, 'schemas/tenant-model.schema.json'), 'utf8')]).toEqual([0, true]);
      const tests = await authz(['schema', '--tests']);
      expect([tests.code, tests.stdout === readFileSync(join(ROOT, 'schemas/decision-tests.schema.json'), 'utf8')]).toEqual([0, true]);
    }, 30_000);
  });

  describe('plan, apply, export', () => {
    it('plan on a fresh tenant lists the creates by kind; -o json the structured plan', async () => {
      const [table, json] = await Promise.all([authz(['plan', '-f', 'model.yaml'], as), authz(['plan', '-f', 'model.yaml', '-o', 'json'], as)]);
      const at = await revision();
      expect(table.code).toBe(0);
      expect(table.stdout).toBe(
        [
          `Plan for tenant ${tenantId} at revision ${at}:`,
          'scopeType',
          '  + scope type team',
          'scope',
          '  + scope /eng',
          'resourceType',
          '  + resource type doc',
          'permission',
          '  + permission doc:edit:* at /eng',
          'role',
          '  + role editor at /eng',
          'rolePermission',
          '  + grant of doc:edit:* at /eng to role editor at /eng',
          'subject',
          '  + subject alice',
          'membership',
          '  + membership of alice in /eng',
          'roleAssignment',
          '  + assignment of role editor at /eng to alice in /eng',
          '9 to create, 0 to update, 0 to replace, 0 to delete.',
          '',
        ].join('\n'),
      );
      const plan = JSON.parse(json.stdout);
      expect([json.code, plan.revision, plan.changes.length]).toEqual([0, at, 9]);
      expect(plan.changes[1]).toEqual({ kind: 'scope', action: 'create', key: 'scope /eng', fields: [], reason: '', path: 'scopes[0]' });
    }, 60_000);

    it('apply without --yes and without a terminal exits 2 and writes nothing', async () => {
      const before = await revision();
      const r = await authz(['apply', '-f', 'model.yaml'], as);
      expect([r.code, r.stdout, r.stderr]).toEqual([2, '', expect.stringContaining('stdin is not a terminal, so the plan cannot be confirmed: pass --yes')]);
      expect(await revision()).toBe(before);
    }, 30_000);

    it('apply --yes prints the plan and the new revision; then plan and apply find nothing to do; check takes the file\'s scope path', async () => {
      const before = await revision();
      const applied = await authz(['apply', '-f', 'model.yaml', '--yes'], as);
      const after = await revision();
      expect(after).toBe(before + 1);
      expect([applied.code, applied.stdout]).toEqual([0, expect.stringMatching(new RegExp(`^Plan for tenant ${tenantId} at revision ${before}:\\n[^]*9 to create[^]*\\nApplied: tenant ${tenantId} is at revision ${after}\\.\\n$`))]);
      const [plan, again, json, check] = await Promise.all([
        authz(['plan', '-f', 'model.yaml'], as),
        authz(['apply', '-f', 'model.yaml', '--yes'], as),
        authz(['apply', '-f', '-', '--yes', '-o', 'json'], as, MODEL),
        authz(['check', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--resource', 'doc/x'], as),
      ]);
      expect([plan.code, plan.stdout]).toEqual([0, `Plan for tenant ${tenantId} at revision ${after}:\nNo changes.\n`]);
      expect([again.code, again.stdout]).toEqual([0, expect.stringContaining(`Nothing to apply: tenant ${tenantId} stays at revision ${after}.`)]);
      expect([json.code, JSON.parse(json.stdout)]).toEqual([0, { applied: false, revision: after, changes: [] }]);
      expect([check.code, check.stdout]).toEqual([0, expect.stringContaining('✓ allowed')]);
      expect(await revision()).toBe(after);
    }, 60_000);

    it('export writes the tenant as a file that plans nothing; --sections and --format narrow it; kept entities are counted', async () => {
      await platform.subjects.createSubject({ tenantId, type: 'user', externalId: 'bob' });
      const [out, stdout, roles, json] = await Promise.all([
        authz(['export', '--out', 'exported.yaml'], as),
        authz(['export'], as),
        authz(['export', '--sections', 'roles,permissions', '--format', 'json'], as),
        authz(['export', '--out', 'exported.json', '-o', 'json'], as),
      ]);
      const at = await revision();
      expect([out.code, out.stdout]).toEqual([0, `Wrote exported.yaml (tenant ${tenantId} at revision ${at}, yaml).\n`]);
      expect(stdout.stdout).toBe(readFileSync(join(dir, 'exported.yaml'), 'utf8'));
      expect(parseYaml(stdout.stdout).subjects.map((s: { externalId: string }) => s.externalId)).toEqual(['alice', 'bob']);
      expect(Object.keys(JSON.parse(roles.stdout)).sort()).toEqual(['apiVersion', 'kind', 'permissions', 'roles']);
      expect(JSON.parse(json.stdout)).toEqual({ tenant: tenantId, file: 'exported.json', format: 'json', revision: at });
      expect(JSON.parse(readFileSync(join(dir, 'exported.json'), 'utf8')).kind).toBe('TenantModel');

      const [roundTrip, roundTripJson, stale] = await Promise.all([
        authz(['plan', '-f', 'exported.yaml'], as),
        authz(['apply', '-f', 'exported.json', '--yes'], as),
        authz(['plan', '-f', 'model.yaml'], as),
      ]);
      expect([roundTrip.code, roundTrip.stdout]).toEqual([0, `Plan for tenant ${tenantId} at revision ${at}:\nNo changes.\n`]);
      expect([roundTripJson.code, roundTripJson.stdout]).toEqual([0, expect.stringContaining('Nothing to apply')]);
      // bob is not in model.yaml: kept without --prune, deleted with it.
      expect(stale.stdout).toBe(`Plan for tenant ${tenantId} at revision ${at}:\nNo changes; 1 kept (not in the file: --prune deletes what the file's sections leave out, where the API can).\n`);
      const pruned = await authz(['plan', '-f', 'model.yaml', '--prune'], as);
      expect(pruned.stdout).toContain('subject\n  - subject bob (not in the file (prune))\n0 to create, 0 to update, 0 to replace, 1 to delete.\n');
      expect(await revision()).toBe(at);
    }, 60_000);

    it('a file the server refuses exits 1 with its lines; a user key of the tenant may plan', async () => {
      const [refused, user] = await Promise.all([
        authz(['plan', '-f', file('unknown-scope.yaml', 'apiVersion: authz/v1\nkind: TenantModel\nroles:\n  - key: viewer\n    scope: /ops\n')], as),
        authz(['plan', '-f', 'model.yaml', '-o', 'json'], { ...as, AUTHZ_API_KEY: userKey }),
      ]);
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([1, '', expect.stringContaining('unknown-scope.yaml:5:12: roles[0].scope: scope /ops does not exist')]);
      expect(refused.stderr).toContain('(invalid_argument, reason INVALID_FIELD, field roles[0].scope)');
      expect([user.code, JSON.parse(user.stdout).changes]).toEqual([0, [expect.objectContaining({ action: 'keep', key: 'subject bob' })]]);
    }, 60_000);

    it.runIf(hasScript)('at a terminal: the plan in colour, a question, and a tenant that moved before the answer is refused (exit 1, plan again)', async () => {
      const grown = file('grown.yaml', MODEL.replace('subjects:\n', 'subjects:\n  - externalId: bob\n  - externalId: carol\n'));
      const before = await revision();
      const child = spawn('script', ['-qfec', `'${process.execPath}' '${BIN}' apply -f '${grown}'`, '/dev/null'], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: dir, TERM: 'xterm', ...as },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let screen = '';
      child.stdout.on('data', (b: Buffer) => (screen += b.toString()));
      const exited = new Promise<number | null>((done) => child.once('close', done));
      for (let waited = 0; !screen.includes('Only "yes" applies: '); waited += 50) {
        if (waited > 30_000) throw new Error(`no question; the terminal shows:\n${screen}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      // Someone else writes between the plan and the answer.
      await platform.subjects.createSubject({ tenantId, type: 'user', externalId: 'dave' });
      child.stdin.write('yes\r');
      const code = await exited;
      printed.push(screen);
      expect(screen).toContain(`\x1b[1msubject\x1b[22m\r\n  \x1b[32m+\x1b[39m subject carol`);
      expect(code).toBe(1);
      expect(screen).toContain(`error: tenant ${tenantId} changed after the plan at revision ${before}, so nothing was applied: run authz plan (or authz apply) again`);
      expect(screen).toContain('(aborted, reason REVISION_MISMATCH, field expectedRevision)');
      expect(await revision()).toBe(before + 1);
      const subjects = (await platform.subjects.listSubjects({ tenantId })).subjects.filter((s) => !s.externalId.startsWith('apk_')).map((s) => s.externalId).sort();
      expect(subjects).toEqual(['alice', 'bob', 'dave']);
    }, 60_000);
  });

  describe('import', () => {
    it('imports a small NDJSON file with a summary; a refused line exits 1 saying where and how to resume', async () => {
      const scopeId = (await platform.resolveScopePath(tenantId, '/eng')).id;
      const lines = [{ subject: { type: 'user', externalId: 'erin' } }, { resource: { type: 'doc', externalId: 'readme', scopeId } }, { resource: { type: 'doc', externalId: 'guide', scopeId } }];
      const good = file('data.ndjson', `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
      const r = await authz(['import', good], as);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toMatch(new RegExp(`^Imported 3 entities \\(resources 2, subjects 1\\) from ${good} in 1 batch; tenant ${tenantId} is at revision \\d+ \\(import cli-[0-9a-f]{32}\\)\\.\\n$`));
      const listed = (await platform.resources.listResources({ scopeId })).resources.map((x) => x.externalResourceId).sort();
      expect(listed).toEqual(['guide', 'readme']);

      const again = await authz(['import', good], as);
      expect([again.code, again.stderr]).toEqual([1, expect.stringContaining(`already exists in tenant ${tenantId}, committed up to line 3: continue it with\n  authz import --tenant ${tenantId} --resume ${good}\n`)]);
      const resumed = await authz(['import', '--resume', good, '-o', 'json'], as);
      expect([resumed.code, JSON.parse(resumed.stdout)]).toEqual([0, expect.objectContaining({ entities: 0, nextLine: 4 })]);

      const bad = file('bad.ndjson', `${JSON.stringify({ subject: { type: 'user', externalId: 'frank' } })}\n${JSON.stringify({ resource: { type: 'nope', externalId: 'x', scopeId } })}\n`);
      const refused = await authz(['import', '--import-id', 'bad-one', bad], as);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: .*line 2/);
      expect(refused.stderr).toContain(`nothing was imported; after fixing the cause, continue from line 1 with\n  authz import --tenant ${tenantId} --import-id bad-one --resume ${bad}\n`);
    }, 60_000);
  });

  it('prints no API key anywhere', async () => {
    const runs = await Promise.all([authz(['plan', '-f', 'model.yaml', '-o', 'yaml'], as), authz(['export', '-o', 'json'], { ...as, AUTHZ_API_KEY: userKey }), authz(['import', 'missing.ndjson'], as)]);
    expect(runs[2].code).toBe(1);
    expect(printed.length).toBeGreaterThan(40);
    for (const text of printed) for (const key of [TEST_BOOTSTRAP_KEY, userKey]) expect(text.includes(key), `a key was printed:\n${text}`).toBe(false);
  }, 60_000);
});
