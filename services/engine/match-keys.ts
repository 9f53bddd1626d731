/**
 * The keys a resource must have for a match definition to match it (or error against it), so
 * an index can file collections under them and a decision try only the collections filed under
 * the resource's own keys (tenant-index/collection-files.ts).
 *
 * A key is a field equal to a scalar (`fields.<f>` with `eq`, a bare value or `in`) or a tag
 * (`tags.<group key>` with an identifier). A definition's keys are a disjunction: if the resource
 * has none of them, the definition comes out `no_match`, never `match` and never `error`. Why
 * that holds (match.ts): a definition's parts are AND-ed in Kleene logic, where one part that
 * does not match makes the whole not match whatever the others do (a `condition` that errors
 * included); so the keys of any one part will do (the fewest are taken), those of an `all`
 * element too, and an `any` has keys only when each of its branches has some (their union;
 * `any: []` has none at all: it never matches). `ne`, `nin`, ranges, `contains`, `startsWith`,
 * `endsWith`, `regex`, `patterns`, `time`, `condition` and `none` give no key.
 *
 * Two things make a definition error against every resource, keys or not: being invalid (a
 * stored copy may predate a bound) and holding a regular expression that does not compile.
 * Such a definition has no keys: it is tried on every resource, as its deny policies must apply.
 * What a decision's budget does is left out: running out makes a part error, but a collection
 * that is not tried spends nothing, so it cannot run out.
 *
 * Equality is strict (`1` is not `"1"`, `true` is not `"true"`), and `eq: null` also holds for an
 * absent field: {@link lookupValue} gives the key a resource's value is filed under, `null` for
 * both, and none for an array or object (no scalar equals it).
 */
import { isPlainObject } from './json.js';
import { compileRegex, definitionPatterns } from './match.js';

/** A value `eq` and `in` compare with (`null` stands for null and absent). */
export type KeyValue = string | number | boolean | null;

/** A key a definition may require. */
export type MatchKey = { readonly field: string; readonly value: KeyValue } | { readonly tagGroup: string; readonly identifier: string };

/**
 * Most keys one definition is filed under: an `in` of more values (or an `any` adding up to
 * more) leaves the definition without keys, tried on every resource. Bounds what one collection
 * costs the index.
 */
export const MAX_MATCH_KEYS = 64;

/** One of which a resource must have; [] when nothing can match. */
type Keys = MatchKey[];

/**
 * The keys one of which a resource must have for `def` to match it or error against it ([]:
 * it matches no resource), or undefined when there are none to require: the definition must be
 * tried on every resource. Compiles the definition's regular expressions (cached) when it has
 * keys, to know whether it errors against every resource.
 */
export function requiredMatchKeys(def: unknown): readonly MatchKey[] | undefined {
  const patterns = definitionPatterns(def);
  if (patterns === null) return undefined;
  const keys = keysOfAll(def as Record<string, unknown>);
  if (keys === undefined) return undefined;
  for (const p of patterns) if (compileRegex(p) === null) return undefined;
  return keys;
}

/** The key a resource's field value is filed under, or undefined when no `eq`/`in` operand equals it. */
export function lookupValue(v: unknown): KeyValue | undefined {
  if (v === undefined || v === null) return null;
  const t = typeof v;
  return t === 'string' || t === 'number' || t === 'boolean' ? (v as KeyValue) : undefined;
}

/** Text naming a key, different for keys a resource's value tells apart (`1`, `"1"`, `true`). */
export function keyText(k: MatchKey): string {
  return 'field' in k ? JSON.stringify(['field', k.field, k.value]) : JSON.stringify(['tag', k.tagGroup, k.identifier]);
}

/**
 * Keys of an AND of parts (a validated definition): the fewest any one part requires. Ties go
 * to the first in the order of the keys' text, so the choice does not depend on the order of
 * the definition's object keys (a row may reach two processes with its keys in two orders, and
 * which collections a decision tries decides what it spends).
 */
function keysOfAll(def: Record<string, unknown>): Keys | undefined {
  let best: Keys | undefined;
  for (const [part, v] of Object.entries(def)) {
    switch (part) {
      case 'fields':
        for (const [field, spec] of Object.entries(v as Record<string, unknown>)) best = fewer(best, fieldKeys(field, spec));
        break;
      case 'tags':
        for (const [group, want] of Object.entries(v as Record<string, unknown>)) best = fewer(best, tagKeys(group, want as string | string[]));
        break;
      case 'all':
        for (const sub of v as unknown[]) best = fewer(best, keysOfAll(sub as Record<string, unknown>));
        break;
      case 'any':
        best = fewer(best, keysOfAny(v as unknown[]));
        break;
    }
  }
  return best;
}

/** The one of two key lists to keep: the shorter, within the bound; on a tie, the first by text. */
function fewer(best: Keys | undefined, keys: Keys | undefined): Keys | undefined {
  if (keys === undefined || keys.length > MAX_MATCH_KEYS) return best;
  if (best === undefined || keys.length < best.length) return keys;
  if (keys.length > best.length) return best;
  return listText(keys) < listText(best) ? keys : best;
}

function listText(keys: Keys): string {
  return keys.map(keyText).sort().join('\n');
}

/** Keys of an OR: every branch's, when every branch has some. */
function keysOfAny(branches: readonly unknown[]): Keys | undefined {
  const union = new Map<string, MatchKey>();
  for (const sub of branches) {
    const keys = keysOfAll(sub as Record<string, unknown>);
    if (keys === undefined) return undefined;
    for (const k of keys) union.set(keyText(k), k);
    if (union.size > MAX_MATCH_KEYS) return undefined;
  }
  return [...union.values()];
}

/** Values a field must equal under `eq` and `in` (all of them, so their intersection), or undefined when it has neither. */
function fieldKeys(field: string, spec: unknown): Keys | undefined {
  if (!isPlainObject(spec)) return [{ field, value: spec as KeyValue }];
  let values: KeyValue[] | undefined;
  for (const [op, x] of Object.entries(spec)) {
    if (op !== 'eq' && op !== 'in') continue;
    // A Set compares as strict equality does on finite scalars (0 and -0 alike).
    const allowed = new Set(op === 'eq' ? [x as KeyValue] : (x as KeyValue[]));
    values = values === undefined ? [...allowed] : values.filter((y) => allowed.has(y));
  }
  return values?.map((value) => ({ field, value }));
}

function tagKeys(group: string, want: string | string[]): Keys {
  if (typeof want === 'string') return [{ tagGroup: group, identifier: want }];
  return [...new Set(want)].map((identifier) => ({ tagGroup: group, identifier }));
}
