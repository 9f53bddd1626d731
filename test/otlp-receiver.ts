/**
 * A local OTLP/HTTP trace receiver for tests: a node:http server taking `POST /v1/traces` as
 * JSON (`http/json`) or protobuf (`http/protobuf`, decoded here with the wire reader of
 * @bufbuild/protobuf: no generated OTLP types needed), holding every span it got.
 */
import * as http from 'node:http';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

export interface ReceivedSpan {
  /** `service.name` of the exporting process. */
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** 2: SERVER. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** How the batch carrying it arrived. */
  encoding: 'json' | 'protobuf';
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The fields of one protobuf message: field number → raw values in order (bytes for length-delimited). */
function fields(bytes: Uint8Array): Map<number, (bigint | Uint8Array | number)[]> {
  const r = new BinaryReader(bytes);
  const out = new Map<number, (bigint | Uint8Array | number)[]>();
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    let v: bigint | Uint8Array | number;
    if (type === WireType.Varint) v = BigInt(r.uint64());
    else if (type === WireType.LengthDelimited) v = r.bytes();
    else if (type === WireType.Bit64) v = BigInt(r.fixed64());
    else if (type === WireType.Bit32) v = r.fixed32();
    else throw new Error(`unexpected wire type ${type}`);
    out.set(no, [...(out.get(no) ?? []), v]);
  }
  return out;
}
const text = (b: unknown) => Buffer.from(b as Uint8Array).toString('utf8');

/** KeyValue { 1: key, 2: AnyValue { 1: string, 2: bool, 3: int, 4: double } }. */
function keyValues(list: unknown[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list ?? []) {
    const f = fields(kv as Uint8Array);
    const v = fields((f.get(2)?.[0] as Uint8Array) ?? new Uint8Array());
    const key = text(f.get(1)?.[0]);
    if (v.has(1)) out[key] = text(v.get(1)![0]);
    else if (v.has(2)) out[key] = v.get(2)![0] === 1n;
    else if (v.has(3)) out[key] = Number(v.get(3)![0]);
    else if (v.has(4)) out[key] = Buffer.from(new BigUint64Array([v.get(4)![0] as bigint]).buffer).readDoubleLE(0);
  }
  return out;
}

/** ExportTraceServiceRequest { 1: ResourceSpans { 1: Resource { 1: attributes }, 2: ScopeSpans { 2: Span } } }. */
function fromProtobuf(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of fields(body).get(1) ?? []) {
    const r = fields(rs as Uint8Array);
    const resource = keyValues(fields((r.get(1)?.[0] as Uint8Array) ?? new Uint8Array()).get(1));
    for (const ss of r.get(2) ?? []) {
      for (const sp of fields(ss as Uint8Array).get(2) ?? []) {
        const s = fields(sp as Uint8Array);
        const status = fields((s.get(15)?.[0] as Uint8Array) ?? new Uint8Array());
        spans.push({
          service: String(resource['service.name']),
          traceId: hex(s.get(1)![0] as Uint8Array),
          spanId: hex(s.get(2)![0] as Uint8Array),
          parentSpanId: s.has(4) ? hex(s.get(4)![0] as Uint8Array) : '',
          name: text(s.get(5)?.[0]),
          kind: Number(s.get(6)?.[0] ?? 0),
          attributes: keyValues(s.get(9)),
          statusCode: Number(status.get(3)?.[0] ?? 0),
          encoding: 'protobuf',
        });
      }
    }
  }
  return spans;
}

interface JsonKeyValue { key: string; value: { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number } }

function jsonKeyValues(list: JsonKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue ?? value.doubleValue ?? '');
  return out;
}

function fromJson(body: string): ReceivedSpan[] {
  const req = JSON.parse(body) as {
    resourceSpans: { resource: { attributes: JsonKeyValue[] }; scopeSpans: { spans: {
      traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: JsonKeyValue[]; status?: { code?: number };
    }[] }[] }[];
  };
  const spans: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans) {
    const service = String(jsonKeyValues(rs.resource.attributes)['service.name']);
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        spans.push({
          service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind,
          attributes: jsonKeyValues(s.attributes), statusCode: s.status?.code ?? 0, encoding: 'json',
        });
      }
    }
  }
  return spans;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      try {
        spans.push(...(type.startsWith('application/json') ? fromJson(body.toString('utf8')) : fromProtobuf(body)));
      } catch (err) {
        res.writeHead(400).end(String(err));
        return;
      }
      const json = type.startsWith('application/json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : Buffer.alloc(0));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
