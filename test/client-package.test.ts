/**
 * What `npm install` gives an application and a person: `import … from 'authz-service/client'`
 * resolves through package.json `exports` to the build, with its types (an application in
 * another directory type-checks against them and runs against a real control plane), and the
 * `authz` bin runs, through `npx authz` too, from the sources or, without them, from dist/.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzClient } from '../client/client.js';
import { ensureBuild } from './build.js';
import { seedCliTenant, type CliTenant } from './cli-tenant.js';
import { startTestControlPlane, TEST_BOOTSTRAP_KEY, type Backend } from './harness.js';

const ROOT = resolve(import.meta.dirname, '..');
const BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'embedded';
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; bin: Record<string, string>; exports: Record<string, unknown> };

/** An application using the client: typed calls, a typed error, and a line of JSON with what it saw. */
const APPLICATION = `
import { AuthzError, createAuthzClient, messages, type AuthzClient } from '${pkg.name}/client';

const [baseUrl, apiKey, subjectId, scopeId] = process.argv.slice(2);
const client: AuthzClient = createAuthzClient({ baseUrl, apiKey });
const answer: messages.EvaluateResponse = await client.decisions.evaluate({ actor: { subjectId }, scopeId, action: 'edit' });
// @ts-expect-error allowed is a boolean: the types are the client's, not any
const wrong: string = answer.allowed;
let code = '';
try {
  await client.tenancy.getTenant({ id: 'tenant_missing' });
} catch (err) {
  if (err instanceof AuthzError) code = err.codeName;
}
console.log(JSON.stringify({ allowed: answer.allowed, reason: answer.reason, code, wrong: typeof wrong }));
`;

describe('the package: authz-service/client and the authz bin', () => {
  let app: string;
  let cp: Awaited<ReturnType<typeof startTestControlPlane>>;
  let t: CliTenant;

  beforeAll(async () => {
    ensureBuild();
    app = mkdtempSync(join(tmpdir(), 'authz-client-app-'));
    cp = await startTestControlPlane(BACKEND);
    t = await seedCliTenant(createAuthzClient({ baseUrl: cp.url, apiKey: TEST_BOOTSTRAP_KEY }));
  }, 320_000);
  afterAll(async () => {
    await cp?.close();
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('exports ./client as the build\'s JavaScript and declarations, and bin authz', () => {
    expect(pkg.exports['./client']).toEqual({ types: './dist/client/mod.d.ts', default: './dist/client/mod.js' });
    expect(pkg.bin).toEqual({ authz: 'bin/authz.js' });
    expect(readFileSync(join(ROOT, 'dist/client/mod.d.ts'), 'utf8')).toContain('createAuthzClient');
  });

  it('an application in another directory type-checks against the client and runs against a control plane', async () => {
    // As npm installs a dependency: node_modules/<name> is the package.
    mkdirSync(join(app, 'node_modules'));
    symlinkSync(ROOT, join(app, 'node_modules', pkg.name), 'dir');
    writeFileSync(join(app, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(app, 'app.ts'), APPLICATION);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, outDir: 'out', skipLibCheck: true, typeRoots: [join(ROOT, 'node_modules/@types')], types: ['node'] },
        files: ['app.ts'],
      }),
    );
    const tsc = spawnSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', app], { encoding: 'utf8', timeout: 120_000 });
    expect(tsc.stdout + tsc.stderr).toBe('');
    // Asynchronously: the control plane answers from this process.
    const { stdout } = await promisify(execFile)(process.execPath, [join(app, 'out/app.js'), cp.url, TEST_BOOTSTRAP_KEY, t.alice, t.scopeId], { encoding: 'utf8', cwd: app, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({ allowed: true, reason: 'role', code: 'not_found', wrong: 'boolean' });

    // A type error in the application is reported: the declarations are really read.
    writeFileSync(join(app, 'app.ts'), `${APPLICATION}\nconst n: number = createAuthzClient({ baseUrl: 'http://x' }).baseUrl;\n`);
    const failing = spawnSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', app, '--noEmit'], { encoding: 'utf8', timeout: 120_000 });
    expect(failing.stdout).toContain("error TS2322: Type 'string' is not assignable to type 'number'");
  }, 180_000);

  it('npx authz runs the bin of the checkout', () => {
    const r = spawnSync('npx', ['--offline', 'authz', 'version', '-o', 'json'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, NO_UPDATE_NOTIFIER: '1' } });
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout)).toEqual({ version: expect.any(String), node: process.versions.node });
  }, 150_000);

  it('the bin runs the sources when tsx can load them, else dist/, else says what to do', () => {
    // A copy of the bin beside a stand-in build, with no sources and no node_modules.
    const only = mkdtempSync(join(tmpdir(), 'authz-bin-'));
    try {
      mkdirSync(join(only, 'bin'));
      copyFileSync(join(ROOT, 'bin/authz.js'), join(only, 'bin/authz.js'));
      writeFileSync(join(only, 'package.json'), '{"type":"module"}\n');
      const run = () => spawnSync(process.execPath, [join(only, 'bin/authz.js'), 'a', 'b'], { encoding: 'utf8', timeout: 30_000 });
      const nothing = run();
      expect([nothing.status, nothing.stderr]).toEqual([1, 'authz: neither the sources with tsx nor a build were found: run npm install, or npm run build\n']);
      mkdirSync(join(only, 'dist/cli'), { recursive: true });
      writeFileSync(join(only, 'dist/cli/main.js'), 'console.log("built", JSON.stringify(process.argv.slice(2)));\n');
      expect(run().stdout).toBe('built ["a","b"]\n');
      // Sources without a tsx to load them: still the build.
      mkdirSync(join(only, 'cli'));
      writeFileSync(join(only, 'cli/main.ts'), 'const from: string = "sources";\nconsole.log(from, JSON.stringify(process.argv.slice(2)));\n');
      expect(run().stdout).toBe('built ["a","b"]\n');
      // Sources and tsx (a checkout after npm install): the sources, never a stale build.
      symlinkSync(join(ROOT, 'node_modules'), join(only, 'node_modules'), 'dir');
      expect(run().stdout).toBe('sources ["a","b"]\n');
    } finally {
      rmSync(only, { recursive: true, force: true });
    }
  }, 120_000);
});
