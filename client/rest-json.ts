/**
 * A message in the JSON shape the REST surface answers with: proto JSON names, every
 * implicit-presence field written (`allowed: false`, `priority: 0`), and 64-bit integers as JSON
 * numbers (`revision: 12`), so a program reading the client's JSON reads what `curl` shows.
 */
import { ScalarType, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from '@bufbuild/protobuf';

const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64, ScalarType.UINT64, ScalarType.FIXED64]);
/** Well-known types whose JSON is not an object of their fields: left as proto JSON writes them. */
const OPAQUE = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue', 'google.protobuf.Timestamp', 'google.protobuf.Duration']);

/** `message` as the REST surface writes it. */
export function toRestJson<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): JsonObject {
  return numbersFor(desc, toJson(desc, message, { alwaysEmitImplicit: true })) as JsonObject;
}

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const toNumber = (v: JsonValue): JsonValue => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v);

function numbersFor(desc: DescMessage, value: JsonValue): JsonValue {
  if (!isObject(value) || OPAQUE.has(desc.typeName)) return value;
  for (const field of desc.fields) {
    const v = value[field.jsonName];
    if (v === undefined || v === null) continue;
    if (field.fieldKind === 'scalar' && INT64_TYPES.has(field.scalar)) value[field.jsonName] = toNumber(v);
    else if (field.fieldKind === 'message') value[field.jsonName] = numbersFor(field.message, v);
    else if (field.fieldKind === 'list' && Array.isArray(v)) {
      if (field.listKind === 'scalar' && INT64_TYPES.has(field.scalar)) value[field.jsonName] = v.map(toNumber);
      else if (field.listKind === 'message') value[field.jsonName] = v.map((item) => numbersFor(field.message, item));
    }
  }
  return value;
}
