/**
 * Who writes: the caller's API key and subject, and the reason it gives for the change in the
 * `x-change-reason` request header (gRPC metadata of the same name), recorded with every
 * revision the request makes.
 */
import type { HandlerContext } from '@connectrpc/connect';
import type { IncomingHttpHeaders } from 'node:http';
import { invalid } from '../../common/errors.js';
import type { Writer } from '../../store/write.js';
import { principalOf, type Principal } from './principal.js';

export const CHANGE_REASON_HEADER = 'x-change-reason';

/** The most characters a reason may hold. */
export const MAX_REASON = 256;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The reason a header value states: null when absent or empty; `invalid_argument` naming the
 * header for more than MAX_REASON characters, bytes that are not UTF-8, or a NUL. Node hands
 * header bytes over one character per byte (latin1), so the value is read back as UTF-8 here.
 */
export function changeReason(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  let text = value;
  // eslint-disable-next-line no-control-regex
  if (/^[\u0000-\u00ff]*$/.test(value)) {
    try {
      text = utf8.decode(Buffer.from(value, 'latin1'));
    } catch {
      throw invalid(CHANGE_REASON_HEADER, 'must be UTF-8 text');
    }
  }
  if (text.includes('\u0000')) throw invalid(CHANGE_REASON_HEADER, 'must not contain NUL characters');
  if ([...text].length > MAX_REASON) throw invalid(CHANGE_REASON_HEADER, `must be at most ${MAX_REASON} characters`);
  return text;
}

/** The writer of a request: its principal, and the reason from its header (checked). */
export function writerOf(principal: Principal, reasonHeader: string | null | undefined): Writer {
  return { keyId: principal.keyId, subjectId: principal.subjectId, reason: changeReason(reasonHeader) };
}

/** The writer of a connect-node call. */
export function writerOfCall(ctx: Pick<HandlerContext, 'values' | 'requestHeader'>): Writer {
  return writerOf(principalOf(ctx), ctx.requestHeader.get(CHANGE_REASON_HEADER));
}

/** The reason header of a Node request (a repeated header joined by `, `, as `Headers.get` does). */
export function reasonOfNodeHeaders(headers: IncomingHttpHeaders): string | undefined {
  const v = headers[CHANGE_REASON_HEADER];
  return Array.isArray(v) ? v.join(', ') : v;
}
