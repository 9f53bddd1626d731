/**
 * Defects the fuzz suite has found in the service and that are not fixed yet. A failure that
 * matches one is reported in the summary (`known defects: …`) and does not fail the run, so the
 * suite keeps running every case and fails on anything new; `FUZZ_KNOWN_DEFECTS=fail` makes
 * them fail again (to see whether a fix holds). Each has a test of its own in
 * found-defects.test.ts, written with `it.fails`: it starts failing when the defect is fixed,
 * and then the entry here goes and the test becomes an `it`.
 */
import type { Failure } from './types.js';

export interface KnownDefect {
  id: string;
  /** What is wrong, and where. */
  what: string;
  matches(f: Omit<Failure, 'known'>): boolean;
}

export const KNOWN_DEFECTS: KnownDefect[] = [];

/** The id of the known defect a failure is, or undefined (always, with FUZZ_KNOWN_DEFECTS=fail). */
export function knownDefect(f: Omit<Failure, 'known'>): string | undefined {
  if (process.env.FUZZ_KNOWN_DEFECTS === 'fail') return undefined;
  return KNOWN_DEFECTS.find((d) => d.matches(f))?.id;
}
