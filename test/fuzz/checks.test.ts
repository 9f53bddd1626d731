/**
 * The suite's own measurements and checks: the loop monitor tells the process's own stalls
 * (work on the CPU, a blocking call) from an idle loop, the CPU reading sees a request's work,
 * an error-level log line fails the case that caused it, and the coverage floor catches valid
 * requests that do not succeed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkChild, type FuzzChild } from './child.js';
import { cpuMsBetween, settledCpu } from './cpu.js';
import { METHODS } from './generator.js';
import { checkErrorLogs } from './judge.js';
import { CANNOT_SUCCEED, COVERAGE_FLOOR, coverageShortfalls } from './report.js';
import type { CaseRecord, RunResult, State } from './types.js';

describe('measuring a process', () => {
  let child: FuzzChild;
  beforeAll(async () => {
    child = await forkChild('stall test', './stall-process.ts', {});
  });
  afterAll(() => child?.close());

  it('counts 150 ms of its own CPU work as a stall of about that, and the CPU reading sees the work', async () => {
    await child.loopDelay();
    const before = await settledCpu(child.pid);
    await child.ask('work', { ms: 150 });
    const after = await settledCpu(child.pid);
    const { ownMs } = await child.loopDelay();
    expect(ownMs).toBeGreaterThanOrEqual(140);
    // The work loop counts the main thread's own CPU (from /proc), so the whole-process reading
    // is at least the 150 ms, and the main thread's share, read in clock ticks, most of it.
    const spent = cpuMsBetween(before, after)!;
    expect(spent.totalMs).toBeGreaterThanOrEqual(145);
    expect(spent.mainMs).toBeGreaterThanOrEqual(100);
  });

  it('counts a blocking call of 150 ms as a stall, though the process is off the CPU', async () => {
    await child.loopDelay();
    await child.ask('block', { ms: 150 });
    expect((await child.loopDelay()).ownMs).toBeGreaterThanOrEqual(140);
  });

  it('counts no stall while the loop waits for events', async () => {
    await child.loopDelay();
    await new Promise((r) => setTimeout(r, 200));
    expect((await child.loopDelay()).ownMs).toBeLessThan(20);
  });

  it('fails the case whose process wrote an error-level line, not for a warning', async () => {
    const method = METHODS[0];
    const c = { index: 7, target: 'control-plane', m: method, surface: 'grpc', key: 'none', req: { method: 'POST', path: '/x' }, answer: { status: 400, httpStatus: 200, text: '', fields: [], start: Date.now(), end: Date.now() }, loopMs: 0 } as CaseRecord;
    const s = { server: child, failures: [], recent: [c], logCursor: { 'control-plane': 0, sidecar: 0 }, opts: { seed: 1, backend: 'embedded' } } as unknown as State;
    const lines = async (n: number) => {
      for (let i = 0; i < 100 && child.logsAfter(0).length < n; i++) await new Promise((r) => setTimeout(r, 20));
    };
    await child.ask('log', { level: 40 });
    await lines(1);
    checkErrorLogs(s, c);
    expect(s.failures).toEqual([]);
    await child.ask('log', { level: 50 });
    await lines(2);
    checkErrorLogs(s, c);
    expect(s.failures.map((f) => [f.invariant, f.caseIndex, f.what])).toEqual([['no-error-log', 7, 'stall test logged 1 error-level line: a line at level 50']]);
  });
});

describe('the coverage floor', () => {
  const [a, b] = METHODS.map((m) => m.name);
  const run = (stats: Record<string, Record<string, { sent: number; ok: number }>>): RunResult['byMethod'] => ({
    'control-plane': Object.fromEntries(Object.entries(stats).map(([name, valid]) => [name, { cases: 0, statuses: {}, valid }])),
    sidecar: {},
  });

  it('passes when valid requests succeed, and judges nothing on too few of them', () => {
    expect(coverageShortfalls(run({ [a]: { rest: { sent: 9, ok: 9 }, grpc: { sent: 6, ok: 6 } }, [b]: { connect: { sent: 2, ok: 0 } } }))).toEqual([]);
  });

  it(`fails an RPC on a surface, an RPC, or a surface under ${COVERAGE_FLOOR * 100} %, so a generator of invalid requests fails`, () => {
    expect(coverageShortfalls(run({ [a]: { rest: { sent: 6, ok: 1 } } }))).toEqual([
      expect.stringContaining(`over rest: 1/6 valid requests succeeded`),
      expect.stringContaining(`1/6 valid requests succeeded (16.7%) over all surfaces`),
    ]);
    expect(coverageShortfalls(run({ [a]: { rest: { sent: 2, ok: 1 }, grpc: { sent: 1, ok: 1 } } }))).toEqual([expect.stringContaining('2/3 valid requests succeeded (66.7%) over all surfaces')]);
    const spread = Object.fromEntries(METHODS.slice(0, 12).map((m) => [m.name, { 'grpc-web': { sent: 1, ok: 0 } }]));
    expect(coverageShortfalls(run(spread))).toEqual([expect.stringContaining('over grpc-web: 0/12 valid requests succeeded (0.0%) over all RPCs')]);
  });

  it('judges the model RPCs (a known defect refuses some of their valid requests) per RPC, not in a surface\'s total', () => {
    const model = METHODS.filter((m) => /TenantModelService\.(Plan|Apply|Export)TenantModel$/.test(m.name)).map((m) => m.name);
    expect(model).toHaveLength(3);
    const others = Object.fromEntries(METHODS.filter((m) => !model.includes(m.name)).slice(0, 11).map((m) => [m.name, { 'connect-proto': { sent: 1, ok: 1 } }]));
    const refused = Object.fromEntries(model.map((name) => [name, { 'connect-proto': { sent: 1, ok: 0 } }]));
    expect(coverageShortfalls(run({ ...others, ...refused }))).toEqual([]);
    const before = process.env.FUZZ_KNOWN_DEFECTS;
    process.env.FUZZ_KNOWN_DEFECTS = 'fail';
    try {
      expect(coverageShortfalls(run({ ...others, ...refused }))).toEqual([expect.stringContaining('over connect-proto: 11/14 valid requests succeeded (78.6%) over all RPCs')]);
    } finally {
      if (before === undefined) delete process.env.FUZZ_KNOWN_DEFECTS;
      else process.env.FUZZ_KNOWN_DEFECTS = before;
    }
  });

  it('leaves out the RPCs that cannot succeed, each with its reason', () => {
    for (const [name, why] of Object.entries(CANNOT_SUCCEED)) {
      expect(METHODS.some((m) => m.name === name), name).toBe(true);
      expect(why.length).toBeGreaterThan(20);
    }
  });
});
