/**
 * The `authz` command line as people and scripts run it: a child process started through the
 * package's bin (bin/authz.js), against a real control plane over a fresh database (PostgreSQL
 * when DATABASE_URL is set, else the embedded one). The long matrices (help on every command,
 * every usage error) call runCli in this process, which is what the bin's main runs, to spare a
 * process start each. Every run's output is kept, and the last test checks that no API key
 * appears in any of it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient } from '../../client/client.js';
import { buildProgram, runCli } from '../../cli/program.js';
import { CliIo } from '../../cli/io.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from '../harness.js';
import { seedCliTenant, type CliTenant } from '../cli-tenant.js';
import { runAuthz } from '../authz-cli.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/authz.js');
const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const hasScript = spawnSync('script', ['--version']).status === 0;
if (!hasScript) console.warn('skipping the terminal login test: util-linux `script` is not on PATH');

/** Everything every run printed, for the last test. */
const printed: string[] = [];
let home: string;

/** Runs `authz args…` with only `env` (plus PATH and a fresh HOME) and `input` on stdin; keeps what it printed. */
async function authz(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  const run = await runAuthz(args, env, { input, home, cwd: ROOT });
  printed.push(run.stdout, run.stderr);
  return run;
}

/** runCli in this process with only `env` (and a fresh home): the same result as `authz`, without a process start. */
async function authzHere(args: string[], env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    stdin: Readable.from([]) as never,
    env,
    home,
  });
  printed.push(stdout, stderr);
  return { code, stdout, stderr };
}

/** The names of the program's subcommands, as `authz --help` lists them. */
function subcommands(): string[] {
  const io = new CliIo({ stdout: { write: () => true }, stderr: { write: () => true }, stdin: process.stdin as never, env: {}, home: tmpdir() });
  return buildProgram(io, { value: 0 }).commands.map((c) => c.name());
}

describe(`the authz command line (${BACKEND})`, () => {
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let t: CliTenant;
  let as: Record<string, string>;

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'authz-cli-home-'));
    cp = await startTestControlPlane(BACKEND);
    t = await seedCliTenant(createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY }));
    as = { AUTHZ_URL: cp.url, AUTHZ_API_KEY: TEST_BOOTSTRAP_KEY, AUTHZ_TENANT: t.tenantId };
  }, 60_000);
  afterAll(async () => {
    await cp?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  describe('usage', () => {
    it('has --help on the program and on every command, exit 0', async () => {
      const names = subcommands();
      expect(names).toEqual(['check', 'lookup', 'plan-resources', 'test', 'validate', 'schema', 'plan', 'apply', 'export', 'import', 'history', 'login', 'logout', 'status', 'whoami', 'version']);
      const root = await authz(['--help']);
      expect([root.code, root.stdout]).toEqual([0, expect.stringContaining('Usage: authz [options] [command]')]);
      for (const name of [...names, 'help']) expect(root.stdout).toContain(`  ${name}`);
      const child = await authz(['check', '--help']);
      expect([child.code, child.stdout.split('\n')[0]]).toEqual([0, 'Usage: authz check [options]']);
      for (const name of names) {
        const r = await authzHere([name, '--help']);
        expect([name, r.code, r.stdout.split('\n')[0]]).toEqual([name, 0, expect.stringMatching(new RegExp(`^Usage: authz ${name}\\b`))]);
        expect(r.stdout).toContain('-h, --help');
      }
      const viaHelp = await authzHere(['help', 'check']);
      expect([viaHelp.code, viaHelp.stdout]).toEqual([0, expect.stringContaining('--explain')]);
    }, 60_000);

    it('exits 2 on usage errors, naming what is wrong, and calls nothing', async () => {
      const cases: [string[], string][] = [
        [[], 'Usage: authz'],
        [['chek'], "unknown command 'chek'"],
        [['check', '--scope-id', 's', '--subject-id', 'x'], "required option '--action <action>' not specified"],
        [['check', '--action', 'edit', '--scope-id', 's'], 'give the subject'],
        [['check', '--action', 'edit', '--subject', 'a', '--subject-id', 'b', '--scope-id', 's'], "'--subject <externalId>' cannot be used with option '--subject-id <id>'"],
        [['check', '--action', 'edit', '--subject-id', 'b', '--scope-id', 's', '--context', '[1]'], "option '--context <json>' argument '[1]' is invalid"],
        [['check', '--action', 'edit', '--subject-id', 'b', '--scope-id', 's', '--resource', 'readme'], 'expected TYPE/EXTERNAL_ID'],
        [['check', '--action', 'edit', '--subject', 'alice', '--scope', '/eng'], '--scope PATH needs a tenant'],
        [['--output', 'xml', 'version'], "argument 'xml' is invalid. Allowed choices are table, json, yaml"],
        [['status', '--bogus'], "unknown option '--bogus'"],
        [['--url', 'ftp://example.com', 'status'], '--url: not an http:// or https:// URL'],
        [['--timeout', '0', 'status'], '--timeout must be a positive integer'],
        [['validate'], "required option '-f, --file <path>' not specified"],
        [['plan', '-f', 'model.yaml'], 'plan needs a tenant'],
        [['apply', '-f', 'model.yaml', '--tenant', 't'], 'stdin is not a terminal, so the plan cannot be confirmed: pass --yes'],
        [['apply', '-f', '-', '--tenant', 't'], 'the model comes from stdin, so the plan cannot be confirmed there: pass --yes'],
        [['export', '--tenant', 't', '--format', 'xml'], "argument 'xml' is invalid. Allowed choices are yaml, json"],
        [['export', '--tenant', 't', '--sections', 'roles,rolez'], '--sections: unknown rolez; the sections are scopeTypes, scopes'],
        [['export', '--tenant', 't', '--sections', 'roles,'], 'expected section names separated by commas'],
        [['import', '--tenant', 't'], "missing required argument 'file'"],
        [['import', '--tenant', 't', '--import-id', 'a b', 'x.ndjson'], '--import-id must be 1-128 of'],
      ];
      // A URL nothing listens on: a command that got as far as calling would exit 1, not 2.
      for (const [args, text] of cases) {
        const r = await authzHere(args, { AUTHZ_URL: 'http://127.0.0.1:9' });
        expect([args, r.code, r.stderr]).toEqual([args, 2, expect.stringContaining(text)]);
      }
      // The same codes from the process.
      const [none, unknown] = await Promise.all([authz([]), authz(['check', '--scope-id', 's', '--subject-id', 'x'])]);
      expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('Usage: authz')]);
      expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining("required option '--action <action>' not specified")]);
    }, 60_000);

    it('prints its version', async () => {
      const r = await authzHere(['version', '-o', 'json']);
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect([r.code, JSON.parse(r.stdout)]).toEqual([0, { version: pkg.version, node: process.versions.node }]);
    }, 30_000);
  });

  describe('check', () => {
    it('exits 0 when allowed and 1 when denied, names resolved in the tenant', async () => {
      const [allowed, denied, ownership, byPolicy] = await Promise.all([
        authz(['check', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--resource', 'doc/readme'], as),
        authz(['check', '--scope', '/eng', '--subject', 'carol', '--action', 'edit', '--resource', 'doc/readme'], as),
        authz(['check', '--scope', '/eng', '--subject', 'bob', '--subject-type', 'user', '--action', 'edit', '--resource', 'doc/readme'], as),
        authz(['check', '--scope', '/eng', '--subject', 'carol', '--action', 'read', '--resource-id', t.readme], as),
      ]);
      expect([allowed.code, allowed.stdout]).toEqual([0, expect.stringMatching(/^✓ allowed {2}reason role {2}revision \d+\n$/)]);
      expect([denied.code, denied.stdout]).toEqual([1, expect.stringMatching(/^✗ denied {2}reason no_match /)]);
      expect([ownership.code, ownership.stdout]).toEqual([0, expect.stringContaining('reason inherited')]);
      expect([byPolicy.code, byPolicy.stdout]).toEqual([0, expect.stringContaining(`reason policy_allow`)]);
      expect(byPolicy.stdout).toContain(`decided by policy ${t.allowPolicy} (allow, priority 1)`);
    }, 60_000);

    it('an unknown subject, by external id or by id: a deny that says so (exit 1); an unknown scope path: an error naming it', async () => {
      const [byName, byId, unknownScope] = await Promise.all([
        authz(['check', '--scope', '/eng', '--subject', 'mallory', '--action', 'edit'], as),
        authz(['check', '--scope-id', t.scopeId, '--subject-id', 'subject_mallory', '--action', 'edit', '-o', 'json'], as),
        authz(['check', '--scope', '/ops', '--subject', 'alice', '--action', 'edit'], as),
      ]);
      expect([byName.code, byName.stdout]).toEqual([1, expect.stringContaining('✗ denied  reason subject_not_found')]);
      expect([byId.code, JSON.parse(byId.stdout)]).toEqual([1, expect.objectContaining({ allowed: false, reason: 'subject_not_found' })]);
      expect([unknownScope.code, unknownScope.stderr]).toEqual([1, expect.stringContaining('has no child named "ops"')]);
    }, 60_000);

    it('--output json is the REST answer to the same question, and yaml the same data', async () => {
      const args = ['check', '--scope-id', t.scopeId, '--subject-id', t.alice, '--action', 'edit', '--resource', 'doc/readme', '--explain', '--context', '{"ip":"10.0.0.1"}'];
      const [json, yaml] = await Promise.all([authz([...args, '-o', 'json'], as), authz([...args, '--output', 'yaml'], as)]);
      const rest = await fetch(`${cp.url}/evaluate`, {
        method: 'POST',
        headers: { 'x-api-key': TEST_BOOTSTRAP_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ actor: { subjectId: t.alice }, scopeId: t.scopeId, action: 'edit', resource: { resourceType: 'doc', externalResourceId: 'readme' }, explain: true, context: { ip: '10.0.0.1' } }),
      }).then((r) => r.json());
      expect(json.code).toBe(1);
      const parsed = JSON.parse(json.stdout);
      expect(parsed).toEqual(rest);
      expect(parsed).toMatchObject({ allowed: false, reason: 'policy_deny', decidedByPolicy: true, evaluatedPolicy: { id: t.denyPolicy, priority: 10 } });
      expect(typeof parsed.revision).toBe('number');
      expect(parseYaml(yaml.stdout)).toEqual(rest);
    }, 60_000);

    it('--explain prints the trace as a tree: legs, policies by priority with their conditions, role and hierarchy paths', async () => {
      const [denied, inherited, role] = await Promise.all([
        authz(['check', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--resource', 'doc/readme', '--context', '{"ip":"10.0.0.1"}', '--explain'], as),
        authz(['check', '--scope', '/eng', '--subject', 'bob', '--action', 'edit', '--resource', 'doc/readme', '--explain'], as),
        authz(['check', '--scope', '/eng', '--subject', 'alice', '--action', 'edit', '--resource', 'doc/readme', '--explain'], as),
      ]);
      const d = denied.stdout.split('\n');
      expect(d[0]).toMatch(/^✗ denied {2}reason policy_deny {2}revision \d+$/);
      expect(d[1]).toBe(`decided by policy ${t.denyPolicy} (deny, priority 10)`);
      const legs = d.filter((l) => /^[├└]─ /.test(l)).map((l) => l.slice(3).split(' ')[0]);
      expect(legs).toEqual(['scope', 'resource', 'gate', 'subject', 'policies', 'decision']);
      const policies = d.slice(d.findIndex((l) => l === '├─ policies'));
      expect(policies[1]).toBe('│  ├─ priority 10');
      expect(policies[2]).toMatch(new RegExp(`^│  │  └─ ✓ policy ${t.denyPolicy} \\(direct, priority 10, deny\\): action matches, window active, no subjectCondition, contextCondition passed$`));
      expect(policies[3]).toBe('│  │     └─ action: ✓  window: ✓  contextCondition: ✓  matched: ✓');
      expect(d.at(-2)).toBe('└─ decision  ✗ denied (policy_deny)');

      // Without the context, the deny's condition fails and names what it missed; roles decide.
      const r = role.stdout;
      expect(role.code).toBe(0);
      expect(r).toContain(`✗ policy ${t.denyPolicy} (direct, priority 10, deny): action matches, window active, no subjectCondition, contextCondition failed (missing: ip)`);
      expect(r).toContain('action: ✓  window: ✓  contextCondition: ✗  matched: ✗');
      expect(r).toMatch(new RegExp(`roles\\n│  ├─ • roles held: ${t.roleId} \\(membership membership_[^ ]+ at ${t.scopeId}\\)`));
      expect(r).toContain(`roleId=${t.roleId} source=role sourceScopeId=${t.scopeId}`);
      expect(r).toContain(`✓ role ${t.roleId} has permission ${t.permissionId} (doc:edit:*) covering the request`);

      // Bob owns the folder: the readme inherits it through the hierarchy.
      const i = inherited.stdout;
      expect(inherited.code).toBe(0);
      expect(i).toContain('├─ hierarchy  ✓ ancestor ');
      expect(i).toContain(`ownership grant`);
      expect(i).toContain(`✓ ancestor ${t.folder} via ${t.folder}: ownership grant `);
      expect(i).toContain(`│  └─ hierarchyPath: ${t.folder}\n`);
      expect(i.split('\n').at(-2)).toBe('└─ decision  ✓ allowed (inherited)');
      for (const out of [denied.stdout, inherited.stdout, role.stdout]) expect(out).not.toContain('\x1b[');
    }, 60_000);

    it('with a service key, a scope path cannot be resolved (it says to pass the id); the subject by external id works', async () => {
      const service = { ...as, AUTHZ_API_KEY: t.serviceKey };
      const [byPath, byId] = await Promise.all([
        authz(['check', '--scope', '/eng', '--subject', 'alice', '--action', 'edit'], service),
        authz(['check', '--scope-id', t.scopeId, '--subject', 'alice', '--action', 'edit', '--resource', 'doc/readme'], service),
      ]);
      expect([byPath.code, byPath.stderr]).toEqual([1, expect.stringContaining('resolving names needs a platform key: with this key, pass --scope-id (permission_denied')]);
      expect([byId.code, byId.stdout]).toEqual([0, expect.stringContaining('✓ allowed')]);
    }, 60_000);

    it('answers as the tenant was at a past revision (--at-revision) or time (--at)', async () => {
      const ask = ['check', '--scope', '/eng', '--subject', 'carol', '--action', 'edit', '--resource', 'doc/readme', '-o', 'json'];
      const before = await authz(ask, as);
      const past = JSON.parse(before.stdout) as { allowed: boolean; revision: string };
      expect([before.code, past.allowed]).toEqual([1, false]);
      await new Promise((r) => setTimeout(r, 20));
      const between = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 20));
      // carol becomes an editor of the scope.
      const c = createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY });
      const { roles } = await c.roles.listRoles({ scopeId: t.scopeId });
      const membershipId = (await c.memberships.createMembership({ subjectId: t.carol, scopeId: t.scopeId })).membership!.id;
      await c.memberships.createRoleAssignment({ membershipId, roleId: roles.find((r) => r.key === 'editor')!.id });
      const [now, atRevision, atTime, future, both] = await Promise.all([
        authz(ask, as),
        authz([...ask, '--at-revision', past.revision], as),
        authz([...ask, '--at', between], as),
        authz([...ask, '--at-revision', '999999'], as),
        authz([...ask, '--at-revision', '1', '--at', between], as),
      ]);
      expect([now.code, JSON.parse(now.stdout).allowed]).toEqual([0, true]);
      expect([atRevision.code, JSON.parse(atRevision.stdout)]).toEqual([1, expect.objectContaining({ allowed: false, revision: past.revision })]);
      expect([atTime.code, JSON.parse(atTime.stdout)]).toEqual([1, expect.objectContaining({ allowed: false, revision: past.revision })]);
      expect([future.code, future.stderr]).toEqual([1, expect.stringContaining('consistency.atRevision: revision 999999 is past the tenant\'s committed revision')]);
      expect([both.code, both.stderr]).toEqual([2, expect.stringContaining("'--at <time>' cannot be used with option '--at-revision <n>'")]);
    }, 60_000);
  });

  describe('login, whoami, status, logout', () => {
    it('login checks the key, writes the login file with mode 0600, and later commands use it', async () => {
      const config = join(home, 'login', 'config.json');
      const env = { AUTHZ_CONFIG: config };
      const refused = await authz(['login', '--url', cp.url, '--api-key-stdin'], env, 'azk_not_a_key_of_this_service_0123456789\n');
      expect([refused.code, refused.stderr, existsSync(config)]).toEqual([1, expect.stringContaining('(unauthenticated'), false]);

      const login = await authz(['login', '--url', cp.url, '--api-key-stdin', '-o', 'json'], env, `${t.userKey}\n`);
      expect(login.code).toBe(0);
      // A user key's tenant is learned from the service.
      expect(JSON.parse(login.stdout)).toEqual({ url: cp.url, tenant: t.tenantId, keyKind: 'user', configFile: config });
      expect(statSync(config).mode & 0o777).toBe(0o600);
      expect(statSync(join(home, 'login')).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(config, 'utf8'))).toEqual({ url: cp.url, apiKey: t.userKey, tenant: t.tenantId });

      const [whoami, status] = await Promise.all([authz(['whoami', '-o', 'json'], env), authz(['status', '-o', 'json'], env)]);
      expect([whoami.code, JSON.parse(whoami.stdout)]).toEqual([
        0,
        { url: cp.url, urlFrom: config, tenant: t.tenantId, tenantFrom: config, keyKind: 'user', keyFrom: config },
      ]);
      expect([status.code, JSON.parse(status.stdout)]).toEqual([0, { url: cp.url, live: true, ready: true, keyKind: 'user', tenant: t.tenantId, revision: expect.any(Number) }]);

      // A wider mode is warned about.
      chmodSync(config, 0o644);
      const loose = await authzHere(['whoami'], env);
      expect(loose.stderr).toContain(`${config} is readable by other users (mode 0644): run chmod 600 ${config}`);

      const [out, again] = [await authz(['logout'], env), await authzHere(['logout', '-o', 'json'], env)];
      expect([out.code, out.stdout, existsSync(config)]).toEqual([0, `Removed ${config}.\n`, false]);
      expect(JSON.parse(again.stdout)).toEqual({ configFile: config, removed: false });
    }, 120_000);

    it.runIf(hasScript)('login at a terminal asks for the URL, the key without echoing it, and the tenant', async () => {
      // util-linux `script` runs the command on a pseudo-terminal fed from this process.
      const config = join(home, 'tty', 'config.json');
      const child = spawn('script', ['-qfec', `'${process.execPath}' '${BIN}' login --config '${config}'`, '/dev/null'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let screen = '';
      child.stdout.on('data', (b: Buffer) => (screen += b.toString()));
      const exited = new Promise<number | null>((done) => child.once('close', done));
      const answer = async (prompt: string, text: string) => {
        for (let waited = 0; !screen.includes(prompt); waited += 50) {
          if (waited > 30_000) throw new Error(`no prompt ${JSON.stringify(prompt)}; the terminal shows:\n${screen}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        child.stdin.write(`${text}\r`);
      };
      await answer('URL [http://127.0.0.1:8080]: ', cp.url);
      await answer('API key: ', t.userKey);
      await answer('Tenant id (empty: none): ', '');
      const code = await exited;
      printed.push(screen);
      expect([code, screen]).toEqual([0, expect.stringContaining(`Logged in to ${cp.url} with a user key (tenant ${t.tenantId}).`)]);
      expect(screen).not.toContain(t.userKey);
      expect(JSON.parse(readFileSync(config, 'utf8'))).toEqual({ url: cp.url, apiKey: t.userKey, tenant: t.tenantId });
      expect(statSync(config).mode & 0o777).toBe(0o600);
    }, 60_000);

    it('never sends the saved key to another URL', async () => {
      const config = join(home, 'other', 'config.json');
      const login = await authz(['login', '--url', cp.url, '--tenant', t.tenantId, '--api-key-stdin'], { AUTHZ_CONFIG: config }, `${TEST_BOOTSTRAP_KEY}\n`);
      expect(login.code).toBe(0);
      const seen: IncomingHttpHeaders[] = [];
      const fake: Server = createServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"unauthenticated","message":"no key"}');
      });
      await new Promise<void>((ok) => fake.listen(0, '127.0.0.1', ok));
      try {
        const other = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
        const [check, whoami] = await Promise.all([
          authz(['--url', other, 'check', '--scope-id', t.scopeId, '--subject-id', t.alice, '--action', 'edit'], { AUTHZ_CONFIG: config }),
          authz(['whoami'], { AUTHZ_CONFIG: config, AUTHZ_URL: other }),
        ]);
        expect([check.code, check.stderr]).toEqual([1, expect.stringContaining('(unauthenticated')]);
        expect([whoami.code, whoami.stderr]).toEqual([1, expect.stringContaining(`the login file ${config} is for ${cp.url}, so its key is not sent to ${other}`)]);
        expect(seen.length).toBe(1);
        expect(seen[0]['x-api-key']).toBeUndefined();
        expect(seen[0].authorization).toBeUndefined();
      } finally {
        await new Promise((ok) => fake.close(ok));
      }
    }, 60_000);

    it('whoami and status tell the kind of each key; a refused key exits 1', async () => {
      const runs = await Promise.all(
        [TEST_BOOTSTRAP_KEY, t.userKey, t.serviceKey].map((key) => authzHere(['whoami', '-o', 'json'], { ...as, AUTHZ_API_KEY: key })),
      );
      expect(runs.map((r) => [r.code, JSON.parse(r.stdout).keyKind])).toEqual([
        [0, 'platform'],
        [0, 'user'],
        [0, 'service'],
      ]);
      const [table, refused, unreachable, noTenant] = await Promise.all([
        authz(['status'], as),
        authzHere(['status', '-o', 'json'], { ...as, AUTHZ_API_KEY: 'azk_revoked_or_never_was_0123456789abcdef' }),
        authzHere(['status'], { AUTHZ_URL: 'http://127.0.0.1:9' }),
        authzHere(['status', '-o', 'json'], { ...as, AUTHZ_TENANT: 'tenant_missing' }),
      ]);
      expect([noTenant.code, JSON.parse(noTenant.stdout)]).toEqual([
        1,
        { url: cp.url, live: true, ready: true, keyKind: 'platform', tenant: 'tenant_missing', revision: null, tenantError: 'tenant tenant_missing not found (not_found)' },
      ]);
      expect([table.code, table.stdout]).toEqual([0, expect.stringMatching(/^url {7}http:\/\/127\.0\.0\.1:\d+\nlive {6}yes\nready {5}yes\nkey {7}platform key\ntenant {4}tenant_\S+\nrevision {2}\d+\n$/)]);
      expect([refused.code, JSON.parse(refused.stdout)]).toMatchObject([1, { live: true, ready: true, keyKind: null, keyError: expect.stringContaining('unauthenticated') }]);
      expect([unreachable.code, unreachable.stdout]).toEqual([1, expect.stringContaining('cannot reach http://127.0.0.1:9')]);
    }, 60_000);
  });

  it('prints no API key anywhere, even given on the command line or in a failing call', async () => {
    const secret = 'azk_given_on_argv_0123456789abcdefghijkl';
    const runs = await Promise.all([
      authz(['--api-key', secret, 'whoami', '-o', 'json'], { AUTHZ_URL: cp.url }),
      authz([`--api-key=${secret}`, 'chekc'], { AUTHZ_URL: cp.url }),
      authz(['--api-key', secret, '--url', 'http://127.0.0.1:9', 'check', '--scope-id', 's', '--subject-id', 'x', '--action', 'a']),
      authzHere(['whoami', '-o', 'yaml'], as),
      authzHere(['status', '-o', 'json'], as),
      authzHere(['--api-key', secret, '--output', secret, 'version']),
    ]);
    expect(runs[0].stderr).toContain('warning: --api-key puts the key in the process list and the shell history');
    const keys = [secret, TEST_BOOTSTRAP_KEY, t.userKey, t.serviceKey];
    expect(runs[5].stderr).toContain("argument '[redacted]' is invalid");
    expect(printed.length).toBeGreaterThan(60);
    for (const text of printed) for (const key of keys) expect(text.includes(key), `a key was printed:\n${text}`).toBe(false);
  }, 60_000);
});
