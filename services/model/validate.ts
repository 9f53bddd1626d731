/**
 * Checking a model file as the server would, without a server: the JSON Schema first, then
 * everything the API refuses (references to nothing, cycles, limits, JSON Logic and regular
 * expression bounds), with the API's own validators. Each error names the file, line, column
 * and path of what it is about.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { DomainError } from '../common/errors.js';
import { MAX_BATCH, MAX_STRING } from '../common/validate.js';
import { validateJsonLogic, validateMatchDefinition } from '../engine/mod.js';
import { MAX_HIERARCHY_DEPTH } from '../engine/mod.js';
import { checkJsonValue, stringProblem, timeProblem } from '../transport/guard.js';
import { MAX_BODY_BYTES } from '../transport/request-limits.js';
import { TenantModelSchema, type TenantModel } from './format.js';
import { chainOf, entitiesOf, splitResource, universeOf, type Entities, type Universe } from './entities.js';
import { formatPath, parseModelText, type ModelError, type ParsedModel, type PathPart } from './parse.js';

let compiled: ValidateFunction | undefined;

/** Compiles the schema's validator now (a long-running process calls it at start; it takes tens of milliseconds). */
export function prepareModelChecks(): void {
  schemaValidator();
}

function schemaValidator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    compiled = ajv.compile(JSON.parse(JSON.stringify(TenantModelSchema)) as object);
  }
  return compiled;
}

/** A checked model: the model when it has no errors, and the entities it defines. */
export interface CheckedModel {
  parsed: ParsedModel;
  model?: TenantModel;
  entities?: Entities;
  errors: ModelError[];
}

/** What the model is checked against beyond itself. */
export interface CheckContext {
  /** What exists outside the file (the tenant's state, for the sections the file leaves out). */
  universe?: Universe;
  /** External ids of API keys' subjects: members and owners a file may name but not list. */
  keySubjects?: Iterable<string>;
}

/** Reads and checks a model's text (see the module comment). */
export function checkModelText(text: string, file = 'model.yaml', context: CheckContext = {}): CheckedModel {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_BODY_BYTES) {
    const parsed: ParsedModel = { file, value: undefined, errors: [], locate: () => ({ line: 1, column: 1 }) };
    return { parsed, errors: [{ file, line: 1, column: 1, path: '', message: `the document is ${bytes} bytes; the server takes at most ${MAX_BODY_BYTES}` }] };
  }
  return checkParsedModel(parseModelText(text, file), context);
}

/** Errors placed in the file per document; past it they are counted, not placed (placing one walks the document). */
export const MAX_PLACED_ERRORS = 100;

/**
 * Where a document's errors go: `report` places each in the file, up to MAX_PLACED_ERRORS, and
 * counts the rest; `all()` gives them in file order, the count of the rest last.
 */
export function errorCollector(parsed: ParsedModel): { report: (path: PathPart[], message: string, key?: boolean) => void; all(): ModelError[]; readonly count: number } {
  const errors: ModelError[] = [...parsed.errors];
  let more = 0;
  return {
    report(path, message, key = false) {
      if (errors.length >= MAX_PLACED_ERRORS) more++;
      else errors.push({ file: parsed.file, ...parsed.locate(path, key), path: formatPath(path), message });
    },
    all() {
      const placed = dedupe(errors);
      return more > 0 ? [...placed, { file: parsed.file, line: 0, column: 0, path: '', message: `… and ${more} more errors` }] : placed;
    },
    get count() {
      return errors.length + more;
    },
  };
}

/** Checks a parsed model: schema, then the rules of the API. */
export function checkParsedModel(parsed: ParsedModel, context: CheckContext = {}): CheckedModel {
  const collected = errorCollector(parsed);
  const report = collected.report;
  if (collected.count > 0) return { parsed, errors: collected.all() };
  const validate = schemaValidator();
  if (!validate(parsed.value)) {
    reportSchemaErrors(validate.errors ?? [], report, 'a tenant model');
    return { parsed, errors: collected.all() };
  }
  const model = parsed.value as TenantModel;
  checkValues(model, report);
  const own = universeOf(model);
  const universe: Universe = { ...context.universe };
  if (context.keySubjects) universe.keySubjects = new Set(context.keySubjects);
  for (const [k, v] of Object.entries(own)) if (v !== undefined) (universe as Record<string, unknown>)[k] = v;
  const entities = entitiesOf(model, universe, report);
  checkRules(model, universe, report);
  return collected.count > 0 ? { parsed, errors: collected.all() } : { parsed, model, entities, errors: [] };
}

/** One error per place and message, in file order. */
export function dedupe(errors: ModelError[]): ModelError[] {
  const seen = new Set<string>();
  return errors
    .filter((e) => {
      const k = `${e.path}\0${e.message}`;
      return !seen.has(k) && (seen.add(k), true);
    })
    .sort((a, b) => a.line - b.line || a.column - b.column);
}

const PATTERN_HINTS: Record<string, string> = {
  '^/([^/]+(/[^/]+)*)?$': 'must be a scope path: "/" for the root, or "/name/name..." from it',
  '^(/[^/]+)+$': 'must be a scope path below the root: "/name" or "/name/name..."',
  '^[a-z0-9_-]+/.+$': 'must name a resource as "<type key>/<external id>"',
  '^[^:]+:[^:]+:.+$': 'must be a permission key "<resourceType>:<action>:<resourcePattern>" (the resource type and action hold no ":")',
  '^[a-z0-9_-]+$': 'must be lowercase letters, digits, "_" or "-"',
  '^[A-Za-z0-9_-]{1,64}$': 'must be 1-64 letters, digits, "_" or "-"',
};

function pointerParts(pointer: string): PathPart[] {
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** A JSON Schema validator's errors, each reported at its path in words (`document` names the top-level object). */
export function reportSchemaErrors(errors: ErrorObject[], report: (path: PathPart[], message: string, key?: boolean) => void, document: string): void {
  for (const e of errors) schemaError(e, report, document);
}

function schemaError(e: ErrorObject, report: (path: PathPart[], message: string, key?: boolean) => void, document: string): void {
  const path = pointerParts(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return report([...path, String(p.missingProperty)], 'is required');
    case 'additionalProperties':
      return report([...path, String(p.additionalProperty)], `is not a field of ${path.length === 0 ? document : 'this entry'}`, true);
    case 'enum':
      return report(path, `must be one of ${(p.allowedValues as string[]).join(', ')}`);
    case 'const':
      return report(path, `must be "${String(p.allowedValue)}"`);
    case 'pattern':
      return report(path, PATTERN_HINTS[String(p.pattern)] ?? (e.message ?? 'does not match the expected form'));
    case 'minProperties':
    case 'maxProperties':
      return report(path, `must hold exactly one of ${Object.keys((e.parentSchema as { properties?: object })?.properties ?? {}).join(', ')}`);
    case 'maxItems':
      return report(path, `holds more than ${String(p.limit)} items (${p.limit === MAX_BATCH ? 'the API\'s batch limit' : 'the API\'s limit'})`);
    case 'maxLength':
      return report(path, `is longer than ${String(p.limit)} characters`);
    default:
      return report(path, e.message ?? 'is not valid');
  }
}

/** `a.b[2].c` back to parts (for messages of the API's validators, which name paths so). */
function parsePath(text: string): PathPart[] {
  const out: PathPart[] = [];
  for (const m of text.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

/** Reports an API validator's `<path>: <why>` message at its path. */
function reportAt(message: string, fallback: PathPart[], report: (path: PathPart[], message: string) => void): void {
  const at = message.indexOf(': ');
  if (at < 0) return report(fallback, message);
  report(parsePath(message.slice(0, at)), message.slice(at + 2));
}

/** Every string storable (no NUL, no lone surrogate); every JSON value within the API's bounds. */
function checkValues(m: TenantModel, report: (path: PathPart[], message: string) => void): void {
  const json = (v: unknown, path: PathPart[]) => {
    if (v === undefined) return;
    try {
      checkJsonValue(v, formatPath(path));
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      reportAt(err.message, path, report);
    }
  };
  const walk = (v: unknown, path: PathPart[]) => {
    if (typeof v === 'string') {
      const problem = stringProblem(v);
      if (problem) report(path, problem);
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...path, i]));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(m, []);
  m.subjects?.forEach((s, i) => json(s.metadata, ['subjects', i, 'metadata']));
  m.resources?.forEach((r, i) => json(r.attributes, ['resources', i, 'attributes']));
  m.scopeLinks?.forEach((l, i) => json(l.metadata, ['scopeLinks', i, 'metadata']));
  m.collections?.forEach((c, i) => {
    json(c.match, ['collections', i, 'match']);
    const err = validateMatchDefinition(c.match, formatPath(['collections', i, 'match']));
    if (err) reportAt(err, ['collections', i, 'match'], report);
  });
  m.policies?.forEach((p, i) => {
    for (const field of ['subjectCondition', 'contextCondition'] as const) {
      const rule = p[field];
      if (rule === undefined) continue;
      json(rule, ['policies', i, field]);
      const err = validateJsonLogic(rule);
      if (err) reportAt(err.startsWith('rule') ? formatPath(['policies', i, field]) + err.slice('rule'.length) : err, ['policies', i, field], report);
    }
    for (const field of ['validFrom', 'validUntil'] as const) {
      const problem = p[field] === undefined ? null : timeProblem(Date.parse(p[field]!));
      if (problem) report(['policies', i, field], problem);
    }
    if (p.validFrom && p.validUntil && Date.parse(p.validFrom) >= Date.parse(p.validUntil)) report(['policies', i, 'validUntil'], 'must be later than validFrom');
  });
  const scopePath = (s: string | undefined, path: PathPart[]) => {
    if (s === undefined) return;
    const names = s.split('/').slice(1).filter((x) => x !== '');
    if (names.some((n) => n.length > MAX_STRING)) report(path, `names a scope longer than ${MAX_STRING} characters`);
    if (names.length + 1 > MAX_HIERARCHY_DEPTH) report(path, `is ${names.length + 1} levels deep; at most ${MAX_HIERARCHY_DEPTH} are allowed`);
  };
  m.scopes?.forEach((s, i) => scopePath(s.path, ['scopes', i, 'path']));
  const resourceRef = (r: string, path: PathPart[]) => {
    if (splitResource(r).externalId.length > MAX_STRING) report(path, `names an external id longer than ${MAX_STRING} characters`);
  };
  m.resourceHierarchy?.forEach((e, i) => {
    resourceRef(e.parent, ['resourceHierarchy', i, 'parent']);
    resourceRef(e.child, ['resourceHierarchy', i, 'child']);
  });
  m.permissions?.forEach((p, i) => {
    const [type, action] = p.key.split(':');
    const pattern = p.key.slice(type.length + action.length + 2);
    if ([type, action, pattern].some((x) => x.length > MAX_STRING)) report(['permissions', i, 'key'], `each part is at most ${MAX_STRING} characters`);
  });
}

/**
 * The API's rules that span entries: where a resource type may be used, the resource hierarchy
 * (one parent, no cycle, depth, the type hierarchy), and the per-target limit of tag groups.
 */
function checkRules(m: TenantModel, u: Universe, report: (path: PathPart[], message: string) => void): void {
  m.resources?.forEach((r, i) => {
    const typeScope = u.resourceTypes?.get(r.type);
    if (typeScope !== undefined && !chainOf(r.scope ?? '/').includes(typeScope)) {
      report(['resources', i, 'type'], `resource type "${r.type}" is defined at ${typeScope}, which is neither ${r.scope ?? '/'} nor above it`);
    }
  });
  if (m.resourceHierarchy) {
    const parentOf = new Map<string, string>();
    for (const e of m.resourceHierarchy) parentOf.set(e.child, e.parent);
    const allowed = m.resourceTypeHierarchy && new Set(m.resourceTypeHierarchy.map((e) => `${e.parent}/${e.child}`));
    m.resourceHierarchy.forEach((e, i) => {
      const path: PathPart[] = ['resourceHierarchy', i];
      if (e.parent === e.child) return report([...path, 'child'], 'a resource cannot be its own parent');
      const pt = splitResource(e.parent).type;
      const ct = splitResource(e.child).type;
      if (allowed && !allowed.has(`${pt}/${ct}`)) report([...path, 'child'], `the resource type hierarchy does not allow type "${pt}" to contain type "${ct}"`);
      let depth = 1;
      for (let cur: string | undefined = e.parent; cur !== undefined; cur = parentOf.get(cur)) {
        if (cur === e.child) return report([...path, 'parent'], `making ${e.parent} the parent of ${e.child} creates a cycle`);
        if (++depth > MAX_HIERARCHY_DEPTH) return report([...path, 'parent'], `the hierarchy above ${e.child} is deeper than ${MAX_HIERARCHY_DEPTH} levels`);
      }
    });
  }
  if (m.tagAssignments && u.tagGroups) {
    const counts = new Map<string, number>();
    m.tagAssignments.forEach((a, i) => {
      const g = u.tagGroups!.get(a.tag.group);
      if (!g || g.max === 0) return;
      const [targetType, target] = Object.entries(a.target)[0];
      const k = `${a.tag.group}\0${targetType}\0${target}`;
      const n = (counts.get(k) ?? 0) + 1;
      counts.set(k, n);
      if (n > g.max) report(['tagAssignments', i], `${targetType} ${target} carries more than ${g.max} tag(s) of group "${a.tag.group}"`);
    });
  }
}
