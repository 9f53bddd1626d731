/**
 * Kubernetes objects checked against the Kubernetes schemas, offline:
 *
 * - built-in kinds with `kubernetes-models` and cert-manager's with `@kubernetes-models/cert-manager`:
 *   each model's `validate()` (the OpenAPI schema: types, required fields, formats such as
 *   quantities), plus the TypeScript compiler over the models' declarations, which refuses a field
 *   the schema does not have (a misspelt `restartPolicy` the JSON schema lets through, as the API
 *   server's strict field validation would not);
 * - CloudNativePG's `Cluster` has no models package: its apiVersion, kind, required `spec.instances`
 *   and the shape of the fields deploy/ uses are checked by hand below (field names from the
 *   operator's CRD as of release 1.30), not the whole CRD schema.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import type { K8sObject } from './kustomize.js';

type Json = any;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILTIN = /^(v1|apps\/v1|policy\/v1|networking\.k8s\.io\/v1|autoscaling\/v2|admissionregistration\.k8s\.io\/v1)$/;

/** The models module of an object's kind, or undefined when no package covers it. */
function modelModule(o: K8sObject): string | undefined {
  if (BUILTIN.test(o.apiVersion)) return `kubernetes-models/${o.apiVersion}/${o.kind}`;
  if (o.apiVersion === 'cert-manager.io/v1') return `@kubernetes-models/cert-manager/cert-manager.io/v1/${o.kind}`;
  return undefined;
}

export interface Checked {
  where: string;
  object: K8sObject;
}

/** Every problem found, as `where kind/name: message`; empty when all objects are valid. */
export async function validateObjects(items: Checked[]): Promise<string[]> {
  const problems: string[] = [];
  const typed: (Checked & { module: string })[] = [];
  for (const item of items) {
    const { object: o, where } = item;
    const name = `${where} ${o.kind}/${o.metadata?.name}`;
    if (o.apiVersion === 'postgresql.cnpg.io/v1' && o.kind === 'Cluster') {
      problems.push(...checkCnpgCluster(o).map((p) => `${name}: ${p}`));
      continue;
    }
    const module = modelModule(o);
    if (!module) {
      problems.push(`${name}: no schema known for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    let Model: (new (data: Json) => { validate(): void }) | undefined;
    try {
      Model = (await import(module))[o.kind];
    } catch {
      Model = undefined;
    }
    if (!Model) {
      problems.push(`${name}: ${o.apiVersion} has no kind ${o.kind}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
    typed.push({ ...item, module });
  }
  problems.push(...unknownFields(typed));
  return problems;
}

/**
 * Type-checks every object as an object literal of its model's interface: TypeScript's excess
 * property check names each field the schema does not have, at any depth.
 */
function unknownFields(items: (Checked & { module: string })[]): string[] {
  if (items.length === 0) return [];
  const file = join(ROOT, 'test/deploy/__objects__.ts');
  const modules = [...new Set(items.map((i) => `${i.module}|I${i.object.kind}`))];
  const alias = new Map(modules.map((m, i) => [m, `T${i}`]));
  const header = modules.map((m) => `import type { ${m.split('|')[1]} as ${alias.get(m)} } from '${m.split('|')[0]}';`);
  const lines = items.map((i, n) => `export const o${n}: ${alias.get(`${i.module}|I${i.object.kind}`)} = ${JSON.stringify(i.object)};`);
  const text = [...header, ...lines].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === file ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
    const line = d.start === undefined ? -1 : source.getLineAndCharacterOfPosition(d.start).line - header.length;
    const item = items[line];
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    return item ? `${item.where} ${item.object.kind}/${item.object.metadata?.name}: ${message}` : message;
  });
}

// ---- CloudNativePG Cluster ---------------------------------------------------------------------

const QUANTITY = /^[+]?(\d+(\.\d*)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?$/;
type Shape = 'string' | 'boolean' | 'quantity' | 'int>=1' | { enum: string[] } | { map: Shape } | { fields: Record<string, Shape>; open?: string[] };
/** The fields of `postgresql.cnpg.io/v1` Cluster that deploy/ sets, typed; `open` lists the other fields the CRD has (not checked further). */
const CLUSTER_SPEC: Shape = {
  fields: {
    instances: 'int>=1',
    primaryUpdateStrategy: { enum: ['unsupervised', 'supervised'] },
    enablePDB: 'boolean',
    imageName: 'string',
    bootstrap: { fields: { initdb: { fields: { database: 'string', owner: 'string', secret: { fields: { name: 'string' } } }, open: ['dataChecksums', 'encoding', 'locale', 'localeCType', 'localeCollate', 'options', 'postInitApplicationSQL', 'postInitSQL', 'walSegmentSize'] } }, open: ['recovery', 'pg_basebackup'] },
    postgresql: { fields: { parameters: { map: 'string' } }, open: ['pg_hba', 'pg_ident', 'shared_preload_libraries', 'synchronous', 'enableAlterSystem', 'extensions', 'ldap', 'promotionTimeout', 'syncReplicaElectionConstraint'] },
    storage: { fields: { size: 'quantity', storageClass: 'string', resizeInUseVolumes: 'boolean' }, open: ['pvcTemplate'] },
    resources: { fields: { requests: { map: 'quantity' }, limits: { map: 'quantity' } } },
    affinity: { fields: { enablePodAntiAffinity: 'boolean', topologyKey: 'string', podAntiAffinityType: { enum: ['preferred', 'required'] } }, open: ['additionalPodAffinity', 'additionalPodAntiAffinity', 'nodeAffinity', 'nodeSelector', 'tolerations'] },
  },
  open: [
    'backup', 'certificates', 'description', 'enableSuperuserAccess', 'env', 'envFrom', 'ephemeralVolumeSource', 'ephemeralVolumesSizeLimit',
    'externalClusters', 'failoverDelay', 'imageCatalogRef', 'imagePullPolicy', 'imagePullSecrets', 'inheritedMetadata', 'livenessProbeTimeout',
    'logLevel', 'managed', 'maxSyncReplicas', 'minSyncReplicas', 'monitoring', 'nodeMaintenanceWindow', 'plugins', 'podSecurityContext',
    'postgresGID', 'postgresUID', 'primaryUpdateMethod', 'priorityClassName', 'probes', 'projectedVolumeTemplate', 'replica', 'replicationSlots',
    'schedulerName', 'seccompProfile', 'securityContext', 'serviceAccountTemplate', 'smartShutdownTimeout', 'startDelay', 'stopDelay',
    'superuserSecret', 'switchoverDelay', 'tablespaces', 'topologySpreadConstraints', 'walStorage',
  ],
};

function checkShape(value: Json, shape: Shape, path: string): string[] {
  if (shape === 'string') return typeof value === 'string' ? [] : [`${path} must be a string`];
  if (shape === 'boolean') return typeof value === 'boolean' ? [] : [`${path} must be a boolean`];
  if (shape === 'quantity') return (typeof value === 'string' && QUANTITY.test(value)) || typeof value === 'number' ? [] : [`${path} must be a quantity`];
  if (shape === 'int>=1') return Number.isInteger(value) && value >= 1 ? [] : [`${path} must be an integer of at least 1`];
  if ('enum' in shape) return shape.enum.includes(value) ? [] : [`${path} must be one of ${shape.enum.join(', ')}`];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path} must be an object`];
  if ('map' in shape) return Object.entries(value).flatMap(([k, v]) => checkShape(v, shape.map, `${path}.${k}`));
  return Object.entries(value).flatMap(([k, v]) =>
    shape.fields[k] ? checkShape(v, shape.fields[k], `${path}.${k}`) : shape.open?.includes(k) ? [] : [`${path}.${k} is not a field of the Cluster CRD`],
  );
}

function checkCnpgCluster(o: K8sObject): string[] {
  const problems: string[] = [];
  for (const k of Object.keys(o)) if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(k)) problems.push(`${k} is not a field of a Cluster`);
  if (typeof o.metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(o.metadata.name)) problems.push('metadata.name must be a DNS label');
  if (o.spec === undefined) return [...problems, 'spec is required'];
  if (o.spec.instances === undefined) problems.push('spec.instances is required');
  return [...problems, ...checkShape(o.spec, CLUSTER_SPEC, 'spec')];
}
