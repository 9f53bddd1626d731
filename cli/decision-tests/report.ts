/**
 * What `authz test` prints: for people, each case with ✓ or ✗, and for a failure the expected
 * and actual answer and the deciding trace; for scripts the same as data; for CI systems JUnit
 * XML (one suite per file and target).
 */
import { explainDecision } from '../explain.js';
import type { Styles } from '../io.js';
import type { CaseResult, TargetRun } from './run.js';

const indent = (text: string, by: string) => text.split('\n').map((l) => (l === '' ? l : by + l)).join('\n');

/** An id in a trace, e.g. `scope_01…` or `policy_m3`: the namespaces a trace names. */
const TRACE_ID = /\b(?:scope|subject|resource|policy|collection|role)_[A-Za-z0-9_-]+/g;

/** The trace of a failed case with the model's names for the ids the target knows. */
function namedTrace(r: CaseResult, s: Styles): string {
  return explainDecision(r.decision!, s).replace(TRACE_ID, (id) => r.names?.get(id) ?? id);
}

function outcome(r: CaseResult): string {
  if (r.decision) return `${r.decision.allowed ? 'allow' : 'deny'} (${r.decision.reason}${r.policy ? `, policy ${r.policy}` : ''})`;
  if (r.permissions) return `${r.permissions.length} permission${r.permissions.length === 1 ? '' : 's'}`;
  if (r.found) return `${r.found.length} listed`;
  return '';
}

/** One target's run over one file, for people. */
export function renderRun(run: TargetRun, s: Styles): string {
  const lines = [s.bold(`${run.target.kind} · ${run.file}${run.target.kind === 'offline' ? '' : ` · ${run.target.where}`}`)];
  const width = Math.min(60, Math.max(0, ...run.results.map((r) => r.case.name.length)));
  for (const r of run.results) {
    const mark = r.passed ? s.green('✓') : s.red('✗');
    lines.push(`  ${mark} ${r.case.name.padEnd(width)}  ${s.dim(r.error !== undefined ? 'error' : outcome(r))}`);
    if (r.passed) continue;
    lines.push(s.dim(`      ${r.case.file}:${r.case.line}`));
    if (r.error !== undefined) lines.push(`      ${s.red(`error: ${r.error}`)}`);
    for (const d of r.diffs) lines.push(`      ${d}`);
    if (r.decision?.trace?.length) lines.push(indent(namedTrace(r, s), '      '));
  }
  lines.push(summaryLine([run], s));
  return lines.join('\n');
}

/** `N passed, N failed` (and errors when there are any) over runs. */
export function summaryLine(runs: readonly TargetRun[], s: Styles): string {
  const passed = runs.reduce((n, r) => n + r.passed, 0);
  const failed = runs.reduce((n, r) => n + r.failed, 0);
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  const text = `${passed} passed, ${failed} failed${errors > 0 ? `, ${errors} errors` : ''}`;
  return failed + errors > 0 ? s.red(text) : s.green(text);
}

/** The runs as data (`-o json|yaml`). */
export function runsData(runs: readonly TargetRun[]): unknown {
  return {
    passed: runs.reduce((n, r) => n + r.passed, 0),
    failed: runs.reduce((n, r) => n + r.failed, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    runs: runs.map((run) => ({
      target: run.target.kind,
      where: run.target.where,
      file: run.file,
      ms: Math.round(run.ms * 10) / 10,
      cases: run.results.map((r) => ({
        name: r.case.name, kind: r.case.kind, line: r.case.line, passed: r.passed,
        ...(r.error !== undefined ? { error: r.error } : {}),
        ...(r.diffs.length ? { diffs: r.diffs } : {}),
        ...(r.decision ? { allowed: r.decision.allowed, reason: r.decision.reason, ...(r.policy ? { policy: r.policy } : {}) } : {}),
        ...(r.permissions ? { permissions: r.permissions } : {}),
        ...(r.found ? { listed: r.found } : {}),
      })),
    })),
  };
}

const xml = (v: string) => v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!)
  // XML 1.0 cannot carry most control characters, even escaped.
  .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

/** JUnit XML of the runs: a `testsuite` per file and target, a `testcase` per case. */
export function junitXml(runs: readonly TargetRun[], plain: Styles): string {
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const total = (f: (r: TargetRun) => number) => runs.reduce((n, r) => n + f(r), 0);
  out.push(`<testsuites name="authz test" tests="${total((r) => r.results.length)}" failures="${total((r) => r.failed)}" errors="${total((r) => r.errors)}" time="${seconds(total((r) => r.ms))}">`);
  for (const run of runs) {
    const suite = `${run.target.kind}: ${run.file}`;
    out.push(`  <testsuite name="${xml(suite)}" tests="${run.results.length}" failures="${run.failed}" errors="${run.errors}" time="${seconds(run.ms)}">`);
    for (const r of run.results) {
      out.push(`    <testcase classname="${xml(suite)}" name="${xml(r.case.name)}" file="${xml(r.case.file)}" line="${r.case.line}" time="${seconds(r.ms)}">`);
      if (r.error !== undefined) out.push(`      <error message="${xml(r.error)}"/>`);
      else if (!r.passed) {
        const body = [...r.diffs, ...(r.decision?.trace?.length ? ['', namedTrace(r, plain)] : [])].join('\n');
        out.push(`      <failure message="${xml(r.diffs.join('; '))}">${xml(body)}</failure>`);
      }
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
