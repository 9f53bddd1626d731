/**
 * deploy/ checked as files and as rendered output, so CI needs neither a cluster nor kubectl:
 * the kustomize tree, every object against the Kubernetes schemas (test/deploy/schemas.ts), each
 * entry point (overlays and examples) rendered in-test (test/deploy/kustomize.ts) and checked for
 * what must agree between objects (selectors, ports, Secrets, certificates, the webhook, the
 * injector's settings). When kubectl is on PATH, each entry point is also rendered with
 * `kubectl kustomize` and must equal the in-test rendering.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonpatch from 'fast-json-patch';
import { Pod } from 'kubernetes-models/v1/Pod';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../services/control-plane/config.js';
import { CONTROL_PLANE_NODE_FLAGS } from '../../services/control-plane/node-flags.js';
import { INJECTOR_VARIABLES, loadInjectorConfig } from '../../services/injector/config.js';
import { ANNOTATIONS, CA_FILE, INJECTED_LABEL, INJECTED_LABEL_VALUE, PROBE_PORT_NAME, SIDECAR_CONTAINER, SYSTEM_NAMESPACES, parseAnnotations, review } from '../../services/injector/inject.js';
import { CLUSTER_SCOPED, kustomize, podSpecOf, type K8sObject } from './kustomize.js';
import { validateObjects } from './schemas.js';

type Json = any;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = join(ROOT, 'deploy');
const NAMESPACE = 'authz';
const CP = 'authz-control-plane';
const INJECTOR = 'authz-injector';
const DATABASE = 'authz-pg';
const CREDENTIALS_SECRET = 'authz-control-plane-credentials';
const INJECTION_LABEL = 'authz.io/injection';
/** Entry points (what users `kubectl apply -k`) and the control-plane and injector replicas each must produce. */
const SERVICE_ENTRIES: Record<string, { controlPlane: number; injector: number; database: number }> = {
  base: { controlPlane: 2, injector: 2, database: 3 },
  'overlays/dev': { controlPlane: 1, injector: 1, database: 1 },
  'overlays/production': { controlPlane: 3, injector: 2, database: 3 },
};
const EXAMPLES = ['examples/app'];
const KNOWN_CP_VARIABLES = new Set(CONFIG_VARIABLES.map((v) => v.variable));
const KNOWN_INJECTOR_VARIABLES = new Set(INJECTOR_VARIABLES.map((v) => v.variable));

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
const KUSTOMIZATIONS: Kustomization[] = YAML_FILES.filter((f) => basename(f) === 'kustomization.yaml').map((f) => ({ dir: dirname(f), body: docsOf(f)[0] }));
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
/** Files that hold whole objects (named under `resources`), as opposed to patches. */
const RESOURCE_FILES = KUSTOMIZATIONS.flatMap((k) => referencedPaths(k).filter((r) => r.role === 'resources' && statSync(r.path).isFile()).map((r) => r.path));

const rendered = new Map<string, K8sObject[]>();
/** An entry point rendered in-test (fresh copies each call, so tests may change them). */
const render = (target: string): K8sObject[] => {
  if (!rendered.has(target)) rendered.set(target, kustomize(join(DEPLOY, target)));
  return structuredClone(rendered.get(target)!);
};

// ---- helpers over rendered objects ---------------------------------------------------------

const find = (objects: K8sObject[], kind: string, name?: string) => objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
function one(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const hits = find(objects, kind, name);
  expect(hits, `exactly one ${kind}${name ? ` ${name}` : ''}`).toHaveLength(1);
  return hits[0];
}
function workload(objects: K8sObject[], name: string, container: string) {
  const d = one(objects, 'Deployment', name);
  const c = (d.spec.template.spec.containers as Json[]).find((x) => x.name === container);
  expect(c, `container ${container} of ${name}`).toBeDefined();
  return { d, c, pod: d.spec.template };
}
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
/** The data of the ConfigMaps a container reads through envFrom. */
function configOf(objects: K8sObject[], c: Json): Record<string, string> {
  const maps = (c.envFrom ?? []).map((e: Json) => {
    expect(e.secretRef, 'secrets come one by one through secretKeyRef').toBeUndefined();
    return one(objects, 'ConfigMap', e.configMapRef.name);
  });
  expect(maps.length).toBeGreaterThan(0);
  return Object.assign({}, ...maps.map((m: K8sObject) => m.data));
}
/** The hardening every pod of the service gets (restricted Pod Security, read-only, no token). */
function checkHardening(pod: Json, c: Json, objects: K8sObject[]) {
  expect(pod.spec.automountServiceAccountToken).toBe(false);
  expect(pod.spec.enableServiceLinks).toBe(false);
  expect(one(objects, 'ServiceAccount', pod.spec.serviceAccountName).automountServiceAccountToken).toBe(false);
  expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } });
  expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  const { requests, limits } = c.resources;
  expect(cpu(requests.cpu)).toBeLessThanOrEqual(cpu(limits.cpu));
  expect(memory(requests.memory)).toBeLessThanOrEqual(memory(limits.memory));
  expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(5);
  // `node [V8 flags] dist/<entry>.js`, an entry point the build makes (test/deploy/image.test.ts runs them)
  expect(c.command[0]).toBe('node');
  const script: string = c.command.at(-1);
  for (const flag of c.command.slice(1, -1)) expect(flag).toMatch(/^--[a-z-]+$/);
  expect(script).toMatch(/^dist\/.+\.js$/);
  expect(existsSync(join(ROOT, script.replace(/^dist\//, '').replace(/\.js$/, '.ts'))), `${script} has a source`).toBe(true);
}
/** A Certificate's Secret mounted (readable by the pod's group only) where a process reads its pair. */
function checkCertificateMount(pod: Json, c: Json, cert: K8sObject, certFile: string, keyFile: string) {
  const mount = (c.volumeMounts as Json[]).find((m) => m.mountPath === dirname(certFile));
  expect(mount, `a volume at ${dirname(certFile)}`).toBeDefined();
  expect(mount.readOnly).toBe(true);
  expect(dirname(keyFile)).toBe(mount.mountPath);
  expect([basename(certFile), basename(keyFile)]).toEqual(['tls.crt', 'tls.key']);
  const volume = (pod.spec.volumes as Json[]).find((v) => v.name === mount.name);
  expect(volume.secret.secretName).toBe(cert.spec.secretName);
  expect(volume.secret.defaultMode).toBe(0o440);
  expect(pod.spec.securityContext.fsGroup).toBe(pod.spec.securityContext.runAsGroup);
}
function checkSelectors(objects: K8sObject[], d: K8sObject, names: { service: string; networkPolicy: string; pdb?: string }) {
  const selector: Record<string, string> = d.spec.selector.matchLabels;
  expect(Object.keys(selector).length).toBeGreaterThan(0);
  expect(d.spec.template.metadata.labels).toMatchObject(selector);
  expect(one(objects, 'Service', names.service).spec.selector).toEqual(selector);
  expect(one(objects, 'NetworkPolicy', names.networkPolicy).spec.podSelector.matchLabels).toEqual(selector);
  for (const pdb of find(objects, 'PodDisruptionBudget', names.pdb)) {
    expect(pdb.spec.selector.matchLabels).toEqual(selector);
    expect(pdb.spec.minAvailable, 'a budget as large as the replica count blocks every drain').toBeLessThan(d.spec.replicas);
  }
  for (const t of d.spec.template.spec.topologySpreadConstraints ?? []) expect(t.labelSelector.matchLabels).toEqual(selector);
}

// ---- what must agree in a rendering of the service ------------------------------------------

function checkService(objects: K8sObject[], expected: { controlPlane: number; injector: number; database: number }) {
  for (const o of objects) {
    if (!CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name} namespace`).toBe(NAMESPACE);
  }
  expect(one(objects, 'Namespace', NAMESPACE).metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  for (const s of find(objects, 'Secret')) expect(s.data ?? s.stringData, `Secret ${s.metadata.name} must not be committed with values`).toBeUndefined();

  // the database: a CloudNativePG Cluster whose app Secret is the control plane's DATABASE_URL
  const cluster = one(objects, 'Cluster', DATABASE);
  expect(cluster.apiVersion).toBe('postgresql.cnpg.io/v1');
  expect(cluster.spec.instances).toBe(expected.database);
  expect(cluster.spec.bootstrap.initdb).toMatchObject({ database: 'authz', owner: 'authz' });
  const { d: cpDeployment, c: cp, pod: cpPod } = workload(objects, CP, 'control-plane');
  const env = (name: string) => (cp.env as Json[]).find((e) => e.name === name);
  expect(env('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: `${DATABASE}-app`, key: 'uri', optional: false });
  expect(env('SERVICE_BOOTSTRAP_API_KEY')?.valueFrom?.secretKeyRef).toEqual({ name: CREDENTIALS_SECRET, key: 'bootstrap-api-key', optional: false });
  for (const e of cp.env as Json[]) expect(e.value === undefined || !/^postgres/i.test(e.value), `${e.name} holds no database URL`).toBe(true);
  // enough connections for every replica the HPA may run, plus one surging (10 each)
  const maxReplicas = Math.max(expected.controlPlane, ...find(objects, 'HorizontalPodAutoscaler').map((h) => h.spec.maxReplicas));
  expect(Number(cluster.spec.postgresql.parameters.max_connections)).toBeGreaterThanOrEqual((maxReplicas + 1) * 10 + 10);

  // the control plane
  expect(cpDeployment.spec.replicas).toBe(expected.controlPlane);
  checkHardening(cpPod, cp, objects);
  expect(cp.command).toEqual(['node', ...CONTROL_PLANE_NODE_FLAGS, 'dist/cmd/control-plane/main.js']);
  checkSelectors(objects, cpDeployment, { service: CP, networkPolicy: CP, pdb: CP });
  const cpPort = resolvePort(cp, 'https');
  const cpService = one(objects, 'Service', CP);
  expect(cpService.spec.ports).toHaveLength(1);
  expect(resolvePort(cp, cpService.spec.ports[0].targetPort)).toBe(cpPort);
  // TLS on the one port: probes, scrapes and meshes speak it too
  expect(cpService.spec.ports[0].appProtocol).toBe('https');
  expect(cp.readinessProbe.httpGet.path).toBe('/readyz');
  expect(cp.livenessProbe.httpGet.path).toBe('/healthz');
  expect(cp.startupProbe.httpGet.path).toBe('/healthz');
  for (const p of [cp.readinessProbe, cp.livenessProbe, cp.startupProbe]) {
    expect(resolvePort(cp, p.httpGet.port)).toBe(cpPort);
    expect(p.httpGet.scheme, 'the control plane\'s probes speak TLS').toBe('HTTPS');
  }
  expect(cpPod.metadata.annotations?.['prometheus.io/scrape']).toBe('true');
  expect(cpPod.metadata.annotations?.['prometheus.io/scheme']).toBe('https');
  expect(Number(cpPod.metadata.annotations?.['prometheus.io/port'])).toBe(cpPort);
  const cpConfig = configOf(objects, cp);
  for (const name of [...(cp.env as Json[]).map((e) => e.name), ...Object.keys(cpConfig)]) {
    expect(KNOWN_CP_VARIABLES, `${name} is not a variable the control plane reads (services/control-plane/config.ts)`).toContain(name);
  }
  expect(Number(cpConfig.SERVICE_PORT)).toBe(cpPort);
  expect(cpConfig.SERVICE_HOST).toBe('0.0.0.0');
  for (const name of ['DATABASE_URL', 'SERVICE_BOOTSTRAP_API_KEY']) expect(cpConfig[name], `${name} must not be in a ConfigMap`).toBeUndefined();
  const tmp = (cp.volumeMounts as Json[]).find((m) => m.mountPath === '/tmp');
  expect((cpPod.spec.volumes as Json[]).find((v) => v.name === tmp?.name)?.emptyDir, '/tmp is writable').toBeDefined();
  // it serves TLS: cert-manager's Secret mounted where SERVICE_TLS_CERT_FILE and SERVICE_TLS_KEY_FILE point
  const cpCert = one(objects, 'Certificate', CP);
  const cpSettings = loadConfig(cpConfig, []);
  expect(cpSettings.tlsCertFile, 'SERVICE_TLS_CERT_FILE: the control plane serves TLS').toBeDefined();
  checkCertificateMount(cpPod, cp, cpCert, cpSettings.tlsCertFile!, cpSettings.tlsKeyFile!);
  expect(cpCert.spec.usages).toContain('server auth');

  // who may reach the control plane: its namespace, labelled clients, and injected sidecars
  const np = one(objects, 'NetworkPolicy', CP);
  expect(np.spec.policyTypes).toEqual(['Ingress']);
  for (const rule of np.spec.ingress) expect(rule.ports.map((p: Json) => resolvePort(cp, p.port))).toEqual([cpPort]);
  const peers: Json[] = np.spec.ingress.flatMap((r: Json) => r.from);
  expect(peers).toContainEqual({ podSelector: {} });
  expect(peers).toContainEqual({ namespaceSelector: {}, podSelector: { matchLabels: { 'authz/client': 'true' } } });
  const webhook = one(objects, 'MutatingWebhookConfiguration').webhooks[0];
  expect(peers).toContainEqual({
    namespaceSelector: { matchLabels: webhook.namespaceSelector.matchLabels },
    podSelector: { matchLabels: { [INJECTED_LABEL]: INJECTED_LABEL_VALUE } },
  });

  // the injector
  const { d: injDeployment, c: inj, pod: injPod } = workload(objects, INJECTOR, 'injector');
  expect(injDeployment.spec.replicas).toBe(expected.injector);
  checkHardening(injPod, inj, objects);
  checkSelectors(objects, injDeployment, { service: INJECTOR, networkPolicy: INJECTOR, pdb: INJECTOR });
  expect(inj.image, 'one image for every part').toBe(cp.image);
  const injConfig = configOf(objects, inj);
  for (const name of [...(inj.env as Json[]).map((e) => e.name), ...Object.keys(injConfig)]) {
    expect(KNOWN_INJECTOR_VARIABLES, `${name} is not a variable the injector reads (services/injector/config.ts)`).toContain(name);
  }
  expect((inj.env as Json[]).find((e) => e.name === 'INJECTOR_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
  const settings = loadInjectorConfig({ ...injConfig, INJECTOR_NAMESPACE: NAMESPACE }, []);
  expect(settings.sidecarImage, 'INJECTOR_SIDECAR_IMAGE is the image this rendering runs').toBe(inj.image);
  const injPort = resolvePort(inj, 'https');
  expect(settings.port).toBe(injPort);
  expect(inj.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
  expect(inj.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
  expect(inj.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
  // sidecars reach the control plane through its Service, over TLS, by a name its certificate holds
  const cpUrl = new URL(settings.controlPlaneUrl);
  expect(cpUrl.protocol, 'INJECTOR_CONTROL_PLANE_URL is https://').toBe('https:');
  expect(cpUrl.hostname).toBe(`${CP}.${NAMESPACE}.svc`);
  expect(Number(cpUrl.port)).toBe(cpService.spec.ports[0].port);
  expect(cpCert.spec.dnsNames).toContain(cpUrl.hostname);

  // the certificate: issued by cert-manager into the Secret the injector mounts where it reads it
  const cert = one(objects, 'Certificate', INJECTOR);
  checkCertificateMount(injPod, inj, cert, settings.tlsCertFile, settings.tlsKeyFile);
  const injService = one(objects, 'Service', INJECTOR);
  expect(cert.spec.dnsNames).toContain(`${INJECTOR}.${NAMESPACE}.svc`);
  // a CA of its own signs the serving certificate (the caBundle survives renewals)
  const issuer = one(objects, 'Issuer', cert.spec.issuerRef.name);
  const ca = one(objects, 'Certificate', find(objects, 'Certificate').find((c) => c.spec.secretName === issuer.spec.ca?.secretName)?.metadata.name);
  expect(ca.spec.isCA).toBe(true);
  expect(one(objects, 'Issuer', ca.spec.issuerRef.name).spec.selfSigned).toEqual({});
  // and the control plane's: the `ca.crt` of the injector's Secret is the CA the sidecars are given
  expect(cpCert.spec.issuerRef, 'one CA signs the injector\'s and the control plane\'s certificates').toEqual(cert.spec.issuerRef);
  expect(settings.controlPlaneCaFile, 'INJECTOR_CONTROL_PLANE_CA_FILE: sidecars get the CA').toBe(join(dirname(settings.tlsCertFile), 'ca.crt'));

  // the webhook: calls the injector's Service over TLS it trusts through cert-manager
  const mwc = one(objects, 'MutatingWebhookConfiguration');
  expect(mwc.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(`${NAMESPACE}/${cert.metadata.name}`);
  expect(mwc.webhooks).toHaveLength(1);
  expect(webhook.clientConfig.service).toMatchObject({ name: INJECTOR, namespace: NAMESPACE, path: '/mutate' });
  const servicePort = (injService.spec.ports as Json[]).find((p) => p.port === webhook.clientConfig.service.port);
  expect(servicePort, 'the webhook port is a port of the Service').toBeDefined();
  expect(resolvePort(inj, servicePort.targetPort)).toBe(injPort);
  expect(webhook.clientConfig.caBundle, 'cainjector fills caBundle').toBeUndefined();
  expect(webhook).toMatchObject({ admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Ignore', reinvocationPolicy: 'Never' });
  expect(webhook.timeoutSeconds).toBeLessThanOrEqual(10);
  expect(webhook.rules).toEqual([{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }]);
  expect(webhook.namespaceSelector.matchLabels).toEqual({ [INJECTION_LABEL]: 'enabled' });
  expect(webhook.namespaceSelector.matchExpressions).toEqual([
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...SYSTEM_NAMESPACES, NAMESPACE] },
  ]);
  // the API server may reach the injector from anywhere, on its port only
  const injNp = one(objects, 'NetworkPolicy', INJECTOR);
  expect(injNp.spec.ingress).toEqual([{ ports: [{ protocol: 'TCP', port: injPort }] }]);
  // and no other policy: app namespaces (where sidecars take probes and scrapes) are not restricted here
  expect(find(objects, 'NetworkPolicy').map((n) => n.metadata.name).sort()).toEqual([CP, INJECTOR]);
}

// ---- the files ---------------------------------------------------------------------------

describe('deploy/ YAML files', () => {
  it('finds the kustomizations', () => {
    expect(KUSTOMIZATIONS.map((k) => rel(k.dir)).sort()).toEqual([
      'deploy/base',
      'deploy/base/ca',
      'deploy/base/control-plane',
      'deploy/base/database',
      'deploy/base/injector',
      'deploy/examples/app',
      'deploy/overlays/dev',
      'deploy/overlays/production',
    ]);
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
    // overlays and examples are the entry points; every other kustomization is included by one
    const entries = [...Object.keys(SERVICE_ENTRIES), ...EXAMPLES].filter((e) => e !== 'base').map((e) => join(DEPLOY, e));
    for (const k of KUSTOMIZATIONS.filter((x) => !entries.includes(x.dir))) {
      expect(named.has(join(k.dir, 'kustomization.yaml')), `${rel(k.dir)} is included by a kustomization`).toBe(true);
    }
    for (const f of YAML_FILES.filter((x) => basename(x) !== 'kustomization.yaml')) expect(named.has(f), `${rel(f)} is named by a kustomization`).toBe(true);
  });

  it('commits no secret values', () => {
    for (const f of YAML_FILES) {
      for (const o of docsOf(f)) {
        if (o.kind === 'Secret') expect(o.data ?? o.stringData, `${rel(f)}: Secret with values`).toBeUndefined();
      }
      expect(readFileSync(f, 'utf8'), `${rel(f)}: a database URL with a password`).not.toMatch(/postgres(ql)?:\/\/[^\s:@/]+:[^\s@]+@/i);
    }
    for (const k of KUSTOMIZATIONS) {
      for (const g of k.body.secretGenerator ?? []) expect(g.literals, `${rel(k.dir)}: secretGenerator literals`).toBeUndefined();
    }
  });

  it('every object in a file, and every object of every rendering, is valid against the Kubernetes schemas', async () => {
    const items = [
      ...RESOURCE_FILES.flatMap((f) => docsOf(f).map((object: K8sObject) => ({ where: rel(f), object }))),
      ...[...Object.keys(SERVICE_ENTRIES), ...EXAMPLES].flatMap((e) => render(e).map((object) => ({ where: `kustomize deploy/${e}:`, object }))),
    ];
    expect(items.length).toBeGreaterThan(50);
    expect(await validateObjects(items)).toEqual([]);
  });

  it('the schema check refuses what the API server would (a test of the test)', async () => {
    const objects = render('overlays/production');
    const broken = (mutate: (o: K8sObject) => void, kind: string, name?: string) => {
      const o = structuredClone(one(objects, kind, name));
      mutate(o);
      return { where: 'broken', object: o };
    };
    const problems = await validateObjects([
      broken((o) => (o.spec.template.spec.containers[0].restartpolicy = 'Always'), 'Deployment', INJECTOR),
      broken((o) => (o.spec.replicas = '2'), 'Deployment', CP),
      broken((o) => (o.webhooks[0].sideEffect = 'None'), 'MutatingWebhookConfiguration'),
      broken((o) => delete o.spec.secretName, 'Certificate', INJECTOR),
      broken((o) => (o.spec.storage.size = 'ten gigs'), 'Cluster'),
      broken((o) => delete o.spec.instances, 'Cluster'),
      broken((o) => (o.apiVersion = 'v1'), 'Cluster'),
    ]);
    expect(problems.join('\n')).toMatch(/restartpolicy/);
    expect(problems.join('\n')).toMatch(/replicas must be integer/);
    expect(problems.join('\n')).toMatch(/sideEffect/);
    expect(problems.join('\n')).toMatch(/Certificate\/authz-injector: .*secretName/);
    expect(problems.join('\n')).toMatch(/spec\.storage\.size must be a quantity/);
    expect(problems.join('\n')).toMatch(/spec\.instances is required/);
    expect(problems.join('\n')).toMatch(/v1 has no kind Cluster/);
  });
});

// ---- the rendered service ------------------------------------------------------------------

describe.each(Object.keys(SERVICE_ENTRIES))('kustomize deploy/%s', (entry) => {
  it('renders the database, the control plane and the injector, consistent with one another', () => {
    checkService(render(entry), SERVICE_ENTRIES[entry]);
  });

  it('generated ConfigMaps carry a content hash, and the Deployments refer to that name', () => {
    const objects = render(entry);
    for (const [name, container] of [
      [CP, 'control-plane'],
      [INJECTOR, 'injector'],
    ]) {
      const cm = find(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith(`${name}-`))!;
      expect(cm.metadata.name).toMatch(new RegExp(`^${name}-[a-z0-9]{10}$`));
      expect(workload(objects, name, container).c.envFrom).toEqual([{ configMapRef: { name: cm.metadata.name } }]);
    }
  });
});

describe('overlays', () => {
  describe.each(['overlays/dev', 'overlays/production'])('%s', (overlay) => {
    const dir = join(DEPLOY, overlay);
    const k = () => kustomizationAt(dir).body;
    it('builds on the base, in namespace authz, and patches only what the base defines', () => {
      expect(k().resources).toContain('../../base');
      expect(k().namespace).toBe(NAMESPACE);
      const base = render('base');
      for (const p of k().patches ?? []) {
        const targets: { kind: string; name: string }[] = p.path
          ? docsOf(resolve(dir, p.path)).map((o) => ({ kind: o.kind, name: o.metadata.name }))
          : [{ kind: p.target.kind, name: p.target.name }];
        for (const t of targets) expect(find(base, t.kind, t.name), `patch target ${t.kind}/${t.name}`).toHaveLength(1);
      }
      const images = find(base, 'Deployment').flatMap((d) => d.spec.template.spec.containers.map((c: Json) => c.image));
      for (const i of k().images ?? []) expect(images).toContain(i.name);
    });

    it('sets only configuration variables the service knows', () => {
      for (const g of k().configMapGenerator ?? []) {
        expect(g.behavior).toBe('merge');
        const known = g.name === CP ? KNOWN_CP_VARIABLES : g.name === INJECTOR ? KNOWN_INJECTOR_VARIABLES : new Set<string>();
        for (const l of g.literals ?? []) expect(known, `${g.name}: ${l}`).toContain(l.slice(0, l.indexOf('=')));
      }
    });
  });

  it('dev: one replica each, no disruption budgets, a one-instance database, debug logs, the local image', () => {
    const objects = render('overlays/dev');
    expect(find(objects, 'PodDisruptionBudget')).toEqual([]);
    expect(find(objects, 'HorizontalPodAutoscaler')).toEqual([]);
    expect(one(objects, 'Cluster', DATABASE).spec).toMatchObject({ instances: 1, enablePDB: false });
    const { c } = workload(objects, CP, 'control-plane');
    expect(configOf(objects, c).SERVICE_LOG_LEVEL).toBe('debug');
    expect(c.image).toBe('authz:dev');
  });

  it('production: HPA, budgets, a hard spread across nodes, a pinned registry image for every part and the sidecars', () => {
    const objects = render('overlays/production');
    const hpa = one(objects, 'HorizontalPodAutoscaler', CP);
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: CP });
    expect(hpa.spec.minReplicas).toBe(SERVICE_ENTRIES['overlays/production'].controlPlane);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(one(objects, 'PodDisruptionBudget', CP).spec.minAvailable).toBe(2);
    expect(one(objects, 'PodDisruptionBudget', INJECTOR).spec.minAvailable).toBe(1);
    const { d, c } = workload(objects, CP, 'control-plane');
    const byKey = Object.fromEntries((d.spec.template.spec.topologySpreadConstraints as Json[]).map((t) => [t.topologyKey, t]));
    expect(byKey['kubernetes.io/hostname'].whenUnsatisfiable).toBe('DoNotSchedule');
    expect(byKey['topology.kubernetes.io/zone'].whenUnsatisfiable).toBe('ScheduleAnyway');
    expect(c.image).toMatch(/^[a-z0-9.-]+\.[a-z]+\/.+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(c.resources.requests.memory).toBe(c.resources.limits.memory);
    const base = workload(render('base'), CP, 'control-plane').c.resources;
    expect(cpu(c.resources.requests.cpu)).toBeGreaterThan(cpu(base.requests.cpu));
  });
});

// ---- TLS between sidecars and the control plane -------------------------------------------

describe('a rendering without TLS on the Watch stream fails the checks (a test of the test)', () => {
  const configMap = (objects: K8sObject[], name: string) => find(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith(`${name}-`))!;
  const controlPlane = (objects: K8sObject[]) => workload(objects, CP, 'control-plane');
  it.each([
    ['the control plane without its certificate files', (o: K8sObject[]) => {
      delete configMap(o, CP).data.SERVICE_TLS_CERT_FILE;
      delete configMap(o, CP).data.SERVICE_TLS_KEY_FILE;
    }],
    ['sidecars sent to http://', (o: K8sObject[]) => {
      configMap(o, INJECTOR).data.INJECTOR_CONTROL_PLANE_URL = 'http://authz-control-plane.authz.svc:8080';
      delete configMap(o, INJECTOR).data.INJECTOR_CONTROL_PLANE_CA_FILE;
    }],
    ['sidecars given no CA', (o: K8sObject[]) => void delete configMap(o, INJECTOR).data.INJECTOR_CONTROL_PLANE_CA_FILE],
    ['plain-text probes', (o: K8sObject[]) => void delete controlPlane(o).c.livenessProbe.httpGet.scheme],
    ['an h2c Service', (o: K8sObject[]) => void (one(o, 'Service', CP).spec.ports[0].appProtocol = 'kubernetes.io/h2c')],
    ['the certificate not mounted', (o: K8sObject[]) => void (controlPlane(o).c.volumeMounts = controlPlane(o).c.volumeMounts.filter((m: Json) => m.mountPath === '/tmp'))],
    ['the certificate without the name sidecars use', (o: K8sObject[]) => void (one(o, 'Certificate', CP).spec.dnsNames = [`${CP}.${NAMESPACE}.svc.cluster.local`])],
    ['the certificate from a CA the sidecars are not given', (o: K8sObject[]) => void (one(o, 'Certificate', CP).spec.issuerRef.name = 'authz-selfsigned')],
  ])('%s', (_, mutate) => {
    const objects = render('base');
    checkService(structuredClone(objects), SERVICE_ENTRIES.base);
    mutate(objects);
    expect(() => checkService(objects, SERVICE_ENTRIES.base)).toThrow();
  });
});

// ---- the example app ---------------------------------------------------------------------

describe('deploy/examples/app', () => {
  const objects = () => render('examples/app');
  const injectorConfig = () => loadInjectorConfig({ ...configOf(render('base'), workload(render('base'), INJECTOR, 'injector').c), INJECTOR_NAMESPACE: NAMESPACE }, []);

  it('lives in its own namespace, labelled for injection and enforcing restricted Pod Security', () => {
    const ns = one(objects(), 'Namespace');
    const webhook = one(render('base'), 'MutatingWebhookConfiguration').webhooks[0];
    expect(ns.metadata.labels).toMatchObject(webhook.namespaceSelector.matchLabels);
    expect(ns.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(webhook.namespaceSelector.matchExpressions[0].values).not.toContain(ns.metadata.name);
    for (const o of objects()) if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe(ns.metadata.name);
  });

  it('is annotated for injection with valid settings, and its injected pod is a valid pod', () => {
    const d = one(objects(), 'Deployment');
    const annotations = d.spec.template.metadata.annotations;
    expect(annotations[ANNOTATIONS.inject]).toBe('true');
    expect(parseAnnotations(annotations, injectorConfig())).toHaveProperty('settings');
    // what the API server would send for a pod of this Deployment
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...d.spec.template.metadata, generateName: `${d.metadata.name}-` }, spec: d.spec.template.spec };
    const request = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { uid: 'example', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', namespace: d.metadata.namespace, object: pod },
    };
    // the injector reads the CA from INJECTOR_CONTROL_PLANE_CA_FILE; any PEM stands for it here
    const caPem = '-----BEGIN CERTIFICATE-----\nTUlJQg==\n-----END CERTIFICATE-----\n';
    const answer = review(request, injectorConfig(), caPem);
    expect(answer.outcome).toBe('injected');
    const injected = jsonpatch.applyPatch(structuredClone(pod), JSON.parse(Buffer.from(answer.review.response!.patch!, 'base64').toString()), true).newDocument;
    new Pod(injected).validate();
    const sidecar = injected.spec.initContainers.find((c: Json) => c.name === SIDECAR_CONTAINER);
    expect(sidecar.resources.limits.memory).toBe('256Mi');
    // it follows the control plane over TLS, verified with the CA the injector copied into the pod
    const sidecarEnv = Object.fromEntries((sidecar.env as Json[]).map((e) => [e.name, e.value]));
    expect(new URL(sidecarEnv.SIDECAR_CONTROL_PLANE_URL).protocol).toBe('https:');
    expect(sidecarEnv.SIDECAR_CONTROL_PLANE_CA_FILE).toBe(CA_FILE);
    expect(injected.metadata.annotations[ANNOTATIONS.controlPlaneCa]).toBe(caPem);
    const caMount = (sidecar.volumeMounts as Json[]).find((m) => m.mountPath === dirname(CA_FILE));
    expect((injected.spec.volumes as Json[]).find((v) => v.name === caMount.name).downwardAPI.items)
      .toEqual([{ path: basename(CA_FILE), fieldRef: { fieldPath: `metadata.annotations['${ANNOTATIONS.controlPlaneCa}']` } }]);
    // volume types the restricted Pod Security Standard allows
    const allowed = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
    for (const v of injected.spec.volumes as Json[]) expect(Object.keys(v).filter((k) => k !== 'name').every((k) => allowed.includes(k)), v.name).toBe(true);
    // the kubelet's probes (and Prometheus) reach the sidecar's probe listener on the pod's IP by
    // its named port; decisions stay on loopback, on a port no container declares
    const env = Object.fromEntries((sidecar.env as Json[]).map((e) => [e.name, e.value]));
    const probePort = resolvePort(sidecar, PROBE_PORT_NAME);
    expect([Number(env.SIDECAR_PROBE_PORT), env.SIDECAR_PROBE_HOST, env.SIDECAR_HOST]).toEqual([probePort, '0.0.0.0', '127.0.0.1']);
    for (const probe of [sidecar.startupProbe, sidecar.readinessProbe, sidecar.livenessProbe]) {
      expect(probe.exec).toBeUndefined();
      expect(resolvePort(sidecar, probe.httpGet.port)).toBe(probePort);
    }
    expect([sidecar.startupProbe.httpGet.path, sidecar.readinessProbe.httpGet.path, sidecar.livenessProbe.httpGet.path]).toEqual(['/readyz', '/readyz', '/healthz']);
    const declared = [...injected.spec.initContainers, ...injected.spec.containers].flatMap((c: Json) => (c.ports ?? []).map((p: Json) => p.containerPort));
    expect(declared).not.toContain(Number(env.SIDECAR_PORT));
    // The service's NetworkPolicies live in namespace authz and select its own pods only (checkService);
    // none under deploy/ restricts an app namespace, so nothing here blocks the kubelet or Prometheus.
    expect(find(objects(), 'NetworkPolicy')).toEqual([]);
    // restricted Pod Security holds for the injected pod: every container non-root, no escalation, no capabilities
    for (const c of [...injected.spec.initContainers, ...injected.spec.containers]) {
      expect(c.securityContext?.allowPrivilegeEscalation, c.name).toBe(false);
      expect(c.securityContext?.capabilities?.drop, c.name).toEqual(['ALL']);
      expect(c.securityContext?.runAsNonRoot ?? injected.spec.securityContext?.runAsNonRoot, c.name).toBe(true);
    }
    expect(podSpecOf(d)?.containers[0].command.join(' ')).toMatch(/\$AUTHZ_URL\/evaluate/);
  });
});

// ---- rendered by kubectl, when it is installed ---------------------------------------------

/** kubectl with kustomize v5 (Debian's kubernetes-client 1.20 embeds kustomize v2, which reads none of this). */
const KUBECTL = (() => {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return r.status === 0 && /Kustomize Version: v([5-9]|\d{2,})\./.test(r.stdout);
})();

describe.skipIf(!KUBECTL)('kubectl kustomize (kubectl with kustomize v5 is on PATH)', () => {
  const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  it.each([...Object.keys(SERVICE_ENTRIES), ...EXAMPLES])('deploy/%s renders exactly as in-test', (entry) => {
    const objects = parseYaml(execFileSync('kubectl', ['kustomize', join(DEPLOY, entry)], { encoding: 'utf8', timeout: 60_000 }), `kubectl kustomize ${entry}`);
    expect(Object.fromEntries(render(entry).map((o) => [key(o), o]))).toEqual(Object.fromEntries(objects.map((o) => [key(o), o])));
  });
});
