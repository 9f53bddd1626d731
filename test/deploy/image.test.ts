/**
 * The image, without a container engine: deploy/Dockerfile checked as a recipe (stages, what each
 * copies, user, entry points, health check), and what it ships, `dist/` from `npm run build`,
 * checked by running it: every entry point the Dockerfile and the manifests name exists, each
 * compiled entry point starts and answers /healthz, and the health check script finds each one
 * and agrees.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../../services/control-plane/config.js';
import { CONTROL_PLANE_NODE_FLAGS } from '../../services/control-plane/node-flags.js';
import { loadInjectorConfig } from '../../services/injector/config.js';
import { HEALTHCHECK_ENTRY, SIDECAR_ENTRY } from '../../services/injector/inject.js';
import { SIDECAR_VARIABLES } from '../../sidecar/config.js';
import { createScratchDatabase } from '../databases.js';
import { freePort, startProcess, waitFor200, type RunningProcess } from '../processes.js';
import { buildOutputs, ensureBuild } from '../build.js';
import { kustomize } from './kustomize.js';

type Json = any;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = join(ROOT, 'deploy');
const rel = (p: string) => relative(ROOT, p);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const buildConfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8'));
/** Where the image puts the application (WORKDIR); the injector's paths are absolute under it. */
const APP_DIR = '/app';

// ---- the recipe ----------------------------------------------------------------------------

const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
// instructions with continuation lines joined and comments dropped
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const stages = new Map<string, string[]>();
{
  let current: string[] | undefined;
  for (const l of instructions) {
    const from = /^FROM\s+\S+\s+AS\s+(\w+)$/i.exec(l);
    if (/^FROM\s/i.test(l)) {
      expect(from, `every stage is named: ${l}`).not.toBeNull();
      current = [];
      stages.set(from![1], current);
    }
    current?.push(l);
  }
}
const stage = (name: string) => stages.get(name) ?? [];
const copies = (lines: string[]) =>
  lines
    .filter((l) => /^COPY\s/i.test(l))
    .map((l) => {
      const args = l.split(/\s+/).slice(1);
      const from = args.find((a) => a.startsWith('--from='))?.slice('--from='.length);
      const paths = args.filter((a) => !a.startsWith('--'));
      return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
    });
const execForm = (line: string | undefined, instruction: string): string[] => JSON.parse((line ?? '').replace(new RegExp(`^${instruction}\\s+`, 'i'), ''));
/** The script of a `node [flags] script` command. */
const scriptOf = (command: string[]): string => command.slice(1).find((a) => !a.startsWith('-')) as string;
/** The pod specs of every Deployment of the service, rendered. */
const deployments = () => kustomize(join(DEPLOY, 'base')).filter((o) => o.kind === 'Deployment');

describe('deploy/Dockerfile', () => {
  it('builds on node:20-bookworm-slim in three stages: build, production dependencies, runtime', () => {
    expect(instructions).toContain('ARG NODE_IMAGE=node:20-bookworm-slim');
    expect([...stages.keys()]).toEqual(['build', 'deps', 'runtime']);
    for (const [, lines] of stages) expect(lines[0]).toMatch(/^FROM \$\{NODE_IMAGE\} AS \w+$/);
  });

  it('the build stage compiles with `npm run build` after copying everything tsconfig.build.json includes and the console', () => {
    const build = stage('build');
    const runBuild = build.findIndex((l) => l === 'RUN npm run build');
    expect(runBuild, 'RUN npm run build').toBeGreaterThan(0);
    expect(pkg.scripts.build).toBe('tsc -p tsconfig.build.json && npm run build:console');
    expect(pkg.scripts['build:console']).toBe('vite build --config console/vite.config.ts');
    const copiedBefore = copies(build.slice(0, runBuild)).flatMap((c) => c.sources);
    for (const s of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', ...buildConfig.include, 'console']) expect(copiedBefore, s).toContain(s);
    expect(build.find((l) => /\bnpm ci\b/.test(l))).not.toMatch(/--omit=dev/);
    // the ignore file lets every copied path through
    const ignore = readFileSync(join(DEPLOY, 'Dockerfile.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(ignore).toContain('*');
    const all = new Set([...stages.values()].flatMap((lines) => copies(lines).filter((c) => !c.from).flatMap((c) => c.sources)));
    for (const s of all) expect(ignore, `${s} is re-included after '*'`).toContain(`!${s}`);
  });

  it('the runtime holds production dependencies, dist/ and package.json only', () => {
    const deps = stage('deps');
    const ci = deps.find((l) => /\bnpm ci\b/.test(l)) ?? '';
    expect(ci).toMatch(/--omit=dev/);
    expect(ci).toMatch(/--ignore-scripts/);
    const runtime = stage('runtime');
    expect(runtime.filter((l) => /^WORKDIR\s/i.test(l)).at(-1)).toBe(`WORKDIR ${APP_DIR}`);
    expect(copies(runtime)).toEqual([
      { from: undefined, sources: ['package.json'], dest: './' },
      { from: 'deps', sources: ['/app/node_modules'], dest: './node_modules' },
      { from: 'build', sources: ['/app/dist'], dest: './dist' },
    ]);
    // node reads dist/*.js as ES modules because of this
    expect(pkg.type).toBe('module');
    expect(runtime.some((l) => /^RUN\s.*\b(npm|npx|tsc|tsx)\b/.test(l)), 'nothing is built or installed in the runtime stage').toBe(false);
    expect(pkg.dependencies.tsx, 'no TypeScript loader in production').toBeUndefined();
    expect(pkg.dependencies.typescript).toBeUndefined();
  });

  it('--ignore-scripts is safe: no production package has an install script', () => {
    // A native addon among the dependencies would need its script: revisit the Dockerfile then.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const withScripts = Object.entries<Json>(lock.packages)
      .filter(([path, p]) => path && p.hasInstallScript && !p.dev)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    expect(withScripts).toEqual([]);
  });

  it('runs as the non-root user every pod and the injected sidecar run as, with the control plane as command', () => {
    const runtime = stage('runtime');
    const m = /^USER (\d+):(\d+)$/.exec(runtime.filter((l) => /^USER\s/i.test(l)).at(-1) ?? '');
    expect(m, 'USER uid:gid, numeric so runAsNonRoot can verify it').not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    for (const d of deployments()) {
      expect(d.spec.template.spec.securityContext.runAsUser, d.metadata.name).toBe(Number(m![1]));
      expect(d.spec.template.spec.securityContext.runAsGroup, d.metadata.name).toBe(Number(m![2]));
    }
    expect(loadInjectorConfig({ INJECTOR_SIDECAR_IMAGE: 'i', INJECTOR_CONTROL_PLANE_URL: 'http://cp' }, []).sidecarUser).toBe(Number(m![1]));
    expect(execForm(runtime.find((l) => /^CMD\s/i.test(l)), 'CMD')).toEqual(['node', ...CONTROL_PLANE_NODE_FLAGS, 'dist/cmd/control-plane/main.js']);
    // `npm start` runs the sources with the same V8 flags.
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`node ${CONTROL_PLANE_NODE_FLAGS.join(' ')} --import tsx cmd/control-plane/main.ts`);
    expect(runtime.some((l) => /^ENTRYPOINT\s/i.test(l))).toBe(false);
    expect(runtime.find((l) => /^EXPOSE\s/i.test(l))).toBe('EXPOSE 8080 8443');
    const env = runtime.filter((l) => /^ENV\s/i.test(l)).join(' ');
    expect(env).toMatch(/\bSERVICE_HOST=0\.0\.0\.0\b/);
    const known = new Set([...CONFIG_VARIABLES, ...SIDECAR_VARIABLES].map((v) => v.variable));
    for (const [, name] of env.matchAll(/\b([A-Z][A-Z0-9_]*)=/g)) if (name !== 'NODE_ENV') expect(known, `ENV ${name}`).toContain(name);
  });

  it('has a health check that runs the compiled health-check script', () => {
    const line = stage('runtime').find((l) => /^HEALTHCHECK\s/i.test(l)) ?? '';
    const cmd = /\sCMD\s+(\[.*\])$/.exec(line);
    expect(cmd, 'HEALTHCHECK … CMD [exec form]').not.toBeNull();
    expect(JSON.parse(cmd![1])).toEqual(['node', 'dist/cmd/healthcheck/main.js']);
    expect(`${APP_DIR}/dist/cmd/healthcheck/main.js`).toBe(HEALTHCHECK_ENTRY);
  });

  it('everything the entry points import at run time is compiled into dist/ and is a production dependency', () => {
    const entries = ['cmd/control-plane/main.ts', 'cmd/sidecar/main.ts', 'cmd/injector/main.ts', 'cmd/healthcheck/main.ts', 'cli/main.ts'];
    const included = (buildConfig.include as string[]).map((d) => join(ROOT, d) + '/');
    const prod = new Set(Object.keys(pkg.dependencies));
    const builtins = new Set(builtinModules);
    const seen = new Set<string>();
    const packages = new Set<string>();
    const queue = entries.map((e) => join(ROOT, e));
    const importRe = /(?:^|[\n;])\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      expect(included.some((d) => file.startsWith(d)), `${rel(file)} is imported at run time but tsconfig.build.json does not compile it`).toBe(true);
      expect(file, `${rel(file)}: the build leaves out tests and test helpers`).not.toMatch(/\.test\.ts$|\/testdata\/|testkit\.ts$|sidecar\/testing\.ts$/);
      for (const m of readFileSync(file, 'utf8').matchAll(importRe)) {
        if (m[1]) continue;
        const spec = m[2] ?? m[3];
        if (spec.startsWith('.')) {
          const base = resolve(dirname(file), spec);
          const hit = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p) && statSync(p).isFile());
          expect(hit, `${rel(file)} imports ${spec}`).toBeDefined();
          queue.push(hit!);
        } else if (!spec.startsWith('node:') && !builtins.has(spec)) {
          packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    for (const p of packages) expect(prod, `${p} is imported at run time but is not in "dependencies"`).toContain(p);
  });
});

// ---- dist/ ---------------------------------------------------------------------------------

describe('dist/ (npm run build)', () => {
  const scratch: { drop?: () => Promise<void> } = {};
  const running: RunningProcess[] = [];
  let certDir: string;

  beforeAll(() => {
    ensureBuild();
    certDir = mkdtempSync(join(tmpdir(), 'authz-image-'));
  }, 320_000);
  afterAll(async () => {
    for (const p of running) await p.stop('SIGTERM');
    await scratch.drop?.();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('holds every entry point the Dockerfile, the manifests and the injected sidecar name', () => {
    const runtime = stage('runtime');
    const paths = new Set<string>([
      scriptOf(execForm(runtime.find((l) => /^CMD\s/i.test(l)), 'CMD')),
      JSON.parse(/\sCMD\s+(\[.*\])$/.exec(runtime.find((l) => /^HEALTHCHECK\s/i.test(l)) ?? '')![1])[1],
      ...deployments().flatMap((d) => d.spec.template.spec.containers.map((c: Json) => scriptOf(c.command))),
      relative(APP_DIR, SIDECAR_ENTRY),
      relative(APP_DIR, HEALTHCHECK_ENTRY),
    ]);
    expect(paths.size).toBe(4);
    for (const p of paths) expect(existsSync(join(ROOT, p)), `${p} exists after npm run build`).toBe(true);
    for (const { output } of buildOutputs()) expect(existsSync(output), rel(output)).toBe(true);
  });

  /** Runs the compiled health-check script; its exit code and what it printed. */
  const healthcheck = (...args: string[]) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'dist/cmd/healthcheck/main.js'), ...args], { encoding: 'utf8', timeout: 30_000 });
    return { code: r.status, stderr: r.stderr };
  };

  it('each compiled entry point starts and answers /healthz, and the health check finds it', async () => {
    const key = 'azk_image_test_bootstrap_key_0123456789abcdefghij';
    const database = process.env.DATABASE_URL
      ? await createScratchDatabase(process.env.DATABASE_URL, 'authz_test_image').then((s) => ((scratch.drop = s.drop), { DATABASE_URL: s.url }))
      : { SERVICE_DATA_DIR: 'memory://' };
    // Fixed (free) ports: the health check reads them from the process's settings, as in a container.
    const [cpPort, sidecarPort, probePort, injectorPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const cp = await startProcess('control-plane', { ...database, SERVICE_PORT: String(cpPort), SERVICE_BOOTSTRAP_API_KEY: key, SERVICE_LOG_LEVEL: 'info' }, { built: true });
    running.push(cp);
    await waitFor200(`${cp.url}/healthz`);
    const post = async (path: string, body: unknown) => (await fetch(cp.url + path, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<Record<string, string>>;
    const tenant = await post('/tenants', { name: 'image' });
    const sidecarKey = await post('/api-keys', { name: 'sidecar', kind: 'service', tenantId: tenant.id });
    const sidecar = await startProcess(
      'sidecar',
      {
        SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: sidecarKey.secretKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: String(sidecarPort), SIDECAR_LOG_LEVEL: 'info',
        // as injected (there 0.0.0.0: the kubelet's probes come to the pod's IP)
        SIDECAR_PROBE_HOST: '127.0.0.1', SIDECAR_PROBE_PORT: String(probePort),
      },
      { built: true },
    );
    running.push(sidecar);
    expect(sidecar.url).toBe(`http://127.0.0.1:${sidecarPort}`);
    await waitFor200(`${sidecar.url}/readyz`);
    // The injected sidecar's HTTP probes and scrapes: the probe port, which answers no decision.
    await waitFor200(`http://127.0.0.1:${probePort}/readyz`);
    expect(await (await fetch(`http://127.0.0.1:${probePort}/metrics`)).text()).toMatch(/^authz_sidecar_ready 1$/m);
    expect((await fetch(`http://127.0.0.1:${probePort}/evaluate`, { method: 'POST', body: '{}' })).status).toBe(404);

    const pems = await selfsigned.generate([{ name: 'commonName', value: 'authz-injector.authz.svc' }], { keyType: 'ec', algorithm: 'sha256' });
    writeFileSync(join(certDir, 'tls.crt'), pems.cert);
    writeFileSync(join(certDir, 'tls.key'), pems.private);
    const injector = await startProcess(
      'injector',
      {
        INJECTOR_HOST: '127.0.0.1',
        INJECTOR_PORT: String(injectorPort),
        INJECTOR_TLS_CERT_FILE: join(certDir, 'tls.crt'),
        INJECTOR_TLS_KEY_FILE: join(certDir, 'tls.key'),
        INJECTOR_SIDECAR_IMAGE: 'authz:test',
        INJECTOR_CONTROL_PLANE_URL: cp.url,
        INJECTOR_LOG_LEVEL: 'info',
      },
      { built: true },
    );
    running.push(injector);
    expect(injector.url).toBe(`https://127.0.0.1:${injectorPort}`);

    // The Docker HEALTHCHECK form: find the process, read its settings, ask its /healthz.
    for (const p of [cp, sidecar, injector]) {
      const r = healthcheck('--pid', String(p.child.pid));
      expect(r, `${p.url}`).toEqual({ code: 0, stderr: '' });
    }
    // A URL on loopback (what the plain-container sidecar's postStart wait asks).
    expect(healthcheck(`http://127.0.0.1:${sidecarPort}/readyz`).code).toBe(0);
    // Not answering: exit 1 and why; a bad argument: exit 2.
    const down = healthcheck(`http://127.0.0.1:${await freePort()}/healthz`);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^unhealthy: http:\/\/127\.0\.0\.1:\d+\/healthz: .*ECONNREFUSED/);
    expect(healthcheck('--pid', String(process.pid)).stderr).toMatch(/runs none of the entry points/);
    expect(healthcheck('--wait').code).toBe(2);

    // --wait (the plain-container sidecar's postStart hook) waits for a process that is not up yet.
    const late = await freePort();
    const waiting = new Promise<number | null>((done) => {
      const child = spawn(process.execPath, [join(ROOT, 'dist/cmd/healthcheck/main.js'), '--wait', '30', `http://127.0.0.1:${late}/readyz`], { stdio: 'ignore' });
      child.on('exit', (code) => done(code));
    });
    await new Promise((r) => setTimeout(r, 500));
    const lateSidecar = await startProcess(
      'sidecar',
      { SIDECAR_CONTROL_PLANE_URL: cp.url, SIDECAR_API_KEY: sidecarKey.secretKey, SIDECAR_TENANT_ID: tenant.id, SIDECAR_PORT: String(late), SIDECAR_LOG_LEVEL: 'info' },
      { built: true },
    );
    running.push(lateSidecar);
    expect(await waiting).toBe(0);
  }, 120_000);
});
