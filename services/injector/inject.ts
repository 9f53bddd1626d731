/**
 * The sidecar injector's decision, as a pure function: an `admission.k8s.io/v1` AdmissionReview
 * for a pod in, the AdmissionReview to answer out, with a base64 JSONPatch when a sidecar is
 * added. It never refuses a pod: whatever it does not understand, or cannot do, is answered
 * `allowed: true` with a warning (shown by kubectl) and no patch, so injection can only ever
 * add a sidecar, never block a deployment.
 */
import { basename, dirname } from 'node:path/posix';
import { type InjectorConfig, QUANTITY, SECRET_DATA_KEY, SIDECAR_MODES, type SidecarMode } from './config.js';
import { LOG_LEVELS } from '../common/settings.js';

/** Annotations a pod may carry (deploy/README.md, docs/kubernetes.md). */
export const ANNOTATIONS = {
  inject: 'authz.io/inject',
  tenant: 'authz.io/tenant',
  apiKeySecret: 'authz.io/api-key-secret',
  apiKeySecretKey: 'authz.io/api-key-secret-key',
  port: 'authz.io/sidecar-port',
  probePort: 'authz.io/sidecar-probe-port',
  cpuRequest: 'authz.io/sidecar-cpu-request',
  memoryRequest: 'authz.io/sidecar-memory-request',
  cpuLimit: 'authz.io/sidecar-cpu-limit',
  memoryLimit: 'authz.io/sidecar-memory-limit',
  mode: 'authz.io/sidecar-mode',
  logLevel: 'authz.io/sidecar-log-level',
  /** Written by the injector: the mode it injected in. */
  injected: 'authz.io/sidecar-injected',
  /** Written by the injector: the CA the sidecar verifies the control plane with (PEM), see {@link CA_VOLUME}. */
  controlPlaneCa: 'authz.io/control-plane-ca',
} as const;

/** Written by the injector on injected pods; the control plane's NetworkPolicy admits them. */
export const INJECTED_LABEL = 'authz.io/sidecar';
export const INJECTED_LABEL_VALUE = 'injected';
export const SIDECAR_CONTAINER = 'authz-sidecar';
/** The sidecar's named container port for probes and scrapes (`SIDECAR_PROBE_PORT`): a PodMonitor selects it by this name. */
export const PROBE_PORT_NAME = 'authz-probe';
/** Never injected, whatever a pod there says (besides the injector's own namespace). */
export const SYSTEM_NAMESPACES = ['kube-system', 'kube-public', 'kube-node-lease'] as const;
/** Paths inside the image (deploy/Dockerfile: WORKDIR /app, the build in /app/dist). */
export const SIDECAR_ENTRY = '/app/dist/cmd/sidecar/main.js';
/** Run inside the container by the `container`-mode postStart wait (the kubelet's probes use the probe port). */
export const HEALTHCHECK_ENTRY = '/app/dist/cmd/healthcheck/main.js';
/**
 * How the control plane's CA reaches a sidecar in another namespace: as a pod annotation the
 * injector writes, which a downward API volume turns into the file SIDECAR_CONTROL_PLANE_CA_FILE
 * names. The injector cannot create a ConfigMap or Secret in the app's namespace (it has no
 * access to the Kubernetes API, by design), and a pod's own annotation needs no object, no
 * permission and nothing else installed; a CA certificate is public. The pod keeps the CA it was
 * created with: after the CA itself is renewed, pods pick the new one up when they are recreated.
 */
export const CA_VOLUME = 'authz-sidecar-ca';
export const CA_FILE = '/etc/authz-sidecar/ca/ca.crt';
/** Variables every app container gets, pointing at its sidecar (a value the app set itself is kept). */
export const APP_VARIABLES = ['AUTHZ_URL', 'AUTHZ_GRPC_TARGET'] as const;
/** How long a sidecar may take to be ready (a large tenant's snapshot) before the kubelet restarts it (`native`) or starts the app anyway (`container`). */
export const SIDECAR_START_SECONDS = 300;

const WARNING_PREFIX = 'authz sidecar not injected: ';

// ---- the wire types (the fields this reads; everything else passes through untouched) ----------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export interface AdmissionRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  resource?: { group?: string; version?: string; resource?: string };
  subResource?: string;
  operation?: string;
  namespace?: string;
  name?: string;
  dryRun?: boolean;
  object?: unknown;
  [field: string]: unknown;
}
export interface AdmissionResponse {
  uid: string;
  allowed: true;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}
export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}
export interface PatchOperation {
  op: 'add';
  path: string;
  value: unknown;
}

/** What happened, for logs and metrics. */
export type Outcome =
  | 'injected'
  | 'not_requested'
  | 'already_injected'
  | 'not_pod_create'
  | 'excluded_namespace'
  | 'host_network'
  | 'unsupported_pod'
  | 'bad_annotation'
  | 'error';

/** The body is not an AdmissionReview this can answer (no request uid to answer to): HTTP 400. */
export class BadReviewError extends Error {
  override name = 'BadReviewError';
}

/**
 * Answers one AdmissionReview. Throws BadReviewError only when the body cannot be answered at all
 * (not `admission.k8s.io/v1`, no `request.uid`); every other case is an answer with `allowed: true`.
 * `controlPlaneCa`: the PEM text of INJECTOR_CONTROL_PLANE_CA_FILE, given to an injected sidecar.
 */
export function review(body: unknown, config: InjectorConfig, controlPlaneCa?: string): { review: AdmissionReview; outcome: Outcome; detail?: string } {
  if (!isObject(body) || body.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview') {
    throw new BadReviewError('expected an admission.k8s.io/v1 AdmissionReview');
  }
  const request = body.request;
  if (!isObject(request) || typeof request.uid !== 'string' || request.uid === '') {
    throw new BadReviewError('request.uid: required');
  }
  const uid = request.uid;
  let decision: Decision;
  try {
    decision = decide(request as AdmissionRequest, config, controlPlaneCa);
  } catch (err) {
    // A bug here must not keep pods from being created: admit without a sidecar, say so.
    decision = {
      outcome: 'error',
      detail: err instanceof Error ? err.message : String(err),
      warnings: ['authz sidecar injection failed (internal error); the pod was admitted without a sidecar'],
    };
  }
  const response: AdmissionResponse = { uid, allowed: true };
  if (decision.patch) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  }
  if (decision.warnings?.length) response.warnings = decision.warnings;
  return { review: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }, outcome: decision.outcome, detail: decision.detail };
}

// ---- the decision ------------------------------------------------------------------------------

interface Decision {
  outcome: Outcome;
  detail?: string;
  patch?: PatchOperation[];
  warnings?: string[];
}

/** What a pod's annotations ask for, after validation. */
export interface SidecarSettings {
  tenantId: string;
  secretName: string;
  secretKey: string;
  port: number;
  /** The probe listener's port (`SIDECAR_PROBE_PORT`), on the pod's IP. */
  probePort: number;
  mode: SidecarMode;
  logLevel: string;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}

function decide(request: AdmissionRequest, config: InjectorConfig, controlPlaneCa: string | undefined): Decision {
  const { kind, resource } = request;
  const isPodCreate =
    kind?.group === '' && kind?.version === 'v1' && kind?.kind === 'Pod' && resource?.resource === 'pods' && !request.subResource && request.operation === 'CREATE';
  if (!isPodCreate) {
    const what = `${request.operation ?? '?'} of ${kind?.kind ?? '?'}${request.subResource ? `/${request.subResource}` : ''}`;
    return { outcome: 'not_pod_create', detail: what, warnings: [`authz sidecar injector ignored a ${clip(what)}: it only handles pod CREATE`] };
  }
  const pod = request.object;
  if (!isObject(pod) || !isObject(pod.spec) || !Array.isArray(pod.spec.containers) || pod.spec.containers.length === 0) {
    return { outcome: 'unsupported_pod', detail: 'no spec.containers', warnings: [`${WARNING_PREFIX}the pod has no spec.containers`] };
  }
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const annotations: Record<string, unknown> = isObject(metadata.annotations) ? metadata.annotations : {};
  const inject = annotations[ANNOTATIONS.inject];
  if (inject === undefined || inject === 'false') return { outcome: 'not_requested' };
  if (inject !== 'true') {
    return bad([`${ANNOTATIONS.inject} must be "true" or "false", got ${quote(inject)}`]);
  }

  const namespace = typeof request.namespace === 'string' && request.namespace !== '' ? request.namespace : metadata.namespace;
  if (typeof namespace === 'string' && ((SYSTEM_NAMESPACES as readonly string[]).includes(namespace) || namespace === config.namespace)) {
    return { outcome: 'excluded_namespace', detail: namespace, warnings: [`${WARNING_PREFIX}namespace ${namespace} is never injected`] };
  }

  const spec = pod.spec;
  const containers = spec.containers as unknown[];
  const initContainers = Array.isArray(spec.initContainers) ? (spec.initContainers as unknown[]) : undefined;
  if (spec.initContainers !== undefined && spec.initContainers !== null && !initContainers) {
    return { outcome: 'unsupported_pod', detail: 'spec.initContainers is not a list', warnings: [`${WARNING_PREFIX}spec.initContainers is not a list`] };
  }
  const all = [...containers, ...(initContainers ?? [])];
  if (!all.every((c) => isObject(c) && typeof c.name === 'string')) {
    return { outcome: 'unsupported_pod', detail: 'a container without a name', warnings: [`${WARNING_PREFIX}a container has no name`] };
  }
  const named = all as { name: string; [k: string]: unknown }[];
  // Idempotent: a pod that already has the sidecar (re-invocation, or added by hand) is left alone.
  if (named.some((c) => c.name === SIDECAR_CONTAINER)) return { outcome: 'already_injected' };
  if (spec.hostNetwork === true) {
    return {
      outcome: 'host_network',
      warnings: [`${WARNING_PREFIX}hostNetwork pods share the node's loopback, where one sidecar port cannot serve each pod`],
    };
  }
  if (isObject(spec.os) && spec.os.name !== undefined && spec.os.name !== 'linux') {
    return { outcome: 'unsupported_pod', detail: `os ${String(spec.os.name)}`, warnings: [`${WARNING_PREFIX}the sidecar image runs on Linux only`] };
  }

  const parsed = parseAnnotations(annotations, config);
  if ('errors' in parsed) return bad(parsed.errors);
  const settings = parsed.settings;
  const taken: string[] = [];
  for (const c of named) {
    for (const p of Array.isArray(c.ports) ? c.ports : []) {
      if (!isObject(p)) continue;
      const tcp = p.protocol === undefined || p.protocol === 'TCP';
      if (tcp && p.containerPort === settings.port) {
        taken.push(`port ${settings.port} is already used by container ${clip(c.name)}; choose another with ${ANNOTATIONS.port}`);
      }
      if (tcp && p.containerPort === settings.probePort) {
        taken.push(`port ${settings.probePort} (the sidecar's probe port) is already used by container ${clip(c.name)}; choose another with ${ANNOTATIONS.probePort}`);
      }
      // Named ports must be unique in a pod: probes and PodMonitors find the sidecar's by name.
      if (p.name === PROBE_PORT_NAME) taken.push(`container ${clip(c.name)} already has a port named ${PROBE_PORT_NAME}`);
    }
  }
  const volumes = Array.isArray(spec.volumes) ? (spec.volumes as unknown[]) : undefined;
  if (controlPlaneCa !== undefined && volumes?.some((v) => isObject(v) && v.name === CA_VOLUME)) {
    taken.push(`the pod already has a volume named ${CA_VOLUME}`);
  }
  if (taken.length > 0) return bad(taken);

  const patch: PatchOperation[] = [];
  // Environment first: the indexes below are the pod's own, before the sidecar is inserted.
  const appEnv = [
    { name: 'AUTHZ_URL', value: `http://127.0.0.1:${settings.port}` },
    { name: 'AUTHZ_GRPC_TARGET', value: `127.0.0.1:${settings.port}` },
  ];
  const addEnv = (list: unknown[], path: string) =>
    list.forEach((c, i) => {
      const container = c as { env?: unknown };
      if (!Array.isArray(container.env)) {
        patch.push({ op: 'add', path: `${path}/${i}/env`, value: appEnv });
        return;
      }
      const set = new Set(container.env.map((e) => (isObject(e) ? e.name : undefined)));
      for (const v of appEnv) if (!set.has(v.name)) patch.push({ op: 'add', path: `${path}/${i}/env/-`, value: v });
    });
  addEnv(containers, '/spec/containers');
  // Init containers that run after a native sidecar can ask it too; in `container` mode it is not
  // running yet while they do.
  if (settings.mode === 'native' && initContainers) addEnv(initContainers, '/spec/initContainers');

  patch.push({ op: 'add', path: `/metadata/annotations/${pointer(ANNOTATIONS.injected)}`, value: settings.mode });
  patch.push(
    isObject(metadata.labels)
      ? { op: 'add', path: `/metadata/labels/${pointer(INJECTED_LABEL)}`, value: INJECTED_LABEL_VALUE }
      : { op: 'add', path: '/metadata/labels', value: { [INJECTED_LABEL]: INJECTED_LABEL_VALUE } },
  );
  if (controlPlaneCa !== undefined) {
    patch.push({ op: 'add', path: `/metadata/annotations/${pointer(ANNOTATIONS.controlPlaneCa)}`, value: controlPlaneCa });
    const volume = {
      name: CA_VOLUME,
      downwardAPI: { items: [{ path: basename(CA_FILE), fieldRef: { fieldPath: `metadata.annotations['${ANNOTATIONS.controlPlaneCa}']` } }] },
    };
    patch.push(volumes ? { op: 'add', path: '/spec/volumes/-', value: volume } : { op: 'add', path: '/spec/volumes', value: [volume] });
  }
  const sidecar = sidecarContainer(settings, config, controlPlaneCa !== undefined);
  if (settings.mode === 'native') {
    // First, so that the pod's own init containers can already ask it.
    patch.push(initContainers ? { op: 'add', path: '/spec/initContainers/0', value: sidecar } : { op: 'add', path: '/spec/initContainers', value: [sidecar] });
  } else {
    // First, so that the kubelet starts it (and runs its postStart wait) before the app.
    patch.push({ op: 'add', path: '/spec/containers/0', value: sidecar });
    // kubectl logs/exec would otherwise pick the sidecar, now the first container.
    const defaultContainer = 'kubectl.kubernetes.io/default-container';
    if (annotations[defaultContainer] === undefined) {
      patch.push({ op: 'add', path: `/metadata/annotations/${pointer(defaultContainer)}`, value: (containers[0] as { name: string }).name });
    }
  }
  return { outcome: 'injected', detail: `${settings.mode} ${settings.tenantId}`, patch };
}

function bad(errors: string[]): Decision {
  return { outcome: 'bad_annotation', detail: errors.join('; '), warnings: errors.map((e) => WARNING_PREFIX + e) };
}

// ---- annotations -------------------------------------------------------------------------------

/** As the sidecar requires it (sidecar/config.ts); a test checks that both accept the same ids. */
const TENANT_ID = /^tenant_[A-Za-z0-9_-]{1,64}$/;
/** A Secret's name: a DNS subdomain. */
const SECRET_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Reads and validates what a pod's annotations ask for; every problem is named by its annotation. */
export function parseAnnotations(annotations: Record<string, unknown>, config: InjectorConfig): { settings: SidecarSettings } | { errors: string[] } {
  const errors: string[] = [];
  const text = (key: string): string | undefined => {
    const v = annotations[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      errors.push(`${key} must be a string`);
      return undefined;
    }
    return v;
  };
  const tenantId = text(ANNOTATIONS.tenant);
  if (tenantId === undefined) {
    if (annotations[ANNOTATIONS.tenant] === undefined) errors.push(`${ANNOTATIONS.tenant} is required (the tenant the sidecar follows, tenant_…)`);
  } else if (!TENANT_ID.test(tenantId)) errors.push(`${ANNOTATIONS.tenant} must be a tenant id (tenant_…), got ${quote(tenantId)}`);

  const secretName = text(ANNOTATIONS.apiKeySecret);
  if (secretName === undefined) {
    if (annotations[ANNOTATIONS.apiKeySecret] === undefined) errors.push(`${ANNOTATIONS.apiKeySecret} is required (the Secret holding the sidecar's API key)`);
  } else if (!SECRET_NAME.test(secretName)) errors.push(`${ANNOTATIONS.apiKeySecret} must be a Secret name, got ${quote(secretName)}`);

  const secretKey = text(ANNOTATIONS.apiKeySecretKey) ?? config.apiKeySecretKey;
  if (!SECRET_DATA_KEY.test(secretKey)) errors.push(`${ANNOTATIONS.apiKeySecretKey} must be a key of a Secret (letters, digits, '-', '_', '.'), got ${quote(secretKey)}`);

  let port = config.sidecarPort;
  const rawPort = text(ANNOTATIONS.port);
  if (rawPort !== undefined) {
    port = /^\d{1,5}$/.test(rawPort) ? Number(rawPort) : NaN;
    if (!(port >= 1 && port <= 65535)) errors.push(`${ANNOTATIONS.port} must be a port number (1-65535), got ${quote(rawPort)}`);
  }

  // The next port by default, so that moving the sidecar's port moves its probe port along.
  let probePort = port + 1;
  const rawProbePort = text(ANNOTATIONS.probePort);
  if (rawProbePort !== undefined) {
    probePort = /^\d{1,5}$/.test(rawProbePort) ? Number(rawProbePort) : NaN;
    if (!(probePort >= 1 && probePort <= 65535)) errors.push(`${ANNOTATIONS.probePort} must be a port number (1-65535), got ${quote(rawProbePort)}`);
    else if (probePort === port) errors.push(`${ANNOTATIONS.probePort} must differ from the sidecar's port ${port}, got ${quote(rawProbePort)}`);
  } else if (port === 65535) {
    errors.push(`${ANNOTATIONS.probePort} is required when the sidecar's port is 65535 (its default is the port after it)`);
  }

  let mode: SidecarMode = config.sidecarMode;
  const rawMode = text(ANNOTATIONS.mode);
  if (rawMode !== undefined) {
    if ((SIDECAR_MODES as readonly string[]).includes(rawMode)) mode = rawMode as SidecarMode;
    else errors.push(`${ANNOTATIONS.mode} must be one of ${SIDECAR_MODES.join(', ')}, got ${quote(rawMode)}`);
  }

  let logLevel: string = config.sidecarLogLevel;
  const rawLevel = text(ANNOTATIONS.logLevel);
  if (rawLevel !== undefined) {
    if ((LOG_LEVELS as readonly string[]).includes(rawLevel)) logLevel = rawLevel;
    else errors.push(`${ANNOTATIONS.logLevel} must be one of ${LOG_LEVELS.join(', ')}, got ${quote(rawLevel)}`);
  }

  const quantityOf = (key: string, fallback: string): string => {
    const v = text(key);
    if (v === undefined) return fallback;
    if (!QUANTITY.test(v)) {
      errors.push(`${key} must be a Kubernetes quantity such as 100m or 128Mi, got ${quote(v)}`);
      return fallback;
    }
    return v;
  };
  const requests = { cpu: quantityOf(ANNOTATIONS.cpuRequest, config.sidecarCpuRequest), memory: quantityOf(ANNOTATIONS.memoryRequest, config.sidecarMemoryRequest) };
  const limits = { cpu: quantityOf(ANNOTATIONS.cpuLimit, config.sidecarCpuLimit), memory: quantityOf(ANNOTATIONS.memoryLimit, config.sidecarMemoryLimit) };
  for (const r of ['cpu', 'memory'] as const) {
    if (limits[r] !== '' && quantityValue(requests[r]) > quantityValue(limits[r])) {
      errors.push(`the sidecar's ${r} request ${requests[r]} is above its limit ${limits[r]} (set ${r === 'cpu' ? ANNOTATIONS.cpuLimit : ANNOTATIONS.memoryLimit} too)`);
    }
  }
  if (errors.length > 0) return { errors };
  return {
    settings: {
      tenantId: tenantId!,
      secretName: secretName!,
      secretKey,
      port,
      probePort,
      mode,
      logLevel,
      resources: { requests, limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== '')) },
    },
  };
}

const SUFFIX: Record<string, number> = {
  m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
/** The value of a quantity that matched QUANTITY (`1e3` included), for comparing request and limit. */
export function quantityValue(q: string): number {
  const m = /^\+?([\d.]+)(.*)$/.exec(q)!;
  const suffix = m[2];
  if (suffix === '') return Number(m[1]);
  if (/^[eE]/.test(suffix)) return Number(m[1] + suffix);
  return Number(m[1]) * SUFFIX[suffix];
}

// ---- the sidecar container ---------------------------------------------------------------------

/** The container added to the pod; `withCa`: it reads the control plane's CA from {@link CA_VOLUME}. */
export function sidecarContainer(s: SidecarSettings, config: InjectorConfig, withCa = false): Record<string, Json> {
  const probe = (path: string, extra: Record<string, number>): Json => ({
    // Decisions stay on loopback (that listener is their boundary); the kubelet's probes come to
    // the pod's IP, so they go to the probe listener, which answers nothing else.
    httpGet: { path, port: PROBE_PORT_NAME },
    timeoutSeconds: 3,
    ...extra,
  });
  const container: Record<string, Json> = {
    name: SIDECAR_CONTAINER,
    image: config.sidecarImage,
    imagePullPolicy: config.sidecarImagePullPolicy,
    command: ['node', SIDECAR_ENTRY],
    env: [
      { name: 'SIDECAR_CONTROL_PLANE_URL', value: config.controlPlaneUrl },
      ...(withCa ? [{ name: 'SIDECAR_CONTROL_PLANE_CA_FILE', value: CA_FILE }] : []),
      { name: 'SIDECAR_TENANT_ID', value: s.tenantId },
      { name: 'SIDECAR_API_KEY', valueFrom: { secretKeyRef: { name: s.secretName, key: s.secretKey, optional: false } } },
      { name: 'SIDECAR_HOST', value: '127.0.0.1' },
      { name: 'SIDECAR_PORT', value: String(s.port) },
      { name: 'SIDECAR_PROBE_HOST', value: config.sidecarProbeHost },
      { name: 'SIDECAR_PROBE_PORT', value: String(s.probePort) },
      { name: 'SIDECAR_LOG_LEVEL', value: s.logLevel },
    ],
    // Only the probe listener: the decision port is not the pod network's to reach.
    ports: [{ name: PROBE_PORT_NAME, containerPort: s.probePort, protocol: 'TCP' }],
    resources: s.resources,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: config.sidecarUser,
      runAsGroup: config.sidecarUser,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // Liveness never depends on the control plane: an outage makes the sidecar unready, not restarted.
    livenessProbe: probe('/healthz', { periodSeconds: 10, failureThreshold: 3 }),
    readinessProbe: probe('/readyz', { periodSeconds: 5, failureThreshold: 2 }),
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  if (withCa) container.volumeMounts = [{ name: CA_VOLUME, mountPath: dirname(CA_FILE), readOnly: true }];
  if (s.mode === 'native') {
    container.restartPolicy = 'Always';
    // The kubelet starts the app containers only once this passes: decisions can be answered.
    container.startupProbe = probe('/readyz', { periodSeconds: 1, failureThreshold: SIDECAR_START_SECONDS });
  } else {
    // Before 1.29 there is no startup ordering for sidecars; the kubelet runs a container's
    // postStart hook to its end before it starts the next container, so this holds the app back.
    // A hook runs inside the container, so it asks the decision listener on loopback.
    container.lifecycle = {
      postStart: { exec: { command: ['node', HEALTHCHECK_ENTRY, '--wait', String(SIDECAR_START_SECONDS), `http://127.0.0.1:${s.port}/readyz`] } },
    };
  }
  return container;
}

// ---- helpers -----------------------------------------------------------------------------------

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
/** A JSON Pointer segment (RFC 6901): `~` → `~0`, `/` → `~1`. */
function pointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
function clip(s: string): string {
  return s.length > 64 ? `${s.slice(0, 61)}...` : s;
}
function quote(v: unknown): string {
  return JSON.stringify(typeof v === 'string' ? clip(v) : v) ?? String(v);
}
