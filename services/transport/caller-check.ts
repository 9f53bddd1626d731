/**
 * The caller of an RPC, checked from its headers before its body is read (StartServerOptions
 * `authenticate`), and how that result reaches the interceptors.
 */
import type { DescMethod } from '@bufbuild/protobuf';
import { createContextKey } from '@connectrpc/connect';
import type { NodeServerRequest } from './node-types.js';

/**
 * What the process's `authenticate` made of a call's headers, before its body was read: the
 * caller, or the error to answer. The process's interceptor reads it from the handler context
 * (`callerCheckKey`) and answers the error there, so a refused call is counted, traced and
 * answered in its protocol like any other.
 */
export type CallerCheck = { ok: true; caller: unknown } | { ok: false; error: unknown };

/** Where the server puts a call's CallerCheck in the handler context (absent without `authenticate`). */
export const callerCheckKey = createContextKey<CallerCheck | undefined>(undefined, { description: 'authz.caller-check' });

/** Runs `authenticate` and settles it as a CallerCheck (synchronously when it answers synchronously). */
export function checkCaller(
  authenticate: (req: NodeServerRequest, method: DescMethod) => unknown,
  req: NodeServerRequest,
  method: DescMethod,
): CallerCheck | Promise<CallerCheck> {
  let caller: unknown;
  try {
    caller = authenticate(req, method);
  } catch (error) {
    return { ok: false, error };
  }
  if (caller instanceof Promise) return caller.then((c: unknown) => ({ ok: true as const, caller: c }), (error: unknown) => ({ ok: false as const, error }));
  return { ok: true, caller };
}

