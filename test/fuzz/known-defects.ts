/**
 * Defects the fuzz suite has found in the service and that are not fixed yet. A failure that
 * matches one is reported in the summary (`known defects: …`) and does not fail the run, so the
 * suite keeps running every case and fails on anything new; `FUZZ_KNOWN_DEFECTS=fail` makes
 * them fail again (to see whether a fix holds). Each has a test of its own in
 * known-defects.test.ts, written with `it.fails`: it starts failing when the defect is fixed,
 * and then the entry here and that `.fails` go.
 */
import type { Failure } from './types.js';

export interface KnownDefect {
  id: string;
  /** What is wrong, and where. */
  what: string;
  matches(f: Omit<Failure, 'known'>): boolean;
}

export const KNOWN_DEFECTS: KnownDefect[] = [
  {
    id: 'rest-batch-nesting-unnamed',
    what:
      'A REST batch body (the bare `items` array, `body: "items"`) nested deeper than the JSON scan allows is refused as '
      + '"the request body nests deeper than 160 levels", naming no field: services/transport/json-scan.ts names the '
      + 'nesting by rootOf(pathAt(…)), and a path that starts with an index (`[0].attributes…`) has no root field, '
      + 'where the error should name `items[0].attributes` (or `items`)',
    matches: (f) => f.invariant === 'invalid-argument-names-field' && f.surface === 'rest' && /the request body nests deeper than/.test(f.outcome),
  },
  {
    id: 'grpc-oversize-body-left-unread',
    what:
      'A unary gRPC or gRPC-Web body past the 4 MiB limit is answered resource_exhausted, but the rest of it is neither read '
      + 'and dropped nor the connection closed (services/transport/server.ts checkedEnvelopes stops reading; the other '
      + 'surfaces drain, body.ts drain()): over HTTP/1.1 (gRPC-Web) the client cannot finish sending the body, the next '
      + 'request on that kept-alive connection gets no answer, and the connection is reset when the server\'s keep-alive '
      + 'timeout (5 s) fires; over HTTP/2 the stream stays open until the client cancels it',
    matches: (f) => f.invariant === 'healthz-answers' && f.surface === 'grpc-web' && /grpc-status 8|resource_exhausted/.test(f.answer),
  },
  {
    id: 'grpc-refused-body-breaks-connection',
    what:
      'Over gRPC (HTTP/2), a call the control plane refuses from its headers (no key, a wrong key) leaves its request '
      + 'body unconsumed on the connection (services/transport/server.ts refusedRequest, body.ts drain(): the HTTP/2 '
      + 'stream is answered and its data never read nor the stream reset): after two unauthenticated calls of 4.6 MB '
      + 'with @connectrpc/connect-node\'s gRPC transport, every later call on that connection fails at the client with '
      + '`internal: Stream closed with error code NGHTTP2_ENHANCE_YOUR_CALM`, while the server still executes it (a '
      + 'create is stored although its client was told it failed)',
    matches: (f) => f.surface === 'grpc' && /RST_STREAM 11\b/.test(`${f.what} ${f.answer}`),
  },
  {
    id: 'struct-decoded-before-refusal',
    what:
      'A Struct field (an Evaluate `context`, a `metadata`, `attributes`) of up to 10,000 entries passes the wire scans '
      + '(services/transport/binary-scan.ts, json-scan.ts: MAX_JSON_ENTRIES) and is decoded whole before validation '
      + 'refuses it as "larger than 16384 bytes of JSON", which no 10,000-entry value can be below: a list of 10,000 '
      + 'small objects costs 45–220 ms of CPU to refuse over binary protobuf (median 55–70 ms on 2 shared cores) and '
      + '22–33 ms over JSON, against the 20 ms target. Bounding a Struct in the scans by what 16 KiB of JSON can hold '
      + '(entries, or encoded bytes) would refuse it before decoding',
    matches: (f) => f.invariant === 'cpu-per-refusal' && /larger than \d+ bytes of JSON/.test(f.answer),
  },
];

/** The id of the known defect a failure is, or undefined (always, with FUZZ_KNOWN_DEFECTS=fail). */
export function knownDefect(f: Omit<Failure, 'known'>): string | undefined {
  if (process.env.FUZZ_KNOWN_DEFECTS === 'fail') return undefined;
  return KNOWN_DEFECTS.find((d) => d.matches(f))?.id;
}
