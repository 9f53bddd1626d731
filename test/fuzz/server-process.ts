/**
 * The control plane under fuzz, in a process of its own (started by control-plane.ts with
 * `node --import tsx`), so that its CPU time and event-loop delay (loop-monitor.ts) are the
 * server's alone, not the fuzzer's, and so that a crash of the server is seen as a crash.
 *
 * Configuration comes from the environment like `npm start`. Over the IPC channel the parent
 * sends SQL for its invariant checks (run on the server's own database connection: the
 * embedded database is in this process and takes one connection) and asks it to close.
 */
import './loop-monitor.js';
import { startControlPlane } from '../../services/control-plane/app.js';
import { loadConfig } from '../../services/control-plane/config.js';
import { createLogger } from '../../services/transport/observability.js';

type Message = { type: 'sql'; id: number; sql: string; params?: unknown[] } | { type: 'close' };

async function main() {
  const config = loadConfig(process.env, []);
  const cp = await startControlPlane(config, createLogger({ logLevel: config.logLevel, name: 'control-plane' }));
  const send = (m: unknown) => process.send?.(m);
  process.on('message', (m: Message) => {
    if (m.type === 'sql') {
      cp.db.orm.em.fork().execute(m.sql, m.params ?? []).then(
        (rows) => send({ type: 'sql', id: m.id, rows }),
        (err: unknown) => send({ type: 'sql', id: m.id, error: err instanceof Error ? err.message : String(err) }),
      );
    } else if (m.type === 'close') {
      cp.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    }
  });
  process.on('disconnect', () => void cp.close().finally(() => process.exit(0)));
  send({ type: 'ready', url: cp.server.url });
}

main().catch((err: unknown) => {
  process.stderr.write(`fuzz control plane failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
