/**
 * deploy/ checked as files: the kustomize tree, the manifests it names, and the Dockerfile, so
 * CI needs neither kubectl nor Docker. When kubectl is on PATH, each kustomization is also
 * rendered (`kubectl kustomize`) and the same checks run on what a cluster would receive.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES } from '../../services/control-plane/config.js';

type Json = any;
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: Json;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = join(ROOT, 'deploy');
const NAMESPACE = 'authz';
const APP = 'authz-control-plane';
const CONTAINER = 'control-plane';
const CREDENTIALS_SECRET = 'authz-control-plane-credentials';
/** Replicas each kustomization must produce. A new overlay needs a row here. */
const EXPECTED_REPLICAS: Record<string, number> = { base: 2, 'overlays/dev': 1, 'overlays/production': 3 };
const KNOWN_VARIABLES = new Set(CONFIG_VARIABLES.map((v) => v.variable));
/** Kinds without a namespace (everything else must land in `authz`). */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'CustomResourceDefinition']);

const rel = (p: string) => relative(ROOT, p);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

const YAML_FILES = walk(DEPLOY).filter((f) => /\.ya?ml$/.test(f));

/** Parses every document of a file; throws on any YAML error. `version` 1.1 is how Kubernetes' decoder reads scalars. */
function parseYaml(text: string, where: string, version: '1.1' | '1.2' = '1.2'): Json[] {
  const docs = parseAllDocuments(text, { version, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [];
  for (const d of list) {
    if (d.errors.length > 0) throw new Error(`${where}: ${d.errors.map((e) => e.message).join('; ')}`);
  }
  return list.map((d) => d.toJS()).filter((v) => v !== null && v !== undefined);
}

const parsed = new Map<string, Json[]>(YAML_FILES.map((f) => [f, parseYaml(readFileSync(f, 'utf8'), rel(f))]));
const docsOf = (file: string): Json[] => {
  const docs = parsed.get(file);
  if (!docs) throw new Error(`${rel(file)} is not a YAML file under deploy/`);
  return docs;
};

// ---- the kustomize tree --------------------------------------------------------------------

interface Kustomization {
  dir: string;
  body: Json;
}

const KUSTOMIZATIONS: Kustomization[] = YAML_FILES.filter((f) => basename(f) === 'kustomization.yaml').map((f) => ({
  dir: dirname(f),
  body: docsOf(f)[0],
}));
const kustomizationAt = (dir: string): Kustomization => {
  const k = KUSTOMIZATIONS.find((x) => x.dir === dir);
  if (!k) throw new Error(`no kustomization.yaml in ${rel(dir)}`);
  return k;
};

const isRemote = (p: string) => /^[a-z]+:\/\//i.test(p) || p.startsWith('github.com/');

/** Local paths a kustomization refers to, by role. */
function referencedPaths(k: Kustomization): { role: string; path: string }[] {
  const b = k.body;
  const out: { role: string; path: string }[] = [];
  for (const r of b.resources ?? []) out.push({ role: 'resources', path: r });
  for (const c of b.components ?? []) out.push({ role: 'components', path: c });
  for (const p of b.patches ?? []) if (p.path) out.push({ role: 'patches', path: p.path });
  for (const g of [...(b.configMapGenerator ?? []), ...(b.secretGenerator ?? [])]) {
    for (const f of [...(g.envs ?? []), ...(g.files ?? [])]) out.push({ role: 'generator', path: String(f).replace(/^[^=]*=/, '') });
  }
  return out.filter((r) => !isRemote(r.path)).map((r) => ({ role: r.role, path: resolve(k.dir, r.path) }));
}

/** Resource objects of a kustomization, followed through directories, with its `namespace` applied; patches are not applied. */
function resourcesOf(dir: string): K8sObject[] {
  const k = kustomizationAt(dir);
  const objects: K8sObject[] = [];
  for (const r of k.body.resources ?? []) {
    const path = resolve(dir, r);
    objects.push(...(statSync(path).isDirectory() ? resourcesOf(path) : (docsOf(path) as K8sObject[])));
  }
  for (const g of k.body.configMapGenerator ?? []) {
    if (g.behavior === 'merge' || g.behavior === 'replace') continue;
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: g.name, labels: g.options?.labels },
      data: Object.fromEntries((g.literals ?? []).map((l: string) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])),
    });
  }
  const ns = k.body.namespace;
  return objects.map((o) =>
    ns && !CLUSTER_SCOPED.has(o.kind) ? { ...o, metadata: { ...o.metadata, namespace: ns } } : structuredClone(o),
  );
}

// ---- checks shared by the files and the rendered output -----------------------------------

const find = (objects: K8sObject[], kind: string, name?: string) =>
  objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
function one(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const hits = find(objects, kind, name);
  expect(hits, `exactly one ${kind}${name ? ` ${name}` : ''}`).toHaveLength(1);
  return hits[0];
}
const controlPlane = (objects: K8sObject[]) => {
  const d = one(objects, 'Deployment', APP);
  const c = (d.spec.template.spec.containers as Json[]).find((x) => x.name === CONTAINER);
  expect(c, `container ${CONTAINER}`).toBeDefined();
  return { d, c };
};

/** A probe's or Service's port (number or container port name) as a number. */
function resolvePort(container: Json, port: string | number): number {
  if (typeof port === 'number') return port;
  const hit = (container.ports as Json[]).find((p) => p.name === port);
  expect(hit, `container port named ${port}`).toBeDefined();
  return hit.containerPort;
}

function cpu(q: string | number): number {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(q));
  if (!m) throw new Error(`bad cpu quantity ${q}`);
  return Number(m[1]) / (m[2] ? 1000 : 1);
}
function memory(q: string | number): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`bad memory quantity ${q}`);
  const unit: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? unit[m[2]] : 1);
}

function checkBundle(objects: K8sObject[], expectedReplicas: number) {
  for (const o of objects) {
    expect(typeof o.apiVersion, `apiVersion of ${o.kind}`).toBe('string');
    expect(typeof o.kind).toBe('string');
    expect(typeof o.metadata?.name, `metadata.name of a ${o.kind}`).toBe('string');
    if (!CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name} namespace`).toBe(NAMESPACE);
  }
  expect(one(objects, 'Namespace', NAMESPACE).metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  for (const s of find(objects, 'Secret')) {
    expect(s.data ?? s.stringData, `Secret ${s.metadata.name} must not be committed with values`).toBeUndefined();
  }

  const { d, c } = controlPlane(objects);
  const pod = d.spec.template;
  const port = resolvePort(c, 'http');
  expect(port).toBe(8080);
  expect(d.spec.replicas).toBe(expectedReplicas);

  // selectors: the Deployment's, and every selector aimed at its pods, match its pod labels
  const selector: Record<string, string> = d.spec.selector.matchLabels;
  expect(Object.keys(selector).length).toBeGreaterThan(0);
  expect(pod.metadata.labels).toMatchObject(selector);
  const svc = one(objects, 'Service', APP);
  expect(svc.spec.selector).toEqual(selector);
  expect(pod.metadata.labels).toMatchObject(svc.spec.selector);
  const np = one(objects, 'NetworkPolicy', APP);
  expect(np.spec.podSelector.matchLabels).toEqual(selector);
  for (const pdb of find(objects, 'PodDisruptionBudget')) {
    expect(pdb.spec.selector.matchLabels).toEqual(selector);
    // a budget as large as the replica count blocks every drain
    if (pdb.spec.minAvailable !== undefined) expect(pdb.spec.minAvailable).toBeLessThan(expectedReplicas);
  }
  for (const t of pod.spec.topologySpreadConstraints ?? []) expect(t.labelSelector.matchLabels).toEqual(selector);

  // one port for gRPC (h2c), Connect, REST and the probes
  expect(svc.spec.ports).toHaveLength(1);
  expect(resolvePort(c, svc.spec.ports[0].targetPort)).toBe(port);
  expect(svc.spec.ports[0].appProtocol).toBe('kubernetes.io/h2c');
  expect(c.readinessProbe.httpGet.path).toBe('/readyz');
  expect(resolvePort(c, c.readinessProbe.httpGet.port)).toBe(port);
  expect(c.livenessProbe.httpGet.path).toBe('/healthz');
  expect(resolvePort(c, c.livenessProbe.httpGet.port)).toBe(port);
  expect(c.startupProbe.httpGet.path).toBe('/healthz');
  expect(resolvePort(c, c.startupProbe.httpGet.port)).toBe(port);
  expect(pod.metadata.annotations?.['prometheus.io/scrape']).toBe('true');
  expect(pod.metadata.annotations?.['prometheus.io/path']).toBe('/metrics');
  expect(Number(pod.metadata.annotations?.['prometheus.io/port'])).toBe(port);

  // network policy: this namespace, labelled clients, on the service port only
  expect(np.spec.policyTypes).toEqual(['Ingress']);
  for (const rule of np.spec.ingress) expect(rule.ports.map((p: Json) => resolvePort(c, p.port))).toEqual([port]);
  const peers: Json[] = np.spec.ingress.flatMap((r: Json) => r.from);
  expect(peers).toContainEqual({ podSelector: {} });
  expect(peers).toContainEqual({ namespaceSelector: {}, podSelector: { matchLabels: { 'authz/client': 'true' } } });

  // environment: only variables the service knows; settings from the ConfigMap, secrets from the Secret
  const envNames: string[] = (c.env ?? []).map((e: Json) => e.name);
  const configMaps = (c.envFrom ?? []).map((e: Json) => {
    expect(e.secretRef, 'secrets come one by one through secretKeyRef').toBeUndefined();
    return one(objects, 'ConfigMap', e.configMapRef.name);
  });
  expect(configMaps.length).toBeGreaterThan(0);
  const configData: Record<string, string> = Object.assign({}, ...configMaps.map((m: K8sObject) => m.data));
  for (const name of [...envNames, ...Object.keys(configData)]) {
    expect(KNOWN_VARIABLES, `${name} is not a variable the control plane reads (services/control-plane/config.ts)`).toContain(name);
  }
  for (const v of Object.values(configData)) expect(typeof v).toBe('string');
  expect(Number(configData.SERVICE_PORT)).toBe(port);
  expect(configData.SERVICE_HOST).toBe('0.0.0.0');
  for (const name of ['DATABASE_URL', 'SERVICE_BOOTSTRAP_API_KEY']) {
    const e = (c.env as Json[]).find((x) => x.name === name);
    expect(e?.value, `${name} must not be written into the manifest`).toBeUndefined();
    expect(e?.valueFrom?.secretKeyRef?.name, `${name} from the Secret`).toBe(CREDENTIALS_SECRET);
    expect(configData[name], `${name} must not be in a ConfigMap`).toBeUndefined();
  }
  for (const e of c.env as Json[]) expect(e.value === undefined || !/^postgres/i.test(e.value)).toBe(true);

  // hardening
  expect(pod.spec.automountServiceAccountToken).toBe(false);
  expect(pod.spec.enableServiceLinks).toBe(false);
  expect(one(objects, 'ServiceAccount', pod.spec.serviceAccountName)).toBeDefined();
  expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
  expect(pod.spec.securityContext.runAsUser).toBeGreaterThan(0);
  expect(pod.spec.securityContext.seccompProfile.type).toBe('RuntimeDefault');
  expect(c.securityContext).toMatchObject({
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  });
  const tmp = (c.volumeMounts as Json[]).find((m) => m.mountPath === '/tmp');
  expect(tmp, '/tmp is writable (tsx cache)').toBeDefined();
  expect((pod.spec.volumes as Json[]).find((v) => v.name === tmp.name)?.emptyDir).toBeDefined();
  expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(5);
  expect(pod.spec.topologySpreadConstraints?.length).toBeGreaterThan(0);
  const { requests, limits } = c.resources;
  expect(cpu(requests.cpu)).toBeLessThanOrEqual(cpu(limits.cpu));
  expect(memory(requests.memory)).toBeLessThanOrEqual(memory(limits.memory));

  for (const hpa of find(objects, 'HorizontalPodAutoscaler')) {
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: APP });
    expect(hpa.spec.minReplicas).toBe(expectedReplicas);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics).toContainEqual(expect.objectContaining({ type: 'Resource', resource: expect.objectContaining({ name: 'cpu' }) }));
  }
}

// ---- the files ---------------------------------------------------------------------------

describe('deploy/ YAML files', () => {
  it('finds the kustomizations', () => {
    expect(KUSTOMIZATIONS.map((k) => rel(k.dir)).sort()).toEqual(['deploy/base', 'deploy/base/control-plane', 'deploy/overlays/dev', 'deploy/overlays/production']);
  });

  it.each(YAML_FILES.map(rel))('%s parses, and reads the same as YAML 1.1 (Kubernetes) and 1.2 (kustomize)', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const v12 = parseYaml(text, file, '1.2');
    expect(v12.length).toBeGreaterThan(0);
    // `off`, `yes`, `0755` … mean different things in the two versions: quote them.
    expect(parseYaml(text, file, '1.1')).toEqual(v12);
  });

  it('every path a kustomization names exists, and every YAML file is named by one', () => {
    const named = new Set<string>();
    for (const k of KUSTOMIZATIONS) {
      expect(k.body.apiVersion).toBe('kustomize.config.k8s.io/v1beta1');
      expect(k.body.kind).toBe('Kustomization');
      // deprecated fields that newer kustomize versions drop
      for (const old of ['bases', 'patchesStrategicMerge', 'patchesJson6902', 'commonLabels', 'vars']) expect(k.body[old], `${rel(k.dir)}: ${old}`).toBeUndefined();
      for (const { role, path } of referencedPaths(k)) {
        expect(existsSync(path), `${rel(k.dir)}: ${role} entry ${rel(path)} exists`).toBe(true);
        expect(path.startsWith(DEPLOY + '/'), `${rel(path)} stays inside deploy/`).toBe(true);
        if (statSync(path).isDirectory()) {
          expect(existsSync(join(path, 'kustomization.yaml')), `${rel(path)} has a kustomization.yaml`).toBe(true);
          named.add(join(path, 'kustomization.yaml'));
        } else named.add(path);
      }
    }
    // overlays are the entry points; every other kustomization is included by one
    for (const k of KUSTOMIZATIONS.filter((x) => dirname(x.dir) !== join(DEPLOY, 'overlays'))) {
      expect(named.has(join(k.dir, 'kustomization.yaml')), `${rel(k.dir)} is included by a kustomization`).toBe(true);
    }
    for (const f of YAML_FILES.filter((x) => basename(x) !== 'kustomization.yaml')) {
      expect(named.has(f), `${rel(f)} is named by a kustomization`).toBe(true);
    }
  });

  it('every manifest and patch has apiVersion, kind and metadata.name', () => {
    for (const f of YAML_FILES.filter((x) => basename(x) !== 'kustomization.yaml')) {
      for (const o of docsOf(f)) {
        expect(typeof o.apiVersion, `${rel(f)}: apiVersion`).toBe('string');
        expect(typeof o.kind, `${rel(f)}: kind`).toBe('string');
        expect(typeof o.metadata?.name, `${rel(f)}: metadata.name`).toBe('string');
      }
    }
  });

  it('commits no secret values', () => {
    for (const f of YAML_FILES) {
      for (const o of docsOf(f)) {
        if (o.kind === 'Secret') expect(o.data ?? o.stringData, `${rel(f)}: Secret with values`).toBeUndefined();
      }
      const text = readFileSync(f, 'utf8');
      expect(text, `${rel(f)}: a database URL with a password`).not.toMatch(/postgres(ql)?:\/\/[^\s:@/]+:[^\s@]+@/i);
    }
    for (const k of KUSTOMIZATIONS) {
      for (const g of k.body.secretGenerator ?? []) expect(g.literals, `${rel(k.dir)}: secretGenerator literals`).toBeUndefined();
    }
  });

  it('base: the control plane Deployment, Service, PDB, NetworkPolicy and ConfigMap agree', () => {
    checkBundle(resourcesOf(join(DEPLOY, 'base')), EXPECTED_REPLICAS.base);
  });

  it('base: leaves the database to PostgreSQL and holds no sidecar placeholders', () => {
    const objects = resourcesOf(join(DEPLOY, 'base'));
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    expect(find(objects, 'StatefulSet')).toEqual([]);
  });

  describe.each(['overlays/dev', 'overlays/production'])('%s', (overlay) => {
    const dir = join(DEPLOY, overlay);
    const k = () => kustomizationAt(dir).body;
    const base = () => resourcesOf(join(DEPLOY, 'base'));

    it('builds on the base, in namespace authz, with its replica count', () => {
      expect(k().resources).toContain('../../base');
      expect(k().namespace).toBe(NAMESPACE);
      expect(k().replicas).toEqual([{ name: APP, count: EXPECTED_REPLICAS[overlay] }]);
      expect(find(base(), 'Deployment', APP)).toHaveLength(1);
    });

    it('patches only what the base defines', () => {
      const objects = base();
      for (const p of k().patches ?? []) {
        const targets: { kind: string; name: string }[] = p.path
          ? docsOf(resolve(dir, p.path)).map((o) => ({ kind: o.kind, name: o.metadata.name }))
          : [{ kind: p.target.kind, name: p.target.name }];
        for (const t of targets) expect(find(objects, t.kind, t.name), `patch target ${t.kind}/${t.name}`).toHaveLength(1);
        if (!p.path) continue;
        for (const o of docsOf(resolve(dir, p.path)).filter((x) => x.kind === 'Deployment')) {
          const names = controlPlane(objects).d.spec.template.spec.containers.map((c: Json) => c.name);
          for (const c of o.spec?.template?.spec?.containers ?? []) expect(names, `patched container ${c.name}`).toContain(c.name);
        }
      }
      const images = find(objects, 'Deployment').flatMap((d) => d.spec.template.spec.containers.map((c: Json) => c.image));
      for (const i of k().images ?? []) expect(images).toContain(i.name);
    });

    it('sets only configuration variables the service knows', () => {
      const generators: Json[] = kustomizationAt(join(DEPLOY, 'base/control-plane')).body.configMapGenerator;
      for (const g of k().configMapGenerator ?? []) {
        expect(g.behavior).toBe('merge');
        expect(generators.map((x) => x.name)).toContain(g.name);
        for (const l of g.literals ?? []) expect(KNOWN_VARIABLES).toContain(l.slice(0, l.indexOf('=')));
      }
      for (const p of k().patches ?? []) {
        if (!p.path) continue;
        for (const o of docsOf(resolve(dir, p.path))) {
          for (const c of o.spec?.template?.spec?.containers ?? []) {
            for (const e of c.env ?? []) expect(KNOWN_VARIABLES).toContain(e.name);
          }
        }
      }
    });
  });

  it('production: an HPA on CPU starting at the overlay replica count, and stricter resources than the base', () => {
    const dir = join(DEPLOY, 'overlays/production');
    const hpa = one(resourcesOf(dir), 'HorizontalPodAutoscaler', APP);
    expect(hpa.spec.minReplicas).toBe(EXPECTED_REPLICAS['overlays/production']);
    const patch = docsOf(join(dir, 'deployment-resources.yaml'))[0];
    const prod = patch.spec.template.spec.containers[0].resources;
    const baseRes = controlPlane(resourcesOf(join(DEPLOY, 'base'))).c.resources;
    expect(cpu(prod.requests.cpu)).toBeGreaterThan(cpu(baseRes.requests.cpu));
    // guaranteed memory: never evicted before its limit
    expect(memory(prod.requests.memory)).toBe(memory(prod.limits.memory));
  });
});

// ---- the image ---------------------------------------------------------------------------

describe('deploy/Dockerfile', () => {
  const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  // instructions with continuation lines joined and comments dropped
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = instructions.reduce<string[][]>((acc, l) => {
    if (/^FROM\s/i.test(l)) acc.push([]);
    acc.at(-1)?.push(l);
    return acc;
  }, []);
  const runtime = stages.at(-1) ?? [];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const deployment = () => controlPlane(resourcesOf(join(DEPLOY, 'base')));

  it('builds on node:20-bookworm-slim with production dependencies and no install scripts', () => {
    expect(instructions).toContain('ARG NODE_IMAGE=node:20-bookworm-slim');
    for (const s of stages) expect(s[0]).toMatch(/^FROM \$\{NODE_IMAGE\}( AS \w+)?$/);
    const ci = instructions.find((l) => /\bnpm ci\b/.test(l)) ?? '';
    expect(ci).toMatch(/--omit=dev/);
    expect(ci).toMatch(/--ignore-scripts/);
    expect(pkg.dependencies.tsx, 'tsx runs the service: it must be a runtime dependency').toBeDefined();
  });

  it('--ignore-scripts is safe: the only production package with an install script is esbuild', () => {
    // esbuild's postinstall only checks for its optional platform binary package, which npm
    // installs regardless. A new native addon here needs its script: revisit the Dockerfile.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const withScripts = Object.entries<Json>(lock.packages)
      .filter(([path, p]) => path && p.hasInstallScript && !p.dev)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    expect(withScripts).toEqual(['esbuild']);
  });

  it('runs as the non-root user the Deployment names, on the container port, listening beyond loopback', () => {
    const user = runtime.filter((l) => /^USER\s/i.test(l)).at(-1) ?? '';
    const m = /^USER (\d+):(\d+)$/.exec(user);
    expect(m, 'USER uid:gid, numeric so runAsNonRoot can verify it').not.toBeNull();
    const pod = deployment().d.spec.template.spec;
    expect(Number(m![1])).toBe(pod.securityContext.runAsUser);
    expect(Number(m![2])).toBe(pod.securityContext.runAsGroup);
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(runtime).toContain(`EXPOSE ${resolvePort(deployment().c, 'http')}`);
    const env = runtime.filter((l) => /^ENV\s/i.test(l)).join(' ');
    expect(env).toMatch(/\bSERVICE_HOST=0\.0\.0\.0\b/);
    for (const [, name] of env.matchAll(/\b([A-Z][A-Z0-9_]*)=/g)) {
      if (name !== 'NODE_ENV') expect(KNOWN_VARIABLES, `ENV ${name}`).toContain(name);
    }
  });

  it('starts with node --import tsx on the entry point of `npm start`, in exec form', () => {
    const cmd = runtime.find((l) => /^CMD\s/i.test(l)) ?? '';
    const argv = JSON.parse(cmd.replace(/^CMD\s+/i, ''));
    const entry = /^tsx (\S+)$/.exec(pkg.scripts.start)?.[1];
    expect(entry).toBeDefined();
    expect(argv).toEqual(['node', '--import', 'tsx', entry]);
    expect(runtime.some((l) => /^ENTRYPOINT\s/i.test(l))).toBe(false);
  });

  it('copies proto/, gen/, services/, package*.json and tsconfig.json, and the ignore file lets them through', () => {
    const sources = instructions
      .filter((l) => /^COPY\s/i.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1).filter((a) => !a.startsWith('--')));
    for (const s of ['package.json', 'package-lock.json', 'tsconfig.json', 'proto', 'gen', 'services']) expect(sources).toContain(s);
    const ignore = readFileSync(join(DEPLOY, 'Dockerfile.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(ignore).toContain('*');
    for (const s of new Set(sources)) expect(ignore, `${s} is re-included after '*'`).toContain(`!${s}`);
  });

  it('the image holds everything the control plane imports at run time, and only production dependencies', () => {
    // Walk the static import graph from the entry point: type-only imports are erased by tsx.
    const entry = join(ROOT, 'services/control-plane/main.ts');
    const copied = ['services', 'gen', 'proto'].map((d) => join(ROOT, d) + '/');
    const prod = new Set(Object.keys(pkg.dependencies));
    const builtins = new Set(builtinModules);
    const seen = new Set<string>();
    const packages = new Set<string>();
    const queue = [entry];
    const importRe = /(?:^|[\n;])\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      expect(copied.some((d) => file.startsWith(d)), `${rel(file)} is imported at run time but not copied into the image`).toBe(true);
      expect(file, `${rel(file)}: test files are deleted from the image`).not.toMatch(/\.test\.ts$|\/testdata\//);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(importRe)) {
        if (m[1]) continue;
        const spec = m[2] ?? m[3];
        if (spec.startsWith('.')) {
          const base = resolve(dirname(file), spec);
          const candidates = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')];
          const hit = candidates.find((p) => existsSync(p) && statSync(p).isFile());
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

// ---- rendered by kubectl, when it is installed ---------------------------------------------

const KUBECTL = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).status === 0;

describe.skipIf(!KUBECTL)('kubectl kustomize (kubectl is on PATH)', () => {
  const render = (target: string): K8sObject[] =>
    parseYaml(execFileSync('kubectl', ['kustomize', join(DEPLOY, target)], { encoding: 'utf8', timeout: 60_000 }), `kubectl kustomize ${target}`);

  it.each(Object.keys(EXPECTED_REPLICAS))('%s renders, with the expected replica count and consistent objects', (target) => {
    const objects = render(target);
    checkBundle(objects, EXPECTED_REPLICAS[target]);
    // the generated ConfigMap carries a content hash, and the Deployment refers to that name
    const cm = one(objects, 'ConfigMap');
    expect(cm.metadata.name).toMatch(new RegExp(`^${APP}-[a-z0-9]{10}$`));
    expect(controlPlane(objects).c.envFrom).toEqual([{ configMapRef: { name: cm.metadata.name } }]);
  });

  it('dev: one replica, no disruption budget, debug logs, the local image tag', () => {
    const objects = render('overlays/dev');
    expect(find(objects, 'PodDisruptionBudget')).toEqual([]);
    expect(find(objects, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(one(objects, 'ConfigMap').data.SERVICE_LOG_LEVEL).toBe('debug');
    expect(controlPlane(objects).c.image).toBe('authz-control-plane:dev');
  });

  it('production: HPA, a budget of 2, a hard spread across nodes, a pinned registry image', () => {
    const objects = render('overlays/production');
    expect(one(objects, 'HorizontalPodAutoscaler', APP).metadata.namespace).toBe(NAMESPACE);
    expect(one(objects, 'PodDisruptionBudget', APP).spec.minAvailable).toBe(2);
    const { d, c } = controlPlane(objects);
    const byKey = Object.fromEntries((d.spec.template.spec.topologySpreadConstraints as Json[]).map((t) => [t.topologyKey, t]));
    expect(d.spec.template.spec.topologySpreadConstraints).toHaveLength(2);
    expect(byKey['kubernetes.io/hostname'].whenUnsatisfiable).toBe('DoNotSchedule');
    expect(byKey['topology.kubernetes.io/zone'].whenUnsatisfiable).toBe('ScheduleAnyway');
    expect(c.image).toMatch(/^[a-z0-9.-]+\.[a-z]+\/.+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(c.resources.requests.memory).toBe(c.resources.limits.memory);
  });
});
