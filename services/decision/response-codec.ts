/**
 * Decisions written as EvaluateResponse / EvaluateBatchResponse bytes (proto JSON and binary)
 * without building protobuf-es messages: the lean path answers every decision this way.
 *
 * Why: protobuf-es writes a message by reflection, and an explained decision carries a
 * `google.protobuf.Struct` per trace step, which it converts value by value. A batch of 1,000
 * explained decisions took 80–110 ms as JSON and 200–240 ms as binary, one synchronous block of
 * the event loop per call (the fuzz suite's `/healthz` probe caught it). Written directly, the
 * same batch takes a few milliseconds (response-codec.test.ts compares the bytes with
 * protobuf-es's for the decision table and for generated decisions).
 *
 * The deciding policy is the one part still written by protobuf-es (its timestamps and
 * oneofs), once per policy object of the index and then reused.
 */
import { fromJson, toBinary, toJsonString, type JsonObject } from '@bufbuild/protobuf';
import { ResourcePolicySchema } from '../../gen/authz/v1/policy_pb.js';
import type { Decision, Policy, TraceStep } from '../engine/mod.js';
import { JSON_OPTIONS } from '../transport/server.js';

/** The deciding policy as its message's JSON and binary bytes, by policy object. */
interface PolicyBytes {
  json: string;
  binary: Uint8Array;
}

const POLICIES = new WeakMap<Policy, PolicyBytes>();

/** JSON-safe copy (Struct fields take only JSON values). */
export const plain = (v: unknown): JsonObject => JSON.parse(JSON.stringify(v ?? {})) as JsonObject;

function policyBytes(p: Policy): PolicyBytes {
  let bytes = POLICIES.get(p);
  if (bytes === undefined) {
    const message = fromJson(ResourcePolicySchema, plain(p), { ignoreUnknownFields: true });
    bytes = { json: toJsonString(ResourcePolicySchema, message, JSON_OPTIONS), binary: toBinary(ResourcePolicySchema, message) };
    POLICIES.set(p, bytes);
  }
  return bytes;
}

/** A decision's reason as JSON, by reason (the engine's few reasons, written once each). */
const REASON_JSON = new Map<string, string>();

/** A trace step with TraceStep's JSON names, for JSON.stringify. */
export const stepOf = (t: TraceStep) => ({ step: t.leg, result: t.outcome, message: t.message, details: t.detail ?? {} });

/**
 * A decision as EvaluateResponse's proto JSON, with every implicit field (JSON_OPTIONS) and the
 * fields in protobuf-es's order. `revisionAsNumber`: REST writes the int64 as a number, Connect
 * as a string.
 */
export function decisionJson(d: Decision, revisionAsNumber: boolean): string {
  const revision = revisionAsNumber ? String(d.revision) : `"${d.revision}"`;
  let reason = REASON_JSON.get(d.reason);
  if (reason === undefined) REASON_JSON.set(d.reason, (reason = JSON.stringify(d.reason)));
  const policy = d.evaluatedPolicy === undefined ? '' : `"evaluatedPolicy":${policyBytes(d.evaluatedPolicy).json},`;
  const trace = d.trace === undefined || d.trace.length === 0 ? '[]' : JSON.stringify(d.trace.map(stepOf));
  return `{"allowed":${d.allowed},"decidedByPolicy":${d.decidedByPolicy},${policy}"reason":${reason},"revision":${revision},"trace":${trace}}`;
}

/** Decisions as EvaluateBatchResponse's proto JSON. */
export function batchJson(ds: readonly Decision[], revisionAsNumber: boolean): string {
  const parts: string[] = new Array<string>(ds.length);
  for (let i = 0; i < ds.length; i++) parts[i] = decisionJson(ds[i], revisionAsNumber);
  return `{"results":[${parts.join(',')}]}`;
}

/** A decision as EvaluateResponse's binary message. */
export function decisionBinary(d: Decision): Uint8Array {
  const w = new Writer(128);
  writeDecision(w, d);
  return w.finish();
}

/** Decisions as EvaluateBatchResponse's binary message (`results` = 1). */
export function batchBinary(ds: readonly Decision[]): Uint8Array {
  const w = new Writer(64 * ds.length);
  for (const d of ds) {
    const at = w.open(1);
    writeDecision(w, d);
    w.close(at);
  }
  return w.finish();
}

/**
 * A protobuf writer into one growing buffer. A length-delimited field reserves one byte for its
 * length and, when the content turns out longer than 127 bytes, moves it right by the varint's
 * extra bytes (a memmove), so nothing is encoded twice and no chunk lists are joined
 * (protobuf-es's BinaryWriter spent most of its time on those, and on a TextEncoder call per
 * string).
 */
export class Writer {
  private buf: Buffer;
  private pos = 0;

  /** `size`: the first guess of the message's size (a small one comes from Node's buffer pool). */
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(size, 16));
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private varint(v: number): void {
    this.room(10);
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  /** Tag of a varint field, then the value (a non-negative safe integer). */
  uint(field: number, v: number): void {
    this.varint(field << 3);
    this.varint(v);
  }

  double(field: number, v: number): void {
    this.varint((field << 3) | 1);
    this.room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  string(field: number, s: string): void {
    const at = this.open(field);
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.close(at);
  }

  /** A string field of implicit presence: not written when empty. */
  implicitString(field: number, s: string): void {
    if (s !== '') this.string(field, s);
  }

  bytes(field: number, b: Uint8Array): void {
    this.varint((field << 3) | 2);
    this.varint(b.length);
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** Starts a length-delimited field; returns where its length goes, for close(). */
  open(field: number): number {
    this.varint((field << 3) | 2);
    this.room(1);
    return this.pos++;
  }

  close(at: number): void {
    const length = this.pos - at - 1;
    if (length < 128) {
      this.buf[at] = length;
      return;
    }
    const extra = (length < 1 << 14 ? 2 : length < 1 << 21 ? 3 : length < 1 << 28 ? 4 : 5) - 1;
    this.room(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    let i = at;
    let v = length;
    while (v > 127) {
      this.buf[i++] = (v & 127) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[i] = v;
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

// EvaluateResponse: allowed 1, decided_by_policy 2, evaluated_policy 3, reason 4, revision 5,
// trace 6. Implicit fields at their default are not written, as proto3 binary requires.
function writeDecision(w: Writer, d: Decision): void {
  if (d.allowed) w.uint(1, 1);
  if (d.decidedByPolicy) w.uint(2, 1);
  if (d.evaluatedPolicy !== undefined) w.bytes(3, policyBytes(d.evaluatedPolicy).binary);
  w.implicitString(4, d.reason);
  if (d.revision !== 0) w.uint(5, d.revision);
  if (d.trace !== undefined) writeTraceSteps(w, 6, d.trace);
}

/** Each step as a `TraceStep` in `field`: step 1, result 2, message 3, details 4 (a Struct, always present). */
export function writeTraceSteps(w: Writer, field: number, trace: NonNullable<Decision['trace']>): void {
  for (const t of trace) {
    const step = w.open(field);
    w.implicitString(1, t.leg);
    w.implicitString(2, t.outcome);
    w.implicitString(3, t.message);
    const details = w.open(4);
    writeStructFields(w, t.detail ?? {});
    w.close(details);
    w.close(step);
  }
}

/**
 * The value JSON.stringify would write, as JSON.parse would read it back: what `plain` makes of
 * a trace detail before protobuf-es turns it into a Struct. `undefined` means "left out".
 */
function jsonValueOf(v: unknown, inArray: boolean): unknown {
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON(): unknown }).toJSON();
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : null; // -0 reads back as 0
    case 'string':
    case 'boolean':
      return v;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt'); // as JSON.stringify
    case 'object':
      return v; // null, an array or an object
    default:
      return inArray ? null : undefined; // undefined, a function, a symbol
  }
}

// Struct: fields 1 (map<string, Value>: entry key 1, value 2).
export function writeStructFields(w: Writer, o: object): void {
  for (const key of Object.keys(o)) {
    const v = jsonValueOf((o as Record<string, unknown>)[key], false);
    if (v === undefined) continue;
    const entry = w.open(1);
    w.string(1, key);
    const value = w.open(2);
    writeValue(w, v);
    w.close(value);
    w.close(entry);
  }
}

// Value: null_value 1, number_value 2, string_value 3, bool_value 4, struct_value 5,
// list_value 6 (ListValue: values 1). A oneof member is written even at its default.
function writeValue(w: Writer, v: unknown): void {
  if (v === null) {
    w.uint(1, 0);
  } else if (typeof v === 'number') {
    w.double(2, v);
  } else if (typeof v === 'string') {
    w.string(3, v);
  } else if (typeof v === 'boolean') {
    w.uint(4, v ? 1 : 0);
  } else if (Array.isArray(v)) {
    const list = w.open(6);
    for (const item of v) {
      const value = w.open(1);
      writeValue(w, jsonValueOf(item, true));
      w.close(value);
    }
    w.close(list);
  } else {
    const struct = w.open(5);
    writeStructFields(w, v as object);
    w.close(struct);
  }
}
