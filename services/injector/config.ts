/**
 * Sidecar injector configuration: the `INJECTOR_*` variables and their flag twins, read once at
 * start and validated (a bad or missing value names its variable). They say how to serve the
 * webhook and what every injected sidecar gets unless a pod's annotations say otherwise.
 */
import { ConfigError, LOG_LEVELS, describeSettings, httpUrl, integer, loadSettings, nonEmpty, oneOf, type Parser, type Setting } from '../common/settings.js';
import type { LogLevel } from '../transport/observability.js';

export const SIDECAR_MODES = ['native', 'container'] as const;
/** `native`: an init container with `restartPolicy: Always` (Kubernetes ≥ 1.29); `container`: a plain first container. */
export type SidecarMode = (typeof SIDECAR_MODES)[number];

export interface InjectorConfig {
  readonly host: string;
  readonly port: number;
  /** PEM files of the serving certificate (a cert-manager Secret mounted as a volume). */
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  /** How often the certificate files are re-read; a changed pair replaces the served one. */
  readonly tlsReloadMs: number;
  /** The namespace the injector runs in: its pods are never injected. */
  readonly namespace: string;
  /** The image every sidecar runs (the same image as the injector's, by release). */
  readonly sidecarImage: string;
  readonly sidecarImagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** The control plane the sidecars follow, as they reach it (`https://authz-control-plane.authz.svc:8080`). */
  readonly controlPlaneUrl: string;
  /**
   * A PEM file of the CA that signed the control plane's certificate (the injector's own mounted
   * `ca.crt`: one CA signs both), re-read like the serving certificate and given to every sidecar
   * injected from then on; unset: sidecars trust the default roots only.
   */
  readonly controlPlaneCaFile?: string;
  readonly sidecarMode: SidecarMode;
  readonly sidecarPort: number;
  /** Where sidecars' probe listeners listen (`SIDECAR_PROBE_HOST`): `0.0.0.0`, or `::` on IPv6-only clusters. */
  readonly sidecarProbeHost: string;
  /** The key inside the Secret named by `authz.io/api-key-secret`, unless `authz.io/api-key-secret-key` says otherwise. */
  readonly apiKeySecretKey: string;
  readonly sidecarCpuRequest: string;
  readonly sidecarMemoryRequest: string;
  /** `""`: no limit. */
  readonly sidecarCpuLimit: string;
  readonly sidecarMemoryLimit: string;
  /** uid and gid the sidecar runs as (the image's non-root user). */
  readonly sidecarUser: number;
  readonly sidecarLogLevel: LogLevel;
  readonly logLevel: LogLevel;
}

/** A Kubernetes resource quantity (`100m`, `0.5`, `128Mi`, `1G`, `1e3`), or `""` where `optional`. */
export const QUANTITY = /^[+]?(\d+(\.\d*)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?$/;
const quantity =
  (optional: boolean): Parser<string> =>
  (raw, variable) => {
    const v = raw.trim();
    if (v === '' && optional) return '';
    if (!QUANTITY.test(v)) throw new ConfigError(variable, `must be a Kubernetes quantity such as 100m, 1 or 128Mi, got ${JSON.stringify(raw)}`);
    return v;
  };

/** A key of a Secret's data: what `kubectl create secret` accepts. */
export const SECRET_DATA_KEY = /^[-._a-zA-Z0-9]{1,253}$/;
const secretKey: Parser<string> = (raw, variable) => {
  if (!SECRET_DATA_KEY.test(raw)) throw new ConfigError(variable, `must be a Secret key (letters, digits, '-', '_', '.'), got ${JSON.stringify(raw)}`);
  return raw;
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const namespace: Parser<string> = (raw, variable) => {
  if (!DNS_LABEL.test(raw)) throw new ConfigError(variable, `must be a namespace name, got ${JSON.stringify(raw)}`);
  return raw;
};

// An empty variable counts as unset (the default limit applies); `none` removes the limit.
const optionalLimit: Parser<string> = (raw, variable) => (raw.trim() === 'none' ? '' : quantity(false)(raw, variable));

const SETTINGS = [
  { key: 'host', variable: 'INJECTOR_HOST', parse: nonEmpty, default: '0.0.0.0' },
  { key: 'port', variable: 'INJECTOR_PORT', parse: integer(0, 65535), default: 8443 },
  { key: 'tlsCertFile', variable: 'INJECTOR_TLS_CERT_FILE', parse: nonEmpty, default: '/etc/authz-injector/tls/tls.crt' },
  { key: 'tlsKeyFile', variable: 'INJECTOR_TLS_KEY_FILE', parse: nonEmpty, default: '/etc/authz-injector/tls/tls.key' },
  { key: 'tlsReloadMs', variable: 'INJECTOR_TLS_RELOAD_MS', parse: integer(50, 3_600_000), default: 10_000 },
  { key: 'namespace', variable: 'INJECTOR_NAMESPACE', parse: namespace, default: 'authz' },
  { key: 'sidecarImage', variable: 'INJECTOR_SIDECAR_IMAGE', parse: nonEmpty, required: true },
  { key: 'sidecarImagePullPolicy', variable: 'INJECTOR_SIDECAR_IMAGE_PULL_POLICY', parse: oneOf(['Always', 'IfNotPresent', 'Never'] as const), default: 'IfNotPresent' },
  { key: 'controlPlaneUrl', variable: 'INJECTOR_CONTROL_PLANE_URL', parse: httpUrl, required: true },
  { key: 'controlPlaneCaFile', variable: 'INJECTOR_CONTROL_PLANE_CA_FILE', parse: nonEmpty },
  { key: 'sidecarMode', variable: 'INJECTOR_SIDECAR_MODE', parse: oneOf(SIDECAR_MODES), default: 'native' },
  { key: 'sidecarPort', variable: 'INJECTOR_SIDECAR_PORT', parse: integer(1, 65535), default: 8181 },
  { key: 'sidecarProbeHost', variable: 'INJECTOR_SIDECAR_PROBE_HOST', parse: nonEmpty, default: '0.0.0.0' },
  { key: 'apiKeySecretKey', variable: 'INJECTOR_API_KEY_SECRET_KEY', parse: secretKey, default: 'api-key' },
  { key: 'sidecarCpuRequest', variable: 'INJECTOR_SIDECAR_CPU_REQUEST', parse: quantity(false), default: '50m' },
  { key: 'sidecarMemoryRequest', variable: 'INJECTOR_SIDECAR_MEMORY_REQUEST', parse: quantity(false), default: '128Mi' },
  { key: 'sidecarCpuLimit', variable: 'INJECTOR_SIDECAR_CPU_LIMIT', parse: optionalLimit, default: '1' },
  { key: 'sidecarMemoryLimit', variable: 'INJECTOR_SIDECAR_MEMORY_LIMIT', parse: optionalLimit, default: '512Mi' },
  { key: 'sidecarUser', variable: 'INJECTOR_SIDECAR_USER', parse: integer(1, 2_147_483_647), default: 10001 },
  { key: 'sidecarLogLevel', variable: 'INJECTOR_SIDECAR_LOG_LEVEL', parse: oneOf(LOG_LEVELS), default: 'info' },
  { key: 'logLevel', variable: 'INJECTOR_LOG_LEVEL', parse: oneOf(LOG_LEVELS), default: 'info' },
] as const satisfies readonly Setting<InjectorConfig>[];

export const INJECTOR_VARIABLES = describeSettings(SETTINGS);

/** Reads, validates and freezes the injector's configuration. */
export function loadInjectorConfig(
  env: Record<string, string | undefined> = process.env,
  argv: readonly string[] = process.argv.slice(2),
): InjectorConfig {
  const config: InjectorConfig = loadSettings(SETTINGS, env, argv);
  // The sidecar refuses a CA for a plain-text control plane (sidecar/config.ts): every injected pod would fail to start.
  if (config.controlPlaneCaFile !== undefined && !config.controlPlaneUrl.startsWith('https:')) {
    throw new ConfigError('INJECTOR_CONTROL_PLANE_CA_FILE', `is only for an https:// control plane, and INJECTOR_CONTROL_PLANE_URL is ${config.controlPlaneUrl}`);
  }
  return config;
}
