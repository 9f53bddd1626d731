/**
 * Mutations of a valid request in its JSON form (REST and Connect JSON): `mutate` picks one slot
 * of the request (a field, a list element, a key inside a Struct, or the whole body) and one
 * mutation that applies to it: wrong JSON types, extreme numbers, NUL, lone surrogates, long
 * strings, deep nesting, huge arrays, ids of the other tenant, unknown fields, empty and
 * malformed bodies.
 */
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import type { KindName } from '../../services/store/kinds.js';
import type { Rng } from '../../services/engine/testdata/generate.js';
import {
  Raw, SPELLINGS, chance, getAt, isObj, namespaceOf, pick, refKindOf, restBodyOf, serialize, setAt, token,
  type Json, type JsonObj, type MethodInfo, type Mutation, type Path, type Payload, type TenantWorld, type World,
} from './generator.js';

export type { Mutation, Payload };

export type MutationKind =
  | 'wrongType' | 'extremeNumber' | 'nul' | 'surrogate' | 'longString' | 'emptyValue' | 'deepNesting'
  | 'hugeArray' | 'otherTenantId' | 'unknownId' | 'takenId' | 'spelling' | 'pathChars' | 'badTimestamp'
  | 'unknownField' | 'emptyBody' | 'malformedBody';

type SlotType = 'string' | 'int' | 'bool' | 'enum' | 'message' | 'struct' | 'structValue' | 'timestamp' | 'list';

interface Slot {
  path: Path;
  type: SlotType;
  field?: DescField;
  ref?: KindName | 'target';
  createId?: boolean;
  spelled?: boolean;
  /** The list holds the request's items (batch `items`, evaluate `requests`). */
  items?: boolean;
}

const INT_TYPES = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64, ScalarType.SINT32, ScalarType.SINT64, ScalarType.FIXED32, ScalarType.FIXED64, ScalarType.SFIXED32, ScalarType.SFIXED64, ScalarType.DOUBLE, ScalarType.FLOAT]);

function slotsOf(m: MethodInfo, msg: DescMessage, value: Json | undefined, path: Path, out: Slot[], creates: boolean) {
  for (const f of msg.fields) {
    const p = [...path, f.jsonName];
    const v = isObj(value) ? value[f.jsonName] : undefined;
    if (f.fieldKind === 'list') {
      out.push({ path: p, type: 'list', field: f, items: f.listKind === 'message' });
      if (Array.isArray(v) && v.length > 0) {
        const i = v.length - 1;
        if (f.listKind === 'message') slotsOf(m, f.message, v[i], [...p, i], out, creates);
        else out.push({ path: [...p, i], type: 'string', field: f, ref: refKindOf(msg, f, m.kind) });
      }
    } else if (f.fieldKind === 'message') {
      const tn = f.message.typeName;
      if (tn === 'google.protobuf.Struct') {
        out.push({ path: p, type: 'struct', field: f });
        if (isObj(v)) for (const k of Object.keys(v)) out.push({ path: [...p, k], type: 'structValue', field: f });
      } else if (tn === 'google.protobuf.Timestamp') out.push({ path: p, type: 'timestamp', field: f });
      else {
        out.push({ path: p, type: 'message', field: f });
        slotsOf(m, f.message, v, p, out, creates);
      }
    } else if (f.fieldKind === 'enum') out.push({ path: p, type: 'enum', field: f });
    else if (f.fieldKind === 'scalar') {
      const type: SlotType = f.scalar === ScalarType.BOOL ? 'bool' : INT_TYPES.has(f.scalar) ? 'int' : 'string';
      out.push({
        path: p, type, field: f,
        ref: f.jsonName === 'id' ? (creates ? undefined : m.kind) : refKindOf(msg, f, m.kind),
        createId: f.jsonName === 'id' && creates,
        spelled: f.jsonName in SPELLINGS,
      });
    }
  }
}

/** The extreme numbers that once broke requests (1e309, -0, 2^53 + 1, …), drawn more often than the rest. */
const CORE_NUMBERS = ['1e309', '-1e309', '-0', '9007199254740993', '-2147483649', '"NaN"'];
const EXTREME_NUMBERS = ['1e309', '-1e309', '-0', '9007199254740993', '-2147483649', '2147483648', '4294967296', '18446744073709551616', '-9223372036854775809', '1e-400', '0.5', '-1', '"NaN"', '"Infinity"', '"-Infinity"', '"1e309"', '"0x10"', '" 12"'];
const BAD_TIMESTAMPS = ['2024-13-45T00:00:00Z', '2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z', '10000-01-01T00:00:00Z', '2024-01-01', 'now', '', '1e309', '2024-01-01T00:00:00+99:00', '1970-01-01T00:00:00Z', '2024-01-01T00:00:00.0000000000000Z'];
const DEPTHS = [10_000, 10_000, 10_000, 33, 65, 1_000];

function deep(r: Rng): [Raw, string] {
  const d = pick(r, DEPTHS);
  return chance(r, 0.5)
    ? [new Raw('{"a":'.repeat(d) + '1' + '}'.repeat(d)), `${d}-deep object`]
    : [new Raw('['.repeat(d) + ']'.repeat(d)), `${d}-deep array`];
}

/** The JSON type a slot takes (what a wrong type must differ from, also when the field is absent). */
const JSON_TYPE_OF: Record<SlotType, string> = {
  string: 'string', int: 'number', bool: 'boolean', enum: 'string', message: 'object', struct: 'object', structValue: 'any', timestamp: 'string', list: 'array',
};

function wrongTypeFor(r: Rng, current: Json | undefined, slotType: SlotType): [Json, string] {
  const cur = current === undefined ? JSON_TYPE_OF[slotType] : current === null ? 'null' : Array.isArray(current) ? 'array' : current instanceof Raw ? 'raw' : typeof current;
  const options: [Json, string][] = [
    ['x', 'string'], ['123', 'numeric string'], [123, 'number'], [1.5, 'fraction'], [true, 'true'], [false, 'false'],
    [null, 'null'], [{}, 'empty object'], [{ a: 1 }, 'object'], [[], 'empty array'], [['x'], 'array of strings'], [[1, 2], 'array of numbers'],
  ];
  const typeOf = (v: Json) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  const ok = options.filter(([v]) => typeOf(v) !== cur);
  const [v, label] = pick(r, ok);
  return [v, `${label} (${JSON.stringify(v)})`];
}

function withNul(r: Rng, s: string): [string, string] {
  return pick(r, [
    [`${s}\u0000`, 'value + \\u0000'],
    [`\u0000${s}`, '\\u0000 + value'],
    [`${s.slice(0, 1)}\u0000${s.slice(1)}`, '\\u0000 inside the value'],
    ['\u0000', 'just \\u0000'],
  ] as [string, string][]);
}

function withSurrogate(r: Rng, s: string): [string, string] {
  return pick(r, [
    ['\ud800', 'lone high surrogate \\ud800'],
    [`${s}\ud800`, 'value + \\ud800'],
    [`a\udc00b`, 'lone low surrogate \\udc00'],
    ['\udfff\ud800', 'reversed pair \\udfff\\ud800'],
  ] as [string, string][]);
}

function longString(r: Rng): [string, string] {
  return pick(r, [
    ['x'.repeat(257), '257 characters'],
    ['x'.repeat(102_400), '100 KiB string'],
    ['x'.repeat(256), '256 characters (the limit)'],
    ['é'.repeat(257), '257 two-byte characters'],
    ['😀'.repeat(129), '129 emoji (258 UTF-16 units)'],
  ] as [string, string][]);
}

function otherId(r: Rng, world: World, kind: KindName, from: TenantWorld): string | undefined {
  if (kind === 'tenant') return from.tenantId;
  const pools = kind === 'scopeType' ? world.global : from;
  const all = [...(pools.core[kind] ?? []), ...(pools.spare[kind] ?? [])];
  return all.length ? pick(r, all).id : undefined;
}

/** Relative frequency of each mutation kind (among those that fit the method). */
const WEIGHTS: Record<MutationKind, number> = {
  wrongType: 1, extremeNumber: 1, nul: 1, surrogate: 1, longString: 1, deepNesting: 1, hugeArray: 1, otherTenantId: 1,
  unknownField: 0.6, emptyValue: 0.6, badTimestamp: 0.6, spelling: 0.5, unknownId: 0.4, takenId: 0.4, pathChars: 0.4,
  emptyBody: 0, malformedBody: 0,
};

/** The mutations that fit a slot. */
function kindsFor(slot: Slot): MutationKind[] {
  switch (slot.type) {
    case 'string': {
      const kinds: MutationKind[] = ['wrongType', 'nul', 'surrogate', 'longString', 'emptyValue', 'pathChars'];
      // Scope types are global: there is no other tenant's scope type to send.
      if (slot.ref && slot.ref !== 'scopeType') kinds.push('otherTenantId');
      if (slot.ref && slot.ref !== 'target') kinds.push('unknownId');
      if (slot.createId) kinds.push('takenId');
      if (slot.spelled) kinds.push('spelling');
      return kinds;
    }
    case 'int':
      return ['wrongType', 'extremeNumber'];
    case 'bool':
    case 'enum':
      return ['wrongType'];
    case 'message':
      return ['wrongType', 'unknownField', 'deepNesting', 'emptyValue'];
    case 'struct':
    case 'structValue':
      return ['wrongType', 'deepNesting', 'extremeNumber', 'nul', 'surrogate', 'hugeArray', 'longString'];
    case 'timestamp':
      return ['wrongType', 'badTimestamp', 'nul', 'surrogate', 'longString'];
    case 'list':
      return ['wrongType', 'hugeArray', 'deepNesting', 'emptyValue'];
  }
}

/**
 * Picks one slot of the valid request and one mutation for it. `bodyless` routes (GET,
 * DELETE on REST) cannot take body-level mutations on that surface.
 */
export function mutate(r: Rng, world: World, m: MethodInfo, valid: JsonObj, surface: 'rest' | 'connect'): { mutation: Mutation; payload: Payload } {
  const creates = m.op === 'create' || m.op === 'batch';
  const slots: Slot[] = [];
  slotsOf(m, m.method.input, valid, [], slots, creates);
  const hasBody = surface === 'connect' || m.route.body.kind !== 'none';
  if (chance(r, hasBody ? 0.12 : 0.04) || slots.length === 0) return bodyMutation(r, m, valid, surface);
  // The mutation kind first (every kind that fits some slot, weighted), then a slot it fits:
  // each kind gets its share whatever the shape of the message.
  const byKind = new Map<MutationKind, Slot[]>();
  for (const slot of slots) for (const k of kindsFor(slot)) byKind.set(k, [...(byKind.get(k) ?? []), slot]);
  const kinds = [...byKind.keys()];
  let roll = r() * kinds.reduce((n, k) => n + WEIGHTS[k], 0);
  const kind = kinds.find((k) => (roll -= WEIGHTS[k]) < 0) ?? kinds[kinds.length - 1];
  const slot = pick(r, byKind.get(kind)!);
  const cur = getAt(valid, slot.path);
  const curStr = typeof cur === 'string' ? cur : 'x';
  let unknownKey: string | undefined;
  let value: Json | undefined;
  let label: string;
  const inStruct = slot.type === 'struct';
  switch (kind) {
    case 'wrongType':
      [value, label] = wrongTypeFor(r, cur, slot.type);
      break;
    case 'extremeNumber': {
      const n = chance(r, 0.6) ? pick(r, CORE_NUMBERS) : pick(r, EXTREME_NUMBERS);
      value = inStruct ? { n: new Raw(n), ok: 1 } : new Raw(n);
      label = inStruct ? `{"n": ${n}}` : n;
      break;
    }
    case 'nul': {
      if (inStruct) {
        const inKey = chance(r, 0.5);
        value = inKey ? { 'k\u0000ey': 'v' } : { k: 'a\u0000b' };
        label = inKey ? '\\u0000 in a key' : '\\u0000 in a value';
      } else [value, label] = withNul(r, curStr);
      break;
    }
    case 'surrogate': {
      if (inStruct) {
        const inKey = chance(r, 0.5);
        value = inKey ? { 'k\ud800': 'v' } : { k: 'a\ud800' };
        label = inKey ? 'lone surrogate in a key' : 'lone surrogate in a value';
      } else [value, label] = withSurrogate(r, curStr);
      break;
    }
    case 'longString': {
      const [s, l] = longString(r);
      value = inStruct ? { s } : s;
      label = inStruct ? `{"s": ${l}}` : l;
      break;
    }
    case 'emptyValue':
      value = slot.type === 'list' ? [] : slot.type === 'message' ? {} : '';
      label = JSON.stringify(value);
      break;
    case 'pathChars':
      [value, label] = pick(r, [['../x', '../x'], ['a/b', 'a/b'], ['%2F', '%2F'], ['x?limit=1', 'x?limit=1'], ['#x', '#x'], [' ', 'space'], ['*', '*']] as [string, string][]);
      break;
    case 'spelling':
      [value, label] = pick(r, [[curStr.toUpperCase(), 'upper case'], [` ${curStr}`, 'leading space'], [`${slot.field!.name.toUpperCase()}_${curStr.toUpperCase()}`, 'proto enum style'], ['unknown', '"unknown"']] as [string, string][]);
      break;
    case 'otherTenantId': {
      const refKind = slot.ref === 'target' ? pick(r, ['resource', 'subject', 'scope'] as const) : (slot.ref as KindName);
      value = otherId(r, world, refKind, world.B) ?? `${namespaceOf(refKind)}_nosuch`;
      label = `a ${refKind} of the other tenant`;
      break;
    }
    case 'unknownId': {
      const ns = namespaceOf(slot.ref as KindName);
      value = `${ns}_${token(r, 12)}`;
      label = 'a well-formed id that does not exist';
      break;
    }
    case 'takenId': {
      const own = m.kind ? otherId(r, world, m.kind, chance(r, 0.5) ? world.A : world.B) : undefined;
      value = own ?? `${m.kind ? namespaceOf(m.kind) : 'x'}_taken`;
      label = 'the id of an existing entity';
      break;
    }
    case 'badTimestamp':
      value = pick(r, BAD_TIMESTAMPS);
      label = JSON.stringify(value);
      break;
    case 'unknownField': {
      const [key, v, l] = pick(r, [['bogusField', 1, '"bogusField": 1'], ['__proto__', { polluted: true }, '"__proto__": {…}'], ['constructor', { prototype: 1 }, '"constructor": {…}']] as [string, Json, string][]);
      const base = isObj(cur) ? cur : {};
      // Raw keeps a literal "__proto__" key (an object literal would set the prototype instead).
      value = new Raw(`{${[...Object.keys(base).map((k) => `${JSON.stringify(k)}:${serialize(base[k])}`), `${JSON.stringify(key)}:${serialize(v)}`].join(',')}}`);
      label = l;
      unknownKey = key;
      break;
    }
    case 'deepNesting': {
      const [v, l] = deep(r);
      value = slot.type === 'list' && chance(r, 0.5) ? [v] : v;
      label = Array.isArray(value) ? `[${l}]` : l;
      // Where a message is expected, a nested object is first of all an unknown field "a".
      if (v.text.startsWith('{') && (slot.type === 'message' || (slot.type === 'list' && slot.items))) unknownKey = 'a';
      break;
    }
    case 'hugeArray': {
      if (slot.items) {
        const n = chance(r, 0.7) ? 1_001 : 1_000;
        const el = Array.isArray(cur) && cur.length ? cur[0] : {};
        const one = isObj(el) ? Object.fromEntries(Object.entries(el).filter(([k]) => k !== 'id')) : el;
        value = new Array(n).fill(one);
        label = `${n} items`;
      } else if (slot.type === 'list') {
        const el = Array.isArray(cur) && cur.length ? cur[0] : 'x';
        const distinct = chance(r, 0.5);
        value = distinct ? Array.from({ length: 10_000 }, (_, i) => `${String(el)}-${i}`) : new Array(10_000).fill(el);
        label = distinct ? '10,000 distinct elements' : '10,000 copies of an element';
      } else {
        const inner = chance(r, 0.5) ? new Array(10_000).fill(0) : new Array(10_000).fill({ a: 'b' });
        value = inStruct ? { xs: inner } : inner;
        label = inStruct ? '{"xs": [10,000 elements]}' : '[10,000 elements]';
      }
      break;
    }
    default:
      throw new Error(`unhandled mutation ${kind}`);
  }
    // An unknown field is named by its own key; any other slot by its field.
  const field = unknownKey ? { jsonName: unknownKey, protoName: unknownKey } : slot.field ? { jsonName: slot.field.jsonName, protoName: slot.field.name } : undefined;
  return { mutation: { kind, path: slot.path, label, field }, payload: { tree: setAt(valid, slot.path, value) } };
}

/** Mutations of the body as a whole. */
function bodyMutation(r: Rng, m: MethodInfo, valid: JsonObj, surface: 'rest' | 'connect'): { mutation: Mutation; payload: Payload } {
  const hasBody = surface === 'connect' || m.route.body.kind !== 'none';
  const choices: MutationKind[] = hasBody ? ['emptyBody', 'emptyBody', 'malformedBody', 'wrongType', 'deepNesting', 'unknownField'] : ['unknownField'];
  const kind = pick(r, choices);
  const mk = (label: string, payload: Payload) => ({ mutation: { kind, path: [] as Path, label }, payload });
  switch (kind) {
    case 'emptyBody': {
      const [text, label] = pick(r, [['', 'no body'], [' \n', 'whitespace'], ['{}', '{}'], ['[]', '[]'], ['null', 'null'], ['""', '""'], ['0', '0']] as [string, string][]);
      return mk(label, { tree: valid, rawBody: text });
    }
    case 'malformedBody': {
      const text = serialize(restBodyOf(m, valid, surface));
      const [body, label] = pick(r, [
        [text.slice(0, Math.max(1, text.length >> 1)), 'truncated JSON'],
        [`${text}}`, 'trailing }'],
        [Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]), 'invalid UTF-8'],
        [dupKeys(text), 'a key twice, second value a number'],
        [`\ufeff${text}`, 'byte order mark'],
      ] as [string | Uint8Array, string][]);
      return mk(label, { tree: valid, rawBody: body });
    }
    case 'wrongType': {
      const [v, label] = pick(r, [[[], '[]'], ['x', '"x"'], [1, '1'], [true, 'true'], [[valid], '[valid request]']] as [Json, string][]);
      return mk(`whole body ${label}`, { tree: valid, rawBody: serialize(v) });
    }
    case 'deepNesting': {
      const [v, label] = deep(r);
      return mk(`whole body ${label}`, { tree: valid, rawBody: v.text });
    }
    case 'unknownField':
    default: {
      const tree = { ...valid, bogusField: 'x' };
      return { mutation: { kind: 'unknownField', path: ['bogusField'], label: '"bogusField": "x" at the top', field: { jsonName: 'bogusField', protoName: 'bogusField' } }, payload: { tree } };
    }
  }
}

function dupKeys(text: string): string {
  const m = /^\{"([^"]+)":/.exec(text);
  return m ? `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"${m[1]}":12345}` : `{"a":1,"a":2}`;
}
