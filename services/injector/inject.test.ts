/**
 * The injector's decision on real `admission.k8s.io/v1` AdmissionReview documents (testdata/):
 * each answer's base64 JSONPatch is applied with fast-json-patch to the pod the API server sent,
 * and the resulting pod is checked, including against the Kubernetes schema (kubernetes-models).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { Pod } from 'kubernetes-models/v1/Pod';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadSidecarConfig, SIDECAR_VARIABLES } from '../../sidecar/config.js';
import { testCertificates } from '../../test/certificates.js';
import { loadInjectorConfig, type InjectorConfig } from './config.js';
import {
  ANNOTATIONS,
  BadReviewError,
  CA_FILE,
  CA_VOLUME,
  HEALTHCHECK_ENTRY,
  INJECTED_LABEL,
  PROBE_PORT_NAME,
  SIDECAR_CONTAINER,
  SIDECAR_ENTRY,
  quantityValue,
  review,
  type AdmissionReview,
} from './inject.js';

type Json = any;
const fixture = (name: string): Json => JSON.parse(readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8'));
const CONFIG: InjectorConfig = loadInjectorConfig(
  { INJECTOR_SIDECAR_IMAGE: 'registry.example.com/authz/authz:0.1.0', INJECTOR_CONTROL_PLANE_URL: 'http://authz-control-plane.authz.svc:8080' },
  [],
);

/** A fixture with its pod's annotations changed (`undefined` removes one). */
function withAnnotations(name: string, changes: Record<string, string | undefined>): Json {
  const doc = fixture(name);
  const a = doc.request.object.metadata.annotations;
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined) delete a[k];
    else a[k] = v;
  }
  return doc;
}

/** Answers `doc` and returns the answer plus the pod after its patch (the original when there is none). */
function run(doc: Json, config: InjectorConfig = CONFIG, controlPlaneCa?: string) {
  const before = structuredClone(doc.request?.object);
  const { review: answer, outcome } = review(doc, config, controlPlaneCa);
  const response = answer.response!;
  expect(answer).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
  expect(response.uid).toBe(doc.request.uid);
  expect(response.allowed).toBe(true);
  expect(doc.request?.object, 'the request is not modified').toEqual(before);
  let pod = before;
  if (response.patch !== undefined) {
    expect(response.patchType).toBe('JSONPatch');
    const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
    // validate: every op well-formed and its path present, as the API server requires
    pod = jsonpatch.applyPatch(structuredClone(before), ops, true, false).newDocument;
  } else {
    expect(response.patchType).toBeUndefined();
  }
  return { answer, response, outcome, pod };
}

const sidecarOf = (pod: Json) => [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c: Json) => c.name === SIDECAR_CONTAINER);
const envOf = (c: Json) => Object.fromEntries((c.env ?? []).map((e: Json) => [e.name, e.value ?? e.valueFrom]));

describe('injection (native sidecar)', () => {
  it('adds an init container with restartPolicy Always, HTTP probes on /readyz and /healthz of its probe port, and AUTHZ_* to every app container', () => {
    const doc = fixture('pod-create-replicaset.json');
    const original = structuredClone(doc.request.object);
    const { pod, outcome, response } = run(doc);
    expect(outcome).toBe('injected');
    expect(response.warnings).toBeUndefined();
    new Pod(pod).validate();

    const sidecar = pod.spec.initContainers[0];
    expect(sidecar.name).toBe(SIDECAR_CONTAINER);
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.image).toBe(CONFIG.sidecarImage);
    expect(sidecar.command).toEqual(['node', SIDECAR_ENTRY]);
    // the kubelet's probes reach the probe listener on the pod's IP by its named port; nothing runs inside the container
    expect(sidecar.ports).toEqual([{ name: PROBE_PORT_NAME, containerPort: 8182, protocol: 'TCP' }]);
    expect(sidecar.startupProbe.httpGet).toEqual({ path: '/readyz', port: PROBE_PORT_NAME });
    expect(sidecar.startupProbe.failureThreshold * sidecar.startupProbe.periodSeconds).toBeGreaterThanOrEqual(60);
    expect(sidecar.readinessProbe.httpGet).toEqual({ path: '/readyz', port: PROBE_PORT_NAME });
    expect(sidecar.livenessProbe.httpGet).toEqual({ path: '/healthz', port: PROBE_PORT_NAME });
    for (const p of [sidecar.startupProbe, sidecar.readinessProbe, sidecar.livenessProbe]) expect(p.exec).toBeUndefined();
    expect(sidecar.lifecycle).toBeUndefined();
    expect(envOf(sidecar)).toEqual({
      SIDECAR_CONTROL_PLANE_URL: 'http://authz-control-plane.authz.svc:8080',
      SIDECAR_TENANT_ID: 'tenant_01JDX4Q8M0Z4H2S9R7W3K5V6N8',
      SIDECAR_API_KEY: { secretKeyRef: { name: 'orders-authz-key', key: 'api-key', optional: false } },
      SIDECAR_HOST: '127.0.0.1',
      SIDECAR_PORT: '8181',
      SIDECAR_PROBE_HOST: '0.0.0.0',
      SIDECAR_PROBE_PORT: '8182',
      SIDECAR_LOG_LEVEL: 'info',
    });
    expect(sidecar.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(sidecar.resources).toEqual({ requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } });

    // the pod's own init container follows the sidecar, and can already ask it
    expect(pod.spec.initContainers.map((c: Json) => c.name)).toEqual([SIDECAR_CONTAINER, 'migrate']);
    expect(pod.spec.containers.map((c: Json) => c.name)).toEqual(['orders', 'log-shipper']);
    for (const c of [pod.spec.initContainers[1], ...pod.spec.containers]) {
      expect(envOf(c)).toMatchObject({ AUTHZ_URL: 'http://127.0.0.1:8181', AUTHZ_GRPC_TARGET: '127.0.0.1:8181' });
    }
    // the app's own variables are untouched and keep their order
    expect(pod.spec.containers[0].env.slice(0, 2)).toEqual(original.spec.containers[0].env);
    expect(pod.spec.initContainers[1].env[0]).toEqual(original.spec.initContainers[0].env[0]);
    // nothing else of the app containers changed
    const strip = (c: Json) => ({ ...c, env: undefined });
    expect(pod.spec.containers.map(strip)).toEqual(original.spec.containers.map(strip));

    expect(pod.metadata.labels).toEqual({ ...original.metadata.labels, [INJECTED_LABEL]: 'injected' });
    expect(pod.metadata.annotations[ANNOTATIONS.injected]).toBe('native');
    expect(pod.metadata.annotations['kubectl.kubernetes.io/default-container']).toBeUndefined();
  });

  it('creates initContainers, env and labels where the pod has none', () => {
    const { pod, outcome } = run(fixture('pod-create-bare.json'));
    expect(outcome).toBe('injected');
    new Pod(pod).validate();
    expect(pod.spec.initContainers.map((c: Json) => c.name)).toEqual([SIDECAR_CONTAINER]);
    expect(pod.spec.containers[0].env).toEqual([
      { name: 'AUTHZ_URL', value: 'http://127.0.0.1:8181' },
      { name: 'AUTHZ_GRPC_TARGET', value: '127.0.0.1:8181' },
    ]);
    expect(pod.metadata.labels).toEqual({ [INJECTED_LABEL]: 'injected' });
  });

  it('keeps AUTHZ_URL and AUTHZ_GRPC_TARGET an app container set itself', () => {
    const doc = fixture('pod-create-replicaset.json');
    doc.request.object.spec.containers[0].env.push({ name: 'AUTHZ_URL', value: 'http://127.0.0.1:9999' });
    doc.request.object.spec.containers[1].env = [{ name: 'AUTHZ_GRPC_TARGET', value: 'elsewhere:1' }];
    const { pod } = run(doc);
    expect(pod.spec.containers[0].env.filter((e: Json) => e.name === 'AUTHZ_URL')).toEqual([{ name: 'AUTHZ_URL', value: 'http://127.0.0.1:9999' }]);
    expect(envOf(pod.spec.containers[0]).AUTHZ_GRPC_TARGET).toBe('127.0.0.1:8181');
    expect(envOf(pod.spec.containers[1])).toEqual({ AUTHZ_GRPC_TARGET: 'elsewhere:1', AUTHZ_URL: 'http://127.0.0.1:8181' });
  });

  it('takes port, resources, the key inside the Secret and the log level from annotations', () => {
    const { pod, outcome } = run(
      withAnnotations('pod-create-replicaset.json', {
        [ANNOTATIONS.port]: '9191',
        [ANNOTATIONS.cpuRequest]: '0.2',
        [ANNOTATIONS.memoryRequest]: '600Mi',
        [ANNOTATIONS.memoryLimit]: '1Gi',
        [ANNOTATIONS.cpuLimit]: '2',
        [ANNOTATIONS.apiKeySecretKey]: 'secret.key',
        [ANNOTATIONS.logLevel]: 'debug',
      }),
    );
    expect(outcome).toBe('injected');
    const sidecar = sidecarOf(pod);
    expect(sidecar.resources).toEqual({ requests: { cpu: '0.2', memory: '600Mi' }, limits: { cpu: '2', memory: '1Gi' } });
    expect(envOf(sidecar)).toMatchObject({ SIDECAR_PORT: '9191', SIDECAR_PROBE_PORT: '9192', SIDECAR_LOG_LEVEL: 'debug', SIDECAR_API_KEY: { secretKeyRef: { key: 'secret.key' } } });
    expect(sidecar.ports).toEqual([{ name: PROBE_PORT_NAME, containerPort: 9192, protocol: 'TCP' }]);
    expect(envOf(pod.spec.containers[0])).toMatchObject({ AUTHZ_URL: 'http://127.0.0.1:9191', AUTHZ_GRPC_TARGET: '127.0.0.1:9191' });
  });

  it('takes the probe port from authz.io/sidecar-probe-port', () => {
    for (const [changes, port, probePort] of [
      [{ [ANNOTATIONS.probePort]: '9090' }, '8181', 9090],
      [{ [ANNOTATIONS.port]: '9191', [ANNOTATIONS.probePort]: '8181' }, '9191', 8181],
      [{ [ANNOTATIONS.port]: '65535', [ANNOTATIONS.probePort]: '65534' }, '65535', 65534],
    ] as const) {
      const { pod, outcome } = run(withAnnotations('pod-create-replicaset.json', changes));
      expect(outcome).toBe('injected');
      new Pod(pod).validate();
      const sidecar = sidecarOf(pod);
      expect(envOf(sidecar)).toMatchObject({ SIDECAR_PORT: port, SIDECAR_PROBE_PORT: String(probePort) });
      expect(sidecar.ports).toEqual([{ name: PROBE_PORT_NAME, containerPort: probePort, protocol: 'TCP' }]);
      expect(sidecar.readinessProbe.httpGet.port).toBe(PROBE_PORT_NAME);
    }
  });

  it('listens for probes where INJECTOR_SIDECAR_PROBE_HOST says (:: on IPv6-only clusters)', () => {
    const config = loadInjectorConfig({ INJECTOR_SIDECAR_IMAGE: 'img', INJECTOR_CONTROL_PLANE_URL: 'http://cp:8080', INJECTOR_SIDECAR_PROBE_HOST: '::' }, []);
    expect(envOf(sidecarOf(run(fixture('pod-create-bare.json'), config).pod)).SIDECAR_PROBE_HOST).toBe('::');
  });

  it('uses the injector settings as defaults (key inside the Secret, no CPU limit)', () => {
    const config = loadInjectorConfig(
      { INJECTOR_SIDECAR_IMAGE: 'img', INJECTOR_CONTROL_PLANE_URL: 'https://cp.example:443', INJECTOR_API_KEY_SECRET_KEY: 'token', INJECTOR_SIDECAR_CPU_LIMIT: 'none', INJECTOR_SIDECAR_PORT: '7000' },
      [],
    );
    const sidecar = sidecarOf(run(fixture('pod-create-bare.json'), config).pod);
    expect(sidecar.resources.limits).toEqual({ memory: '512Mi' });
    expect(envOf(sidecar)).toMatchObject({ SIDECAR_CONTROL_PLANE_URL: 'https://cp.example', SIDECAR_PORT: '7000', SIDECAR_PROBE_PORT: '7001', SIDECAR_API_KEY: { secretKeyRef: { key: 'token' } } });
  });

  it('configures only what the sidecar reads, and values it accepts', () => {
    const sidecar = sidecarOf(run(fixture('pod-create-replicaset.json')).pod);
    const known = new Set(SIDECAR_VARIABLES.map((v) => v.variable));
    for (const e of sidecar.env) expect(known, e.name).toContain(e.name);
    const env = Object.fromEntries(sidecar.env.map((e: Json) => [e.name, e.value ?? 'azk_a_key_from_the_secret']));
    const settings = loadSidecarConfig(env, []);
    // the container port the probes name is the one the sidecar's probe listener takes
    expect(settings.probePort).toBe(sidecar.ports.find((p: Json) => p.name === PROBE_PORT_NAME).containerPort);
    expect(settings.host).toBe('127.0.0.1');
  });

  it('accepts exactly the tenant ids the sidecar accepts', () => {
    const base = { SIDECAR_CONTROL_PLANE_URL: 'http://cp:8080', SIDECAR_API_KEY: 'azk_x' };
    for (const tenant of ['tenant_a', 'tenant_01JDX4Q8M0Z4H2S9R7W3K5V6N8', 'tenant_' + 'x'.repeat(64), 'tenant_' + 'x'.repeat(65), 'tenant_', 'tenant-a', 'acme', ' tenant_a', 'tenant_a b', 'tenant_ä']) {
      const sidecarAccepts = (() => {
        try {
          return loadSidecarConfig({ ...base, SIDECAR_TENANT_ID: tenant }, []).tenantId === tenant;
        } catch {
          return false;
        }
      })();
      const { outcome } = run(withAnnotations('pod-create-bare.json', { [ANNOTATIONS.tenant]: tenant }));
      expect(outcome === 'injected', JSON.stringify(tenant)).toBe(sidecarAccepts);
    }
  });

  it('is idempotent: a pod that already has the sidecar is left as it is', () => {
    const doc = fixture('pod-create-replicaset.json');
    const once = run(doc).pod;
    const again = fixture('pod-create-replicaset.json');
    again.request.object = once;
    const second = run(again);
    expect(second.outcome).toBe('already_injected');
    expect(second.response.patch).toBeUndefined();
    expect(second.response.warnings).toBeUndefined();
  });
});

describe('injection (plain container, for clusters before 1.29)', () => {
  for (const [how, doc, config] of [
    ['by annotation', withAnnotations('pod-create-replicaset.json', { [ANNOTATIONS.mode]: 'container' }), CONFIG],
    ['by injector setting', fixture('pod-create-replicaset.json'), { ...CONFIG, sidecarMode: 'container' as const }],
  ] as const) {
    it(`puts the sidecar first among the containers with a postStart wait for /readyz (${how})`, () => {
      const { pod, outcome } = run(doc, config);
      expect(outcome).toBe('injected');
      new Pod(pod).validate();
      expect(pod.spec.containers.map((c: Json) => c.name)).toEqual([SIDECAR_CONTAINER, 'orders', 'log-shipper']);
      expect(pod.spec.initContainers.map((c: Json) => c.name)).toEqual(['migrate']);
      const sidecar = pod.spec.containers[0];
      expect(sidecar.restartPolicy).toBeUndefined();
      expect(sidecar.startupProbe).toBeUndefined();
      // a hook runs inside the container: it asks the decision listener on loopback
      expect(sidecar.lifecycle.postStart.exec.command).toEqual(['node', HEALTHCHECK_ENTRY, '--wait', '300', 'http://127.0.0.1:8181/readyz']);
      expect(sidecar.readinessProbe.httpGet).toEqual({ path: '/readyz', port: PROBE_PORT_NAME });
      expect(sidecar.livenessProbe.httpGet).toEqual({ path: '/healthz', port: PROBE_PORT_NAME });
      expect(sidecar.ports).toEqual([{ name: PROBE_PORT_NAME, containerPort: 8182, protocol: 'TCP' }]);
      // init containers run before a plain sidecar starts: they get no AUTHZ_URL
      expect(envOf(pod.spec.initContainers[0]).AUTHZ_URL).toBeUndefined();
      for (const c of pod.spec.containers.slice(1)) expect(envOf(c).AUTHZ_URL).toBe('http://127.0.0.1:8181');
      expect(pod.metadata.annotations['kubectl.kubernetes.io/default-container']).toBe('orders');
      expect(pod.metadata.annotations[ANNOTATIONS.injected]).toBe('container');
    });
  }

  it('keeps a default-container annotation the pod set', () => {
    const doc = withAnnotations('pod-create-replicaset.json', { [ANNOTATIONS.mode]: 'container', 'kubectl.kubernetes.io/default-container': 'log-shipper' });
    expect(run(doc).pod.metadata.annotations['kubectl.kubernetes.io/default-container']).toBe('log-shipper');
  });
});

describe('the control plane\'s CA', () => {
  const TLS_CONFIG = loadInjectorConfig(
    { INJECTOR_SIDECAR_IMAGE: 'img', INJECTOR_CONTROL_PLANE_URL: 'https://authz-control-plane.authz.svc:8080', INJECTOR_CONTROL_PLANE_CA_FILE: '/etc/authz-injector/tls/ca.crt' },
    [],
  );
  let ca: string;
  beforeAll(async () => {
    const certs = await testCertificates();
    ca = certs.ca;
    certs.remove();
  });

  for (const [mode, fixtureName] of [['native', 'pod-create-replicaset.json'], ['container', 'pod-create-bare.json']] as const) {
    it(`reaches the sidecar as a file of a downward API volume over an annotation of the pod (${mode}, ${fixtureName})`, () => {
      const doc = fixture(fixtureName);
      const volumesBefore = doc.request.object.spec.volumes ?? [];
      const { pod, outcome } = run(doc, { ...TLS_CONFIG, sidecarMode: mode }, ca);
      expect(outcome).toBe('injected');
      new Pod(pod).validate();
      expect(pod.metadata.annotations[ANNOTATIONS.controlPlaneCa]).toBe(ca);
      // the pod's volumes are kept, in order, and one is added
      expect(pod.spec.volumes.slice(0, -1)).toEqual(volumesBefore);
      const volume = pod.spec.volumes.at(-1);
      expect(volume).toEqual({ name: CA_VOLUME, downwardAPI: { items: [{ path: 'ca.crt', fieldRef: { fieldPath: `metadata.annotations['${ANNOTATIONS.controlPlaneCa}']` } }] } });
      const sidecar = sidecarOf(pod);
      expect(sidecar.volumeMounts).toEqual([{ name: CA_VOLUME, mountPath: '/etc/authz-sidecar/ca', readOnly: true }]);
      expect(`${sidecar.volumeMounts[0].mountPath}/${volume.downwardAPI.items[0].path}`).toBe(CA_FILE);
      const env = envOf(sidecar);
      expect(env).toMatchObject({ SIDECAR_CONTROL_PLANE_URL: 'https://authz-control-plane.authz.svc:8080', SIDECAR_CONTROL_PLANE_CA_FILE: CA_FILE });
      // what the sidecar makes of its environment
      const settings = loadSidecarConfig({ ...env, SIDECAR_API_KEY: 'azk_a_key_from_the_secret' }, []);
      expect(settings.controlPlaneCaFile).toBe(CA_FILE);
      // the app containers do not see it
      for (const c of pod.spec.containers.filter((x: Json) => x.name !== SIDECAR_CONTAINER)) {
        expect((c.volumeMounts ?? []).map((m: Json) => m.name)).not.toContain(CA_VOLUME);
      }
    });
  }

  it('is left out when the injector has none: no annotation, volume, mount or variable', () => {
    const { pod, outcome } = run(fixture('pod-create-replicaset.json'), TLS_CONFIG);
    expect(outcome).toBe('injected');
    expect(pod.metadata.annotations[ANNOTATIONS.controlPlaneCa]).toBeUndefined();
    expect(pod.spec.volumes.map((v: Json) => v.name)).not.toContain(CA_VOLUME);
    expect(sidecarOf(pod).volumeMounts).toBeUndefined();
    expect(envOf(sidecarOf(pod)).SIDECAR_CONTROL_PLANE_CA_FILE).toBeUndefined();
  });

  it('refuses a pod that already has a volume of that name, saying so', () => {
    const doc = fixture('pod-create-replicaset.json');
    doc.request.object.spec.volumes.push({ name: CA_VOLUME, emptyDir: {} });
    const { outcome, response, pod } = run(doc, TLS_CONFIG, ca);
    expect(outcome).toBe('bad_annotation');
    expect(response.warnings).toEqual([`authz sidecar not injected: the pod already has a volume named ${CA_VOLUME}`]);
    expect(sidecarOf(pod)).toBeUndefined();
  });
});

describe('no injection', () => {
  it('leaves pods without the annotation, or with "false", alone and silent', () => {
    for (const value of [undefined, 'false']) {
      const { outcome, response } = run(withAnnotations('pod-create-replicaset.json', { [ANNOTATIONS.inject]: value }));
      expect(outcome).toBe('not_requested');
      expect(response.patch).toBeUndefined();
      expect(response.warnings).toBeUndefined();
    }
    const doc = fixture('pod-create-bare.json');
    delete doc.request.object.metadata.annotations;
    expect(run(doc).outcome).toBe('not_requested');
  });

  const badAnnotations: [string, Record<string, string | undefined>, RegExp][] = [
    ['inject "yes"', { [ANNOTATIONS.inject]: 'yes' }, /authz\.io\/inject must be "true" or "false", got "yes"/],
    ['no tenant', { [ANNOTATIONS.tenant]: undefined }, /authz\.io\/tenant is required/],
    ['a bad tenant', { [ANNOTATIONS.tenant]: 'acme' }, /authz\.io\/tenant must be a tenant id \(tenant_…\), got "acme"/],
    ['no Secret', { [ANNOTATIONS.apiKeySecret]: undefined }, /authz\.io\/api-key-secret is required/],
    ['a bad Secret name', { [ANNOTATIONS.apiKeySecret]: 'Orders_Key' }, /authz\.io\/api-key-secret must be a Secret name, got "Orders_Key"/],
    ['a bad key inside the Secret', { [ANNOTATIONS.apiKeySecretKey]: 'api key' }, /authz\.io\/api-key-secret-key must be a key of a Secret/],
    ['port 0', { [ANNOTATIONS.port]: '0' }, /authz\.io\/sidecar-port must be a port number \(1-65535\), got "0"/],
    ['port 70000', { [ANNOTATIONS.port]: '70000' }, /authz\.io\/sidecar-port must be a port number/],
    ['port "http"', { [ANNOTATIONS.port]: 'http' }, /authz\.io\/sidecar-port must be a port number/],
    ['the app port', { [ANNOTATIONS.port]: '8080' }, /port 8080 is already used by container orders; choose another with authz\.io\/sidecar-port/],
    ['probe port 0', { [ANNOTATIONS.probePort]: '0' }, /authz\.io\/sidecar-probe-port must be a port number \(1-65535\), got "0"/],
    ['probe port 65536', { [ANNOTATIONS.probePort]: '65536' }, /authz\.io\/sidecar-probe-port must be a port number/],
    ['probe port "metrics"', { [ANNOTATIONS.probePort]: 'metrics' }, /authz\.io\/sidecar-probe-port must be a port number/],
    ['a probe port equal to the default port', { [ANNOTATIONS.probePort]: '8181' }, /authz\.io\/sidecar-probe-port must differ from the sidecar's port 8181, got "8181"/],
    ['a probe port equal to the port', { [ANNOTATIONS.port]: '9000', [ANNOTATIONS.probePort]: '9000' }, /authz\.io\/sidecar-probe-port must differ from the sidecar's port 9000/],
    ['port 65535 without a probe port', { [ANNOTATIONS.port]: '65535' }, /authz\.io\/sidecar-probe-port is required when the sidecar's port is 65535/],
    ['the app port as probe port', { [ANNOTATIONS.probePort]: '8080' }, /port 8080 \(the sidecar's probe port\) is already used by container orders; choose another with authz\.io\/sidecar-probe-port/],
    ['the app port as default probe port', { [ANNOTATIONS.port]: '8079' }, /port 8080 \(the sidecar's probe port\) is already used by container orders; choose another with authz\.io\/sidecar-probe-port/],
    ['a CPU request of "lots"', { [ANNOTATIONS.cpuRequest]: 'lots' }, /authz\.io\/sidecar-cpu-request must be a Kubernetes quantity/],
    ['a memory limit of "1GB"', { [ANNOTATIONS.memoryLimit]: '1GB' }, /authz\.io\/sidecar-memory-limit must be a Kubernetes quantity/],
    ['a memory request above the limit', { [ANNOTATIONS.memoryRequest]: '1Gi' }, /memory request 1Gi is above its limit 512Mi \(set authz\.io\/sidecar-memory-limit too\)/],
    ['a CPU request above the limit', { [ANNOTATIONS.cpuRequest]: '1500m', [ANNOTATIONS.cpuLimit]: '1' }, /cpu request 1500m is above its limit 1/],
    ['an unknown mode', { [ANNOTATIONS.mode]: 'sidecar' }, /authz\.io\/sidecar-mode must be one of native, container, got "sidecar"/],
    ['an unknown log level', { [ANNOTATIONS.logLevel]: 'loud' }, /authz\.io\/sidecar-log-level must be one of/],
  ];
  it.each(badAnnotations)('%s: allowed, a warning naming the annotation, no patch', (_, changes, warning) => {
    const { outcome, response } = run(withAnnotations('pod-create-replicaset.json', changes));
    expect(outcome).toBe('bad_annotation');
    expect(response.patch).toBeUndefined();
    expect(response.warnings).toHaveLength(1);
    expect(response.warnings![0]).toMatch(/^authz sidecar not injected: /);
    expect(response.warnings![0]).toMatch(warning);
  });

  it('refuses a pod whose containers already declare the probe port\'s name, or an init container\'s port', () => {
    const named = fixture('pod-create-replicaset.json');
    named.request.object.spec.containers[1].ports = [{ name: PROBE_PORT_NAME, containerPort: 9999 }];
    expect(run(named).response.warnings).toEqual([`authz sidecar not injected: container log-shipper already has a port named ${PROBE_PORT_NAME}`]);
    const init = fixture('pod-create-replicaset.json');
    init.request.object.spec.initContainers[0].ports = [{ containerPort: 8182 }];
    expect(run(init).response.warnings![0]).toMatch(/port 8182 \(the sidecar's probe port\) is already used by container migrate/);
    // another protocol on the same number does not collide
    const udp = fixture('pod-create-replicaset.json');
    udp.request.object.spec.containers[1].ports = [{ containerPort: 8182, protocol: 'UDP' }];
    expect(run(udp).outcome).toBe('injected');
  });

  it('names every bad annotation at once', () => {
    const { response } = run(withAnnotations('pod-create-replicaset.json', { [ANNOTATIONS.tenant]: undefined, [ANNOTATIONS.port]: 'x', [ANNOTATIONS.mode]: 'y' }));
    expect(response.warnings).toHaveLength(3);
  });

  it('a very long annotation value is clipped in the warning', () => {
    const { response } = run(withAnnotations('pod-create-replicaset.json', { [ANNOTATIONS.tenant]: 'x'.repeat(10_000) }));
    expect(response.warnings![0].length).toBeLessThan(200);
  });

  it.each(['kube-system', 'kube-public', 'kube-node-lease', 'authz'])('skips namespace %s, with a warning', (namespace) => {
    const doc = fixture('pod-create-replicaset.json');
    doc.request.namespace = namespace;
    doc.request.object.metadata.namespace = namespace;
    const { outcome, response } = run(doc);
    expect(outcome).toBe('excluded_namespace');
    expect(response.patch).toBeUndefined();
    expect(response.warnings).toEqual([`authz sidecar not injected: namespace ${namespace} is never injected`]);
  });

  it('the namespace comes from the request when the pod has none yet (controllers leave it empty)', () => {
    const doc = fixture('pod-create-replicaset.json');
    delete doc.request.object.metadata.namespace;
    doc.request.namespace = 'kube-system';
    expect(run(doc).outcome).toBe('excluded_namespace');
    doc.request.namespace = 'shop';
    expect(run(doc).outcome).toBe('injected');
  });

  it('skips hostNetwork pods and non-Linux pods, with a warning', () => {
    const host = fixture('pod-create-replicaset.json');
    host.request.object.spec.hostNetwork = true;
    const a = run(host);
    expect(a.outcome).toBe('host_network');
    expect(a.response.patch).toBeUndefined();
    expect(a.response.warnings![0]).toMatch(/hostNetwork/);
    const windows = fixture('pod-create-replicaset.json');
    windows.request.object.spec.os = { name: 'windows' };
    const b = run(windows);
    expect(b.outcome).toBe('unsupported_pod');
    expect(b.response.warnings![0]).toMatch(/Linux only/);
  });

  it('answers an UPDATE, a subresource, or another kind with allowed and a warning, never a patch', () => {
    for (const name of ['pod-update.json', 'pod-ephemeral-containers.json']) {
      const { outcome, response } = run(fixture(name));
      expect(outcome).toBe('not_pod_create');
      expect(response.patch).toBeUndefined();
      expect(response.warnings![0]).toMatch(/only handles pod CREATE/);
    }
    const deployment = fixture('pod-create-bare.json');
    deployment.request.kind = { group: 'apps', version: 'v1', kind: 'Deployment' };
    deployment.request.resource = { group: 'apps', version: 'v1', resource: 'deployments' };
    expect(run(deployment).response.warnings![0]).toMatch(/ignored a CREATE of Deployment/);
  });

  it('answers a pod it cannot read (no containers, unnamed containers) with a warning', () => {
    for (const mutate of [
      (spec: Json) => delete spec.containers,
      (spec: Json) => (spec.containers = []),
      (spec: Json) => delete spec.containers[0].name,
      (spec: Json) => (spec.initContainers = 'x'),
    ]) {
      const doc = fixture('pod-create-bare.json');
      mutate(doc.request.object.spec);
      const { outcome, response } = run(doc);
      expect(outcome).toBe('unsupported_pod');
      expect(response.patch).toBeUndefined();
      expect(response.warnings).toHaveLength(1);
    }
  });

  it('an internal error admits the pod without a sidecar, with a warning', () => {
    const doc = fixture('pod-create-bare.json');
    Object.defineProperty(doc.request.object, 'spec', {
      get() {
        throw new Error('boom');
      },
    });
    const { review: answer, outcome, detail } = review(doc, CONFIG);
    expect(outcome).toBe('error');
    expect(detail).toBe('boom');
    expect(answer.response).toEqual({
      uid: doc.request.uid,
      allowed: true,
      warnings: ['authz sidecar injection failed (internal error); the pod was admitted without a sidecar'],
    });
  });

  it('refuses (BadReviewError) only what it cannot answer: not an admission.k8s.io/v1 AdmissionReview, or no request uid', () => {
    const good = fixture('pod-create-bare.json');
    for (const body of [null, [], 'x', { ...good, apiVersion: 'admission.k8s.io/v1beta1' }, { ...good, kind: 'Pod' }, { ...good, request: undefined }, { ...good, request: { ...good.request, uid: '' } }]) {
      expect(() => review(body, CONFIG)).toThrow(BadReviewError);
    }
  });
});

describe('quantities', () => {
  it('compares requests with limits across units', () => {
    expect(quantityValue('500m')).toBe(0.5);
    expect(quantityValue('1')).toBe(1);
    expect(quantityValue('128Mi')).toBe(128 * 2 ** 20);
    expect(quantityValue('1G')).toBe(1e9);
    expect(quantityValue('1e3')).toBe(1000);
    expect(quantityValue('0.5Gi')).toBe(2 ** 29);
    expect(quantityValue('.5')).toBe(0.5);
  });
});

describe('configuration', () => {
  const ok = { INJECTOR_SIDECAR_IMAGE: 'img', INJECTOR_CONTROL_PLANE_URL: 'http://cp:8080' };
  it.each([
    [{}, /INJECTOR_SIDECAR_IMAGE: is required/],
    [{ INJECTOR_SIDECAR_IMAGE: 'img' }, /INJECTOR_CONTROL_PLANE_URL: is required/],
    [{ ...ok, INJECTOR_CONTROL_PLANE_URL: 'cp:8080' }, /INJECTOR_CONTROL_PLANE_URL: must be an http:\/\/ or https:\/\/ URL/],
    [{ ...ok, INJECTOR_SIDECAR_MODE: 'plain' }, /INJECTOR_SIDECAR_MODE: must be one of 'native', 'container'/],
    [{ ...ok, INJECTOR_SIDECAR_MEMORY_LIMIT: '1 GiB' }, /INJECTOR_SIDECAR_MEMORY_LIMIT: must be a Kubernetes quantity/],
    [{ ...ok, INJECTOR_API_KEY_SECRET_KEY: 'a/b' }, /INJECTOR_API_KEY_SECRET_KEY: must be a Secret key/],
    [{ ...ok, INJECTOR_NAMESPACE: 'Authz' }, /INJECTOR_NAMESPACE: must be a namespace name/],
    [{ ...ok, INJECTOR_SIDECAR_PORT: '0' }, /INJECTOR_SIDECAR_PORT: must be between 1 and 65535/],
    [{ ...ok, INJECTOR_SIDECAR_PROBE_HOST: ' ' }, /INJECTOR_SIDECAR_PROBE_HOST: must not be empty/],
    // sidecars would refuse it, and every injected pod fail to start
    [{ ...ok, INJECTOR_CONTROL_PLANE_CA_FILE: '/ca.crt' }, /^INJECTOR_CONTROL_PLANE_CA_FILE: is only for an https:\/\/ control plane, and INJECTOR_CONTROL_PLANE_URL is http:\/\/cp:8080/],
  ])('%j is refused, naming the variable', (env, message) => {
    expect(() => loadInjectorConfig(env, [])).toThrow(message);
  });

  it('has defaults for everything but the image and the control plane', () => {
    expect(loadInjectorConfig(ok, [])).toMatchObject({ port: 8443, sidecarPort: 8181, sidecarProbeHost: '0.0.0.0', sidecarMode: 'native', apiKeySecretKey: 'api-key', namespace: 'authz', sidecarCpuLimit: '1' });
  });
});

// A compile-time check that the answer is what the server sends.
void ((r: AdmissionReview) => r.response?.allowed);
