/**
 * Renders a kustomization the way `kubectl kustomize` (kustomize v5) does, for the features
 * deploy/ uses, so that CI checks what a cluster would receive without kubectl. Where kubectl is
 * on PATH, test/deploy compares the two outputs object by object (hash suffixes included), so
 * this stays honest as deploy/ grows; a kustomization field it does not know is an error.
 *
 * Covered: `resources` (files and directories, each directory rendered first), `namespace`,
 * `configMapGenerator` (create and `behavior: merge`, `options.labels`, literals; the content
 * hash suffix and references to it from pod specs), `images`, `replicas`, and `patches` (strategic
 * merge files, `$patch: delete`, and inline JSON 6902 patches with a `target`).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { parseAllDocuments } from 'yaml';

type Json = any;
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: Json;
}

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'configMapGenerator', 'images', 'replicas', 'patches']);
/** Kinds without a namespace among those deploy/ uses. */
export const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'CustomResourceDefinition']);
/** Lists that strategic merge patches merge by a key (Kubernetes' patchMergeKey), per field name. */
const MERGE_KEYS: Record<string, string> = { containers: 'name', initContainers: 'name', env: 'name', volumes: 'name', volumeMounts: 'mountPath' };
const BUILTIN_GROUPS = /^(v1|apps\/v1|policy\/v1|networking\.k8s\.io\/v1|autoscaling\/v2|admissionregistration\.k8s\.io\/v1)$/;

/** Every document of a YAML file, as kustomize reads them (YAML 1.2). */
export function readYaml(file: string): Json[] {
  return parseAllDocuments(readFileSync(file, 'utf8'), { version: '1.2' })
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS();
    })
    .filter((v) => v !== null && v !== undefined);
}

interface Generated {
  /** The name before the hash suffix, as overlays merge into it. */
  baseName: string;
}
const generated = new WeakMap<K8sObject, Generated>();

/** The configMapGenerator hash suffix, computed as kustomize does (its encoder looks up `metadata/name` as one key, so the name hashes as ""). */
export function configMapHash(data: Record<string, string>): string {
  const sorted = Object.fromEntries(Object.keys(data).sort().map((k) => [k, data[k]]));
  const hex = createHash('sha256').update(JSON.stringify({ data: sorted, kind: 'ConfigMap', name: '' })).digest('hex');
  return hex.slice(0, 10).replace(/[013ae]/g, (c) => ({ '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' })[c]!);
}

/** Renders the kustomization in `dir` into the objects `kubectl kustomize dir` prints. */
export function kustomize(dir: string): K8sObject[] {
  const objects = accumulate(dir);
  // Names of generated ConfigMaps get their content hash, and pod specs follow the rename.
  const renamed = new Map<string, string>();
  for (const o of objects) {
    const g = generated.get(o);
    if (!g) continue;
    o.metadata.name = `${g.baseName}-${configMapHash(o.data ?? {})}`;
    renamed.set(`${o.metadata.namespace ?? ''}/${g.baseName}`, o.metadata.name);
  }
  for (const o of objects) {
    const spec = podSpecOf(o);
    if (!spec) continue;
    const rename = (ref: { name?: string } | undefined) => {
      const to = ref?.name !== undefined ? renamed.get(`${o.metadata.namespace ?? ''}/${ref.name}`) : undefined;
      if (to) ref!.name = to;
    };
    for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
      for (const e of c.envFrom ?? []) rename(e.configMapRef);
      for (const e of c.env ?? []) rename(e.valueFrom?.configMapKeyRef);
    }
    for (const v of spec.volumes ?? []) rename(v.configMap);
  }
  return objects;
}

function accumulate(dir: string): K8sObject[] {
  const k = readYaml(join(dir, 'kustomization.yaml'))[0];
  for (const field of Object.keys(k)) if (!KNOWN_FIELDS.has(field)) throw new Error(`${dir}/kustomization.yaml: ${field} is not supported by test/deploy/kustomize.ts`);
  let objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const path = resolve(dir, r);
    objects.push(...(statSync(path).isDirectory() ? accumulate(path) : (readYaml(path) as K8sObject[])));
  }
  for (const g of k.configMapGenerator ?? []) {
    const data = Object.fromEntries((g.literals ?? []).map((l: string) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    if (g.envs || g.files) throw new Error(`${dir}: configMapGenerator envs/files are not supported here`);
    if (g.behavior === 'merge' || g.behavior === 'replace') {
      const target = objects.find((o) => o.kind === 'ConfigMap' && generated.get(o)?.baseName === g.name);
      if (!target) throw new Error(`${dir}: configMapGenerator ${g.name} merges into a ConfigMap no resource generates`);
      target.data = g.behavior === 'merge' ? { ...target.data, ...data } : data;
      continue;
    }
    const cm: K8sObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name, ...(g.options?.labels ? { labels: { ...g.options.labels } } : {}) }, data };
    generated.set(cm, { baseName: g.name });
    objects.push(cm);
  }
  // Transformers, in kustomize's order: patches, namespace, replicas, images.
  for (const p of k.patches ?? []) objects = applyPatch(objects, p, dir);
  if (k.namespace) {
    for (const o of objects) {
      if (!CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
      for (const w of o.kind.endsWith('WebhookConfiguration') ? o.webhooks ?? [] : []) {
        if (w.clientConfig?.service) w.clientConfig.service.namespace = k.namespace;
      }
    }
  }
  for (const r of k.replicas ?? []) {
    const hits = objects.filter((o) => o.metadata.name === r.name && ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(o.kind));
    if (hits.length === 0) throw new Error(`${dir}: replicas for ${r.name}, which is not here`);
    for (const o of hits) o.spec.replicas = r.count;
  }
  for (const i of k.images ?? []) {
    for (const o of objects) {
      const spec = podSpecOf(o);
      for (const c of spec ? [...(spec.containers ?? []), ...(spec.initContainers ?? [])] : []) {
        const m = /^([^:@]+(?::\d+\/[^:@]+)?)(:[^@]+)?(@.+)?$/.exec(c.image);
        if (!m || m[1] !== i.name) continue;
        c.image = (i.newName ?? m[1]) + (i.digest ? `@${i.digest}` : i.newTag ? `:${i.newTag}` : (m[2] ?? '') + (m[3] ?? ''));
      }
    }
  }
  return objects;
}

function applyPatch(objects: K8sObject[], p: Json, dir: string): K8sObject[] {
  if (p.path) {
    for (const doc of readYaml(resolve(dir, p.path))) objects = strategicMerge(objects, doc, `${dir}/${p.path}`);
    return objects;
  }
  const ops = readYamlText(p.patch);
  if (!Array.isArray(ops) || !p.target) throw new Error(`${dir}: only JSON 6902 inline patches with a target are supported here`);
  const targets = objects.filter(
    (o) => o.kind === p.target.kind && o.metadata.name === p.target.name && (!p.target.group || o.apiVersion.startsWith(`${p.target.group}/`)),
  );
  if (targets.length === 0) throw new Error(`${dir}: patch target ${p.target.kind}/${p.target.name} not found`);
  return objects.map((o) => (targets.includes(o) ? keepGenerated(o, jsonpatch.applyPatch(structuredClone(o), ops, true, false).newDocument) : o));
}

function readYamlText(text: string): Json {
  const docs = parseAllDocuments(text, { version: '1.2' });
  return (Array.isArray(docs) ? docs : [docs])[0].toJS();
}

function strategicMerge(objects: K8sObject[], patch: Json, where: string): K8sObject[] {
  const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata?.name && (!patch.metadata?.namespace || o.metadata.namespace === patch.metadata.namespace));
  if (i === -1) throw new Error(`${where}: patch target ${patch.kind}/${patch.metadata?.name} not found`);
  if (patch.$patch === 'delete') return objects.filter((_, j) => j !== i);
  // Built-in kinds merge lists by key; custom resources get a JSON merge patch (lists replaced), as in kustomize.
  const byKey = BUILTIN_GROUPS.test(objects[i].apiVersion);
  const { apiVersion: _a, kind: _k, ...rest } = patch;
  const merged = keepGenerated(objects[i], { ...mergeValue(objects[i], rest, byKey, '') });
  return objects.map((o, j) => (j === i ? merged : o));
}

function mergeValue(target: Json, patch: Json, byKey: boolean, field: string): Json {
  if (patch === null) return undefined;
  if (Array.isArray(patch)) {
    const key = byKey ? MERGE_KEYS[field] : undefined;
    if (!key || !Array.isArray(target)) return structuredClone(patch);
    const out = structuredClone(target);
    for (const item of patch) {
      const at = out.findIndex((t: Json) => t?.[key] === item?.[key]);
      if (at === -1) out.push(structuredClone(item));
      else out[at] = mergeValue(out[at], item, byKey, '');
    }
    return out;
  }
  if (typeof patch !== 'object') return patch;
  const out: Json = typeof target === 'object' && target !== null && !Array.isArray(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    const value = mergeValue(out[k], v, byKey, k);
    if (value === undefined) delete out[k];
    else out[k] = value;
  }
  return out;
}

function keepGenerated(from: K8sObject, to: K8sObject): K8sObject {
  const g = generated.get(from);
  if (g) generated.set(to, g);
  return to;
}

/** The pod template's spec of a workload, or a Pod's spec. */
export function podSpecOf(o: K8sObject): Json | undefined {
  if (o.kind === 'Pod') return o.spec;
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(o.kind)) return o.spec?.template?.spec;
  return undefined;
}
