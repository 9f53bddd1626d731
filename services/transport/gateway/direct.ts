/**
 * Methods the REST gateway serves itself, without connect-node: bulk writes, whose requests hold
 * thousands of entities, where connect-node's reflective decoding of the request and encoding of
 * the answer cost more than the write. Everything else is as on connect-node's path: the caller
 * checked from the headers before the body is read (StartServerOptions `authenticate`), the body
 * checked against the request message and decoded to the message connect-node would decode
 * (fast-decode.ts, else fromJson), the request guard, the process's error classification and
 * logging, the RPC metrics and spans, REST's answer and error shapes.
 */
import type { DescMethod, Message } from '@bufbuild/protobuf';
import type { Span } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';

/** One call of a direct method. */
export interface DirectCall {
  /** The request, as connect-node would hand it to the method's handler. */
  message: Message;
  /** What the server's `authenticate` made of the headers (it admitted the caller). */
  caller: unknown;
  /** The request's headers. */
  headers: IncomingHttpHeaders;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** The call's span, when tracing is on. */
  span?: Span;
}

/**
 * A direct method's answer: the response message (encoded as connect-node would, then as REST
 * answers it), or the REST body itself as JSON text, the same bytes; and the tenant revision the
 * call wrote, sent as `x-revision`.
 */
export type DirectAnswer = ({ message: Message } | { restBody: string }) & { revision?: number };

export interface DirectMethod {
  method: DescMethod;
  serve(call: DirectCall): Promise<DirectAnswer>;
}
