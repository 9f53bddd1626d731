/**
 * Proto JSON into a message's shape without protobuf-es's reflective decoder, for the plain JSON
 * that bulk requests are made of: strings, 32-bit integers, booleans, floats, nested messages,
 * lists of them, oneofs and `google.protobuf.Struct` fields. On a 5,000-entity import batch the
 * reflective decoder costs more than writing the rows. Anything else (a null, a proto field name
 * instead of a JSON name, an enum, a 64-bit integer, bytes, a map, another well-known type, an
 * integer written as a string, a key no field has) answers undefined, and the caller checks and
 * decodes the JSON the usual way (checkMessage, then fromJson), which also words the errors. For
 * the JSON it accepts, the result equals fromJson's (fast-decode.test.ts compares them).
 */
import { ScalarType, type DescField, type DescMessage, type JsonObject, type MessageShape } from '@bufbuild/protobuf';

type Value = unknown;

interface FieldPlan {
  local: string;
  /** The oneof's local name, when the field is one of its members. */
  oneof?: string;
  read: (v: Value) => Value | undefined;
}

interface MessagePlan {
  typeName: string;
  fields: Map<string, FieldPlan>;
  /** The zero message's own properties, as `create` sets them (lists, implicit scalars, oneofs). */
  zero: [string, () => Value][];
}

const plans = new WeakMap<DescMessage, MessagePlan>();
const isObject = (v: Value): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Marks a value the fast path does not take. */
const NO = undefined;

function scalarReader(type: ScalarType): ((v: Value) => Value | undefined) | undefined {
  switch (type) {
    case ScalarType.STRING:
      return (v) => (typeof v === 'string' ? v : NO);
    case ScalarType.BOOL:
      return (v) => (typeof v === 'boolean' ? v : NO);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return (v) => (typeof v === 'number' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff ? v : NO);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : NO);
    case ScalarType.DOUBLE:
      return (v) => (typeof v === 'number' && Number.isFinite(v) ? v : NO);
    default:
      return undefined; // 64-bit integers, bytes, floats: the reflective decoder
  }
}

/**
 * Whether a JSON value holds no `__proto__` key at any depth: the reflective decoder assigns
 * Struct keys one by one, so such a key becomes the object's prototype there, not a key; those
 * values take that way, and the two paths agree. Nesting past the guard's depth limit answers
 * false too (the guard then refuses it).
 */
function withoutProtoKeys(v: Value, depth: number): boolean {
  if (typeof v !== 'object' || v === null) return true;
  if (depth > 128) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!withoutProtoKeys(v[i], depth + 1)) return false;
    return true;
  }
  for (const k in v) if (k === '__proto__' || !withoutProtoKeys((v as JsonObject)[k], depth + 1)) return false;
  return true;
}

function zeroOf(type: ScalarType): Value {
  return type === ScalarType.STRING ? '' : type === ScalarType.BOOL ? false : 0;
}

/** The reader of one value of a message type: undefined when the type is outside the fast path. */
function messageReader(desc: DescMessage): ((v: Value) => Value | undefined) | undefined {
  if (desc.typeName === 'google.protobuf.Struct') return (v) => (isObject(v) && withoutProtoKeys(v, 0) ? v : NO);
  if (desc.typeName.startsWith('google.protobuf.')) return undefined;
  return (v) => (isObject(v) ? decodeWith(planOf(desc), v) : NO);
}

function planOf(desc: DescMessage): MessagePlan {
  let plan = plans.get(desc);
  if (plan) return plan;
  plan = { typeName: desc.typeName, fields: new Map(), zero: [] };
  plans.set(desc, plan); // before the fields: a message may contain itself
  const seenOneofs = new Set<string>();
  for (const f of desc.fields) {
    const read = fieldReader(f);
    if (f.oneof) {
      if (!seenOneofs.has(f.oneof.localName)) {
        seenOneofs.add(f.oneof.localName);
        plan.zero.push([f.oneof.localName, () => ({ case: undefined })]);
      }
    } else if (f.fieldKind === 'list') {
      plan.zero.push([f.localName, () => []]);
    } else if (f.fieldKind === 'map') {
      plan.zero.push([f.localName, () => ({})]);
    } else if (f.fieldKind === 'scalar' && f.presence === IMPLICIT) {
      const zero = f.scalar === ScalarType.INT64 || f.scalar === ScalarType.UINT64 || f.scalar === ScalarType.SINT64 || f.scalar === ScalarType.FIXED64 || f.scalar === ScalarType.SFIXED64
        ? 0n : f.scalar === ScalarType.BYTES ? new Uint8Array(0) : zeroOf(f.scalar);
      plan.zero.push([f.localName, () => zero]);
    } else if (f.fieldKind === 'enum' && f.presence === IMPLICIT) {
      plan.zero.push([f.localName, () => 0]);
    }
    // A field outside the fast path is left out: a key naming it answers NO.
    if (read) plan.fields.set(f.jsonName, { local: f.localName, oneof: f.oneof?.localName, read });
  }
  return plan;
}

/** FieldPresence.IMPLICIT of protobuf-es (a proto3 field without `optional`). */
const IMPLICIT = 2;

function fieldReader(f: DescField): FieldPlan['read'] | undefined {
  switch (f.fieldKind) {
    case 'scalar':
      return scalarReader(f.scalar);
    case 'message':
      return messageReader(f.message);
    case 'list': {
      const item = f.listKind === 'scalar' ? scalarReader(f.scalar) : f.listKind === 'message' ? messageReader(f.message) : undefined;
      if (!item) return undefined;
      return (v) => {
        if (!Array.isArray(v)) return NO;
        const out = new Array<Value>(v.length);
        for (let i = 0; i < v.length; i++) {
          const x = item(v[i]);
          if (x === NO) return NO;
          out[i] = x;
        }
        return out;
      };
    }
    default:
      return undefined; // enums, maps
  }
}

function decodeWith(plan: MessagePlan, json: JsonObject): Value | undefined {
  const out: Record<string, Value> = { $typeName: plan.typeName };
  for (const [name, zero] of plan.zero) out[name] = zero();
  for (const key in json) {
    const f = plan.fields.get(key);
    if (f === undefined) return NO;
    const v = f.read(json[key]);
    if (v === NO) return NO;
    if (f.oneof === undefined) out[f.local] = v;
    else {
      if ((out[f.oneof] as { case: unknown }).case !== undefined) return NO; // two members of one oneof
      out[f.oneof] = { case: f.local, value: v };
    }
  }
  return out;
}

/** The message `json` decodes to, or undefined when it is outside the fast path (see the module comment). */
export function decodeFast<D extends DescMessage>(desc: D, json: unknown): MessageShape<D> | undefined {
  if (!isObject(json)) return undefined;
  return decodeWith(planOf(desc), json) as MessageShape<D> | undefined;
}
