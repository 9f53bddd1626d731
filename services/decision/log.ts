/**
 * The decision log: one JSON line per decision (each request of a batch its own), sampled, off
 * by default. A decision never waits for it: lines go to an asynchronous buffered writer
 * (sonic-boom, what pino writes with), and a line that would overfill its buffer is dropped and
 * counted instead of blocking (`authz_decision_log_lines_total{result}`).
 */
import { open as openFile } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Decision, EvaluateRequest } from '../engine/mod.js';
import { ConfigError, type DecisionLogTarget } from '../common/settings.js';
import { asyncDestination } from '../transport/destination.js';

/** What the decision path knows of the call a decision belongs to. */
export interface DecisionCall {
  /** `performance.now()` when the request arrived. */
  start: number;
  /** The RPC's method name (`Evaluate`, `EvaluateBatch`). */
  method: string;
  /** The call's trace id (32 hex digits), when known; see traceIdOf. */
  traceId?: string;
  /** Told the tenant of each decision (the call's span takes it as an attribute). */
  onTenant?: (tenantId: string) => void;
}

/** The writer under the log: sonic-boom's surface that the log uses. */
interface Destination {
  write(line: string): boolean;
  on(event: 'drop' | 'error' | 'ready', f: (x: unknown) => void): void;
  once(event: 'ready' | 'error' | 'close', f: (x: unknown) => void): void;
  end(): void;
  flushSync(): void;
  /** Writes out what is buffered below minLength (asynchronously). */
  flush?(): void;
  readonly fd: number;
}

/** How long a line may wait in the writer's buffer for others to share its write. */
const FLUSH_MS = 200;

export interface DecisionLogOptions {
  target: DecisionLogTarget;
  /** Share of decisions written, 0 to 1. */
  sample: number;
  /** Bytes waiting to be written at most; a line that would pass it is dropped. */
  bufferBytes: number;
  /** `control-plane` or `sidecar`: the `service` field of every line. */
  service: string;
  /** The variable that configured the target, for errors (`SERVICE_DECISION_LOG`). */
  variable: string;
  registry: Registry;
  logger: Logger;
  /** Uniform in [0, 1); default Math.random (tests seed it). */
  random?: () => number;
}

export const DECISION_LOG_LINES = 'authz_decision_log_lines_total';

/** The trace id of a W3C `traceparent` header value, or undefined when it is not a valid one. */
export function traceIdOf(traceparent: string | string[] | undefined | null): string | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const m = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}/.exec(traceparent.trim());
  return m && m[1] !== '00000000000000000000000000000000' ? m[1] : undefined;
}

export class DecisionLog {
  private broken = false;
  /** Lines were written since the last flush; the timer flushes only then. */
  private unflushed = false;
  private readonly flusher: NodeJS.Timeout;
  /** Lines the destination dropped (its 'drop' event comes synchronously inside write). */
  private drops = 0;
  private readonly random: () => number;
  private readonly written: Counter.Internal;
  private readonly dropped: Counter.Internal;
  private readonly skipped: Counter.Internal;

  private constructor(
    private readonly dest: Destination,
    private readonly opts: DecisionLogOptions,
  ) {
    this.random = opts.random ?? Math.random;
    const counter = new Counter({
      name: DECISION_LOG_LINES,
      help: 'Decision-log lines: written (handed to the asynchronous writer), dropped (its buffer was full, or the destination failed), skipped (not sampled).',
      labelNames: ['result'],
      registers: [opts.registry],
    });
    // Every series from the start (at 0), so that rates and alerts see them before the first drop.
    this.written = counter.labels('written');
    this.dropped = counter.labels('dropped');
    this.skipped = counter.labels('skipped');
    for (const c of [this.written, this.dropped, this.skipped]) c.inc(0);
    dest.on('drop', () => {
      this.drops++;
      this.dropped.inc();
    });
    this.flusher = setInterval(() => {
      if (this.unflushed && !this.broken) {
        this.unflushed = false;
        this.dest.flush?.();
      }
    }, FLUSH_MS);
    this.flusher.unref();
    dest.on('error', (err) => {
      // Decisions go on; their lines are counted as dropped from now on.
      if (!this.broken) opts.logger.error({ err }, 'the decision log cannot be written; its lines are dropped from now on');
      this.broken = true;
    });
  }

  /**
   * The log the settings ask for, its destination open; undefined when it is `off`. A file that
   * cannot be opened stops start-up with a ConfigError naming the variable.
   */
  static async open(opts: DecisionLogOptions): Promise<DecisionLog | undefined> {
    if (opts.target.kind === 'off') return undefined;
    const target = opts.target;
    // The file is opened here, not by sonic-boom: a destination that never opened stays
    // registered for pino's flush at exit, which then throws ("sonic boom is not ready yet").
    let fd = 1;
    if (target.kind === 'file') {
      try {
        fd = await promisify(openFile)(resolve(target.path), 'a');
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        throw new ConfigError(opts.variable, `cannot open ${target.path} for appending: ${e.code ?? e.message}`);
      }
    }
    const dest = asyncDestination({
      fd,
      // Lines are gathered into writes of up to 8 KiB (one write per line cost more than the
      // line itself under load); a timer writes out what is left (FLUSH_MS).
      minLength: Math.min(8192, Math.floor(opts.bufferBytes / 2)),
      maxLength: opts.bufferBytes,
    }) as unknown as Destination;
    return new DecisionLog(dest, opts);
  }

  /**
   * Writes the decision's line when it is sampled (never blocks; see the module comment).
   * `resolvedSubjectId`: the subject a request naming its subject by external id resolved to.
   */
  record(request: EvaluateRequest, d: Decision, tenantId: string | undefined, call: DecisionCall | undefined, resolvedSubjectId?: string): void {
    const sample = this.opts.sample;
    if (sample < 1 && !(this.random() < sample)) {
      this.skipped.inc();
      return;
    }
    if (this.broken) {
      this.dropped.inc();
      return;
    }
    const r = request.resource as { resourceId?: string; resourceType?: string; externalResourceId?: string } | undefined;
    const line = JSON.stringify({
      time: new Date().toISOString(),
      service: this.opts.service,
      method: call?.method ?? null,
      tenant: tenantId ?? null,
      subject: request.actor.subjectId ?? resolvedSubjectId ?? null,
      subjectExternalId: request.actor.externalId ?? null,
      subjectType: request.actor.subjectType ?? null,
      scope: request.scopeId,
      action: request.action,
      resource: r?.resourceId ?? null,
      resourceType: r?.resourceType ?? null,
      externalResourceId: r?.externalResourceId ?? null,
      allowed: d.allowed,
      reason: d.reason,
      revision: d.revision,
      policyId: d.evaluatedPolicy?.id ?? null,
      latencyMs: call === undefined ? null : Math.round((performance.now() - call.start) * 1000) / 1000,
      traceId: call?.traceId ?? null,
    }) + '\n';
    // sonic-boom emits 'drop' (counted above) instead of buffering past maxLength.
    const before = this.drops;
    this.dest.write(line);
    this.unflushed = true;
    if (this.drops === before) this.written.inc();
  }

  /** Writes what is buffered and closes the destination (stdout stays open). */
  async close(): Promise<void> {
    clearInterval(this.flusher);
    if (this.broken) return;
    await new Promise<void>((done) => {
      const timer = setTimeout(done, 2_000);
      this.dest.once('close', () => {
        clearTimeout(timer);
        done();
      });
      this.dest.once('error', () => {
        clearTimeout(timer);
        done();
      });
      this.dest.end();
    });
  }
}
