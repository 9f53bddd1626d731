/**
 * REST routes compiled from the `google.api.http` options of service descriptors: one route
 * per binding (the main rule and each of its `additional_bindings`). There is no hand-written
 * route table: a new RPC with an http option is served as soon as its service is registered.
 */
import { getOption, hasOption, type DescField, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { http } from '../../../gen/google/api/annotations_pb.js';
import type { HttpRule } from '../../../gen/google/api/http_pb.js';

/** One segment of a path template: a literal, or a variable bound to a (possibly nested) field. */
export type Segment = { kind: 'literal'; value: string } | { kind: 'variable'; name: string; fields: DescField[] };

/** How the request body maps onto the request message. */
export type BodySpec =
  | { kind: 'none' }
  | { kind: 'all' } // body: "*"
  | { kind: 'field'; field: DescField }; // body: "items"

export interface Route {
  method: DescMethod;
  /** Upper-case HTTP method. */
  verb: string;
  template: string;
  segments: Segment[];
  body: BodySpec;
  /** The response field sent as the body (`response_body`), or undefined for the whole message. */
  responseBody?: DescField;
  /** Fields bound by path variables, by top-level field (for conflict checks). */
  pathFieldNames: ReadonlySet<string>;
}

export type RouteMatch =
  | { kind: 'match'; route: Route; params: Map<string, string> }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'not_found' };

/** An invalid http option: thrown at start-up so a bad proto cannot reach traffic. */
export class RouteConfigError extends Error {
  override name = 'RouteConfigError';
}

/** Resolves a dotted field path (`actor.subject_id`) against a message, by proto field name. */
export function resolveFieldPath(desc: DescMessage, path: string): DescField[] | undefined {
  const out: DescField[] = [];
  let msg: DescMessage | undefined = desc;
  for (const part of path.split('.')) {
    if (!msg) return undefined;
    const f: DescField | undefined = msg.fields.find((x) => x.name === part) ?? msg.fields.find((x) => x.jsonName === part);
    if (!f) return undefined;
    out.push(f);
    msg = f.fieldKind === 'message' ? f.message : undefined;
  }
  return out;
}

function parseTemplate(template: string, input: DescMessage, where: string): Segment[] {
  if (!template.startsWith('/')) throw new RouteConfigError(`${where}: path ${template} must start with /`);
  const parts = template.slice(1).split('/');
  return parts.map((part) => {
    const m = /^\{([A-Za-z_][A-Za-z0-9_.]*)(?:=\*)?\}$/.exec(part);
    if (m) {
      const fields = resolveFieldPath(input, m[1]);
      if (!fields) throw new RouteConfigError(`${where}: path variable {${m[1]}} names no field of ${input.typeName}`);
      const last = fields[fields.length - 1];
      if (last.fieldKind !== 'scalar' && last.fieldKind !== 'enum') {
        throw new RouteConfigError(`${where}: path variable {${m[1]}} must be a singular scalar field`);
      }
      return { kind: 'variable', name: m[1], fields };
    }
    if (/[{}*]/.test(part)) throw new RouteConfigError(`${where}: unsupported path segment ${part} in ${template}`);
    return { kind: 'literal', value: part };
  });
}

function patternOf(rule: HttpRule): { verb: string; path: string } | undefined {
  const p = rule.pattern;
  switch (p.case) {
    case 'get':
    case 'put':
    case 'post':
    case 'delete':
    case 'patch':
      return { verb: p.case.toUpperCase(), path: p.value };
    case 'custom':
      return p.value.kind ? { verb: p.value.kind.toUpperCase(), path: p.value.path } : undefined;
    default:
      return undefined;
  }
}

function compileRule(method: DescMethod, rule: HttpRule, where: string): Route {
  const pattern = patternOf(rule);
  if (!pattern) throw new RouteConfigError(`${where}: http rule has no method and path`);
  const segments = parseTemplate(pattern.path, method.input, where);
  let body: BodySpec = { kind: 'none' };
  if (rule.body === '*') {
    body = { kind: 'all' };
  } else if (rule.body !== '') {
    const field = method.input.fields.find((f) => f.name === rule.body);
    if (!field) throw new RouteConfigError(`${where}: body ${rule.body} names no field of ${method.input.typeName}`);
    body = { kind: 'field', field };
  }
  let responseBody: DescField | undefined;
  if (rule.responseBody !== '') {
    responseBody = method.output.fields.find((f) => f.name === rule.responseBody);
    if (!responseBody) {
      throw new RouteConfigError(`${where}: response_body ${rule.responseBody} names no field of ${method.output.typeName}`);
    }
  }
  const pathFieldNames = new Set<string>();
  for (const s of segments) {
    if (s.kind !== 'variable') continue;
    if (pathFieldNames.has(s.name)) throw new RouteConfigError(`${where}: path variable {${s.name}} appears twice`);
    pathFieldNames.add(s.name);
    if (body.kind === 'field' && s.fields[0] === body.field) {
      throw new RouteConfigError(`${where}: path variable {${s.name}} lies inside the body field`);
    }
  }
  return { method, verb: pattern.verb, template: pattern.path, segments, body, responseBody, pathFieldNames };
}

/** The REST bindings of one method (main rule plus additional bindings); empty when it has none. */
export function routesOf(method: DescMethod): Route[] {
  if (!hasOption(method, http)) return [];
  const where = `${method.parent.typeName}.${method.name}`;
  if (method.methodKind !== 'unary') {
    throw new RouteConfigError(`${where}: only unary RPCs can have a REST binding`);
  }
  const rule = getOption(method, http);
  const main = compileRule(method, rule, where);
  const out = [main];
  for (const extra of rule.additionalBindings) {
    if (extra.additionalBindings.length > 0) {
      throw new RouteConfigError(`${where}: additional_bindings cannot nest`);
    }
    const route = compileRule(method, extra, where);
    // An additional binding that leaves response_body empty answers like the main binding:
    // proto3 cannot tell "unset" from "", and an alias path should not change the body shape.
    if (extra.responseBody === '') route.responseBody = main.responseBody;
    out.push(route);
  }
  return out;
}

/** Specificity order: literal segments before variables, left to right. */
function compareSpecificity(a: Route, b: Route): number {
  const n = Math.min(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const x = a.segments[i].kind === 'literal' ? 0 : 1;
    const y = b.segments[i].kind === 'literal' ? 0 : 1;
    if (x !== y) return x - y;
  }
  return a.segments.length - b.segments.length;
}

/** A compiled route table; `match` prefers literal segments over variables. */
export class RouteTable {
  /** Routes grouped by segment count, most specific first. */
  private readonly byLength = new Map<number, Route[]>();
  readonly routes: readonly Route[];

  constructor(services: readonly DescService[]) {
    const all: Route[] = [];
    const seen = new Map<string, Route>();
    const seenServices = new Set<string>();
    for (const service of services) {
      if (seenServices.has(service.typeName)) continue;
      seenServices.add(service.typeName);
      for (const method of service.methods) {
        for (const route of routesOf(method)) {
          const key = `${route.verb} /${route.segments.map((s) => (s.kind === 'literal' ? s.value : '{}')).join('/')}`;
          const prior = seen.get(key);
          if (prior) {
            throw new RouteConfigError(
              `${route.verb} ${route.template} of ${method.parent.typeName}.${method.name} collides with ${prior.template} of ${prior.method.parent.typeName}.${prior.method.name}`,
            );
          }
          seen.set(key, route);
          all.push(route);
        }
      }
    }
    all.sort(compareSpecificity);
    for (const r of all) {
      const list = this.byLength.get(r.segments.length) ?? [];
      list.push(r);
      this.byLength.set(r.segments.length, list);
    }
    this.routes = all;
  }

  /**
   * Matches a request path (the raw, percent-encoded path without query). Throws URIError on
   * malformed percent-encoding.
   */
  match(verb: string, rawPath: string): RouteMatch {
    if (!rawPath.startsWith('/')) return { kind: 'not_found' };
    const parts = rawPath.slice(1).split('/').map((p) => decodeURIComponent(p));
    const candidates = this.byLength.get(parts.length) ?? [];
    const allowed = new Set<string>();
    for (const route of candidates) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.verb === verb) return { kind: 'match', route, params };
      allowed.add(route.verb);
    }
    return allowed.size > 0 ? { kind: 'method_not_allowed', allowed: [...allowed].sort() } : { kind: 'not_found' };
  }
}

function matchSegments(segments: Segment[], parts: string[]): Map<string, string> | undefined {
  const params = new Map<string, string>();
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    if (s.kind === 'literal') {
      if (s.value !== parts[i]) return undefined;
    } else {
      if (parts[i] === '') return undefined;
      params.set(s.name, parts[i]);
    }
  }
  return params;
}
