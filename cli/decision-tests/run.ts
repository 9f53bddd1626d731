/**
 * Running a decision-test file's cases against one target (offline engine, control plane,
 * sidecar) and judging each: the decision, its reason and deciding policy when the case names
 * them, the exact set of effective permissions, or the exact set a listing gives. A case whose
 * request fails is an error, never a pass.
 */
import type { CheckCase, DecisionTests, LookupCase, PermissionsCase } from '../../services/model/mod.js';
import type { DecisionJson } from '../explain.js';

/** What answers the cases: the same questions, asked of the engine in this process or of a server. */
export interface DecisionTarget {
  /** `offline`, `control-plane` or `sidecar`. */
  readonly kind: 'offline' | 'control-plane' | 'sidecar';
  /** Where it answers (a URL; the engine for offline). */
  readonly where: string;
  /** The decision of a check case, as the REST surface writes it, with its trace. */
  decide(c: CheckCase): Promise<DecisionJson>;
  /** The deciding policy's name in the model, from its id. */
  policyName(id: string): string | undefined;
  /** The permission keys a subject holds (a pattern that is the resource's id reads `<type>/<external id>`). */
  permissions(c: PermissionsCase): Promise<string[]>;
  /**
   * Every page of a listing: the resources as `<type key>/<external id>`, or the subjects'
   * external ids.
   */
  lookup(c: LookupCase): Promise<string[]>;
  /** The model's name of an entity id the target knows (a scope's path, a policy's name), for traces. */
  nameOf(id: string): string | undefined;
}

export interface TestCase {
  kind: 'check' | 'permissions' | 'lookup';
  name: string;
  /** The case's place in its file. */
  file: string;
  line: number;
  check?: CheckCase;
  permissions?: PermissionsCase;
  lookup?: LookupCase;
}

export interface CaseResult {
  case: TestCase;
  passed: boolean;
  /** Set when the case could not be asked (the request failed): counted as an error. */
  error?: string;
  /** Expected against actual, one line each, for a failed case. */
  diffs: string[];
  /** The decision of a check case. */
  decision?: DecisionJson;
  /** The deciding policy's name. */
  policy?: string;
  /** The permissions found, for a permissions case. */
  permissions?: string[];
  /** What the listing gave, for a lookup case. */
  found?: string[];
  /** Names of the ids the target knows, for the trace. */
  names?: { get(id: string): string | undefined };
  ms: number;
}

export interface TargetRun {
  target: { kind: DecisionTarget['kind']; where: string };
  file: string;
  results: CaseResult[];
  passed: number;
  failed: number;
  errors: number;
  ms: number;
}

/** The cases of a file in file order, each named (its `name`, else a sentence made of the request). */
export function casesOf(tests: DecisionTests, file: string, locate: (path: (string | number)[]) => { line: number }): TestCase[] {
  const checks = (tests.checks ?? []).map((c, i): TestCase => ({
    kind: 'check', check: c, file, line: locate(['checks', i]).line,
    name: c.name ?? `${c.subject} ${c.action} ${c.resource ?? 'in'} ${c.scope}: ${c.expect}`,
  }));
  const permissions = (tests.effectivePermissions ?? []).map((c, i): TestCase => ({
    kind: 'permissions', permissions: c, file, line: locate(['effectivePermissions', i]).line,
    name: c.name ?? `permissions of ${c.subject} in ${c.scope}${c.resource ? ` on ${c.resource}` : ''}`,
  }));
  const lookups = (tests.lookups ?? []).map((c, i): TestCase => ({
    kind: 'lookup', lookup: c, file, line: locate(['lookups', i]).line,
    name: c.name ?? ('resources' in c
      ? `resources ${c.resources.subject} may ${c.resources.action}${c.resources.resourceType ? ` (${c.resources.resourceType})` : ''} in ${c.resources.scope}`
      : `subjects that may ${c.subjects.action} ${c.subjects.resource ?? 'in'} ${c.subjects.scope}`),
  }));
  return [...checks, ...permissions, ...lookups];
}

/** The lines of a set's difference: each expected one missing, each found one not expected. */
function setDiff(expected: readonly string[], got: readonly string[], missingNote: string, extraNote: string): string[] {
  const want = new Set(expected);
  const have = new Set(got);
  return [
    ...[...want].filter((k) => !have.has(k)).sort().map((k) => `- ${k}  (${missingNote})`),
    ...[...have].filter((k) => !want.has(k)).sort().map((k) => `+ ${k}  (${extraNote})`),
  ];
}

const describe = (allowed: boolean | undefined, reason?: string, policy?: string) =>
  `${allowed === undefined ? '?' : allowed ? 'allow' : 'deny'}${reason ? ` (reason ${reason}${policy ? `, policy ${policy}` : ''})` : ''}`;

async function runOne(target: DecisionTarget, c: TestCase): Promise<CaseResult> {
  const start = performance.now();
  const result: CaseResult = { case: c, passed: false, diffs: [], ms: 0, names: { get: (id) => target.nameOf(id) } };
  try {
    if (c.check) {
      const d = await target.decide(c.check);
      const policy = d.evaluatedPolicy?.id ? (target.policyName(d.evaluatedPolicy.id) ?? d.evaluatedPolicy.id) : undefined;
      Object.assign(result, { decision: d, policy });
      const want = c.check;
      const allowedOk = d.allowed === (want.expect === 'allow');
      const reasonOk = want.reason === undefined || want.reason === d.reason;
      const policyOk = want.policy === undefined || want.policy === policy;
      if (!(allowedOk && reasonOk && policyOk)) {
        result.diffs.push(`expected ${describe(want.expect === 'allow', want.reason, want.policy)}`, `actual   ${describe(d.allowed, d.reason, policy)}`);
      }
    } else if (c.permissions) {
      const want = c.permissions;
      const got = [...new Set(await target.permissions(want))].sort();
      result.permissions = got;
      result.diffs.push(...setDiff(want.expect, got, 'expected, not held', 'held, not expected'));
    } else {
      const want = c.lookup!;
      const listed = await target.lookup(want);
      const got = [...new Set(listed)].sort();
      result.found = got;
      result.diffs.push(...setDiff(want.expect, got, 'expected, not listed', 'listed, not expected'));
      // A listing names each once: a repeat is a defect of the listing, not of the model.
      if (got.length !== listed.length) result.diffs.push(`listed ${listed.length - got.length} more than once`);
    }
    result.passed = result.diffs.length === 0;
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
  }
  result.ms = performance.now() - start;
  return result;
}

/** Runs every case against `target`, one after another (the order of the file). */
export async function runCases(target: DecisionTarget, file: string, cases: readonly TestCase[]): Promise<TargetRun> {
  const start = performance.now();
  const results: CaseResult[] = [];
  for (const c of cases) results.push(await runOne(target, c));
  return {
    target: { kind: target.kind, where: target.where },
    file,
    results,
    passed: results.filter((r) => r.passed).length,
    failed: results.filter((r) => !r.passed && r.error === undefined).length,
    errors: results.filter((r) => r.error !== undefined).length,
    ms: performance.now() - start,
  };
}
