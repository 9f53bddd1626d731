/**
 * An upper bound of the operations a match definition may draw from a decision's budget against
 * any stored resource (match.ts's charges): the sizes of stored values are bounded (limits.md:
 * strings 256 characters, attributes 16 KiB of JSON, so a value of one is at most 16,384
 * characters or 10,000 elements).
 */
import { CONDITION_MAX_OPERATIONS } from '../budget.js';
import { isPlainObject } from '../json.js';
import { compileRegex, estimateRegexProgram, regexCompileCost, regexSearchCost } from '../match.js';

const OWN_FIELD_MAX_LENGTH = 256;
const ATTRIBUTES_MAX_LENGTH = 16 * 1024;

const maxLength = (field: unknown): number => (typeof field === 'string' && field.startsWith('attributes.') ? ATTRIBUTES_MAX_LENGTH : OWN_FIELD_MAX_LENGTH);
/** match.ts's sizeCost of the longest value a field may hold. */
const maxSizeCost = (field: unknown): number => maxLength(field) >>> 4;
const sizeCost = (v: unknown): number => (typeof v === 'string' || Array.isArray(v) ? v.length >>> 4 : 0);

function regexCost(pattern: unknown, field: unknown): number {
  if (typeof pattern !== 'string') return 0;
  const compile = regexCompileCost(estimateRegexProgram(pattern));
  const re = compileRegex(pattern);
  return compile + (re === null ? 0 : regexSearchCost(re.programSize(), maxLength(field)));
}

export function maxMatchCost(def: unknown): number {
  if (!isPlainObject(def)) return 0;
  let cost = 0;
  for (const [key, v] of Object.entries(def)) {
    switch (key) {
      case 'fields':
        if (!isPlainObject(v)) break;
        for (const [field, spec] of Object.entries(v)) {
          const ops: [string, unknown][] = isPlainObject(spec) ? Object.entries(spec) : [['eq', spec]];
          for (const [op, x] of ops) cost += op === 'regex' ? regexCost(x, field) : 1 + sizeCost(x) + maxSizeCost(field);
        }
        break;
      case 'tags':
        if (!isPlainObject(v)) break;
        for (const want of Object.values(v)) cost += 1 + (Array.isArray(want) ? want.length >>> 4 : 0);
        break;
      case 'patterns':
        if (!isPlainObject(v)) break;
        for (const [field, re] of Object.entries(v)) cost += regexCost(re, field);
        break;
      case 'time':
        cost += 1 + maxSizeCost(isPlainObject(v) ? v.field : undefined);
        break;
      case 'condition':
        cost += CONDITION_MAX_OPERATIONS;
        break;
      case 'any':
      case 'all':
      case 'none':
        if (Array.isArray(v)) for (const d of v) cost += maxMatchCost(d);
        break;
    }
  }
  return cost;
}
