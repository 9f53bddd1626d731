/**
 * `grpc.health.v1.Health` (https://github.com/grpc/grpc/blob/master/doc/health-checking.md),
 * what `grpc_health_probe`, Kubernetes `grpc:` probes and load balancers ask. Every known name
 * (`""` for the whole server, or the full name of a served service) has the status of
 * `/readyz`: SERVING exactly when it would answer 200. Check of an unknown name is NOT_FOUND;
 * Watch of one sends SERVICE_UNKNOWN and stays open.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
  HealthCheckResponseSchema,
  type HealthCheckResponse,
} from '../../gen/grpc/health/v1/health_pb.js';

export { Health };

/** How often readiness is asked while anyone watches; default 1 s. */
export const WATCH_POLL_MS = 1_000;

/**
 * One readiness poll shared by every Watch stream: asks `ready` every `intervalMs` while at
 * least one listener is subscribed (so many watchers cost one database ping per interval),
 * and tells each listener every result.
 */
export class ReadinessPoller {
  private readonly listeners = new Set<(ready: boolean) => void>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly ready: () => Promise<boolean>,
    private readonly intervalMs = WATCH_POLL_MS,
  ) {}

  /** Calls `listener` with each poll's result until the returned function is called. */
  subscribe(listener: (ready: boolean) => void): () => void {
    this.listeners.add(listener);
    this.schedule();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  }

  private schedule(): void {
    if (this.timer !== undefined || this.polling || this.listeners.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.polling = true;
      void Promise.resolve()
        .then(this.ready)
        .catch(() => false)
        .then((ready) => {
          this.polling = false;
          for (const l of [...this.listeners]) l(ready);
          this.schedule();
        });
    }, this.intervalMs);
    this.timer.unref();
  }
}

export interface HealthOptions {
  /** Full names of the services that answer like `""`. */
  services: readonly string[];
  /** Whether the process is ready, as `/readyz` decides (never throws: false on failure). */
  ready: () => Promise<boolean>;
  /** How often Watch asks `ready`; default {@link WATCH_POLL_MS}. */
  pollMs?: number;
}

/** The Health service: Check, Watch, and List (every known name with its status). */
export function healthService(opts: HealthOptions): ServiceImpl<typeof Health> {
  const known = new Set(['', ...opts.services]);
  const poller = new ReadinessPoller(opts.ready, opts.pollMs);
  const response = (status: Status): HealthCheckResponse => create(HealthCheckResponseSchema, { status });
  const statusOf = (ready: boolean) => (ready ? Status.SERVING : Status.NOT_SERVING);
  return {
    async check(req) {
      if (!known.has(req.service)) throw new ConnectError(`unknown service ${JSON.stringify(req.service)}`, Code.NotFound);
      return response(statusOf(await opts.ready()));
    },
    async list() {
      const status = statusOf(await opts.ready());
      return { statuses: Object.fromEntries([...known].map((name) => [name, response(status)])) };
    },
    async *watch(req, ctx) {
      if (!known.has(req.service)) {
        yield response(Status.SERVICE_UNKNOWN);
        await aborted(ctx);
        return;
      }
      let last = statusOf(await opts.ready());
      yield response(last);
      // Poll results queue up here between the yields; only changes are sent.
      const queue: boolean[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = poller.subscribe((ready) => {
        queue.push(ready);
        wake?.();
      });
      const onAbort = () => wake?.();
      ctx.signal.addEventListener('abort', onAbort);
      try {
        while (!ctx.signal.aborted) {
          const next = queue.shift();
          if (next === undefined) {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
            continue;
          }
          if (statusOf(next) !== last) {
            last = statusOf(next);
            yield response(last);
          }
        }
      } finally {
        unsubscribe();
        ctx.signal.removeEventListener('abort', onAbort);
      }
    },
  };
}

/** Resolves when the call ends (client gone, deadline, or server shutting down). */
function aborted(ctx: HandlerContext): Promise<void> {
  if (ctx.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
}
