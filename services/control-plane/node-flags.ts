/**
 * V8 flags the control plane's `node` is started with (the image's CMD, the Deployment's
 * command, `npm start`, and the test and benchmark harnesses; tests check they agree). They
 * cannot come from NODE_OPTIONS, which refuses V8 flags, nor from `v8.setFlagsFromString` at
 * run time, which comes after the heap is set up.
 *
 * `--no-memory-reducer`: V8's memory reducer, after any full collection that frees a megabyte,
 * grows the old generation by 1.3× of the live heap instead of up to 4×. A control plane with a
 * small live heap that streams a large snapshot (millions of short-lived row strings and 4 MiB
 * buffers) then runs a full collection every ~100 ms: 70 of them in one read of a 2.1M-row
 * tenant, and 35% more CPU for that read (README, Measured: "V8's memory reducer on the control
 * plane"). Without the reducer the heap keeps the size it reached after a burst until the next
 * full collection instead of shrinking while idle: a server's trade, not a browser tab's.
 */
export const CONTROL_PLANE_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** Flags of {@link CONTROL_PLANE_NODE_FLAGS} this process was started without. */
export function missingNodeFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return CONTROL_PLANE_NODE_FLAGS.filter((f) => !execArgv.includes(f));
}
