/**
 * The sidecar under fuzz, in a process of its own (started by sidecar.ts with
 * `node --import tsx`): configured from the environment like `npm run sidecar`, it reports its
 * URL over the IPC channel once listening, answers questions about its event-loop delay
 * (loop-monitor.ts) and closes when asked.
 */
import './loop-monitor.js';
import { loadSidecarConfig } from '../../sidecar/config.js';
import { startSidecar } from '../../sidecar/app.js';
import { createLogger } from '../../services/transport/observability.js';

async function main() {
  const config = loadSidecarConfig(process.env, []);
  const sidecar = await startSidecar(config, createLogger({ logLevel: config.logLevel, name: 'sidecar' }));
  const close = () => void sidecar.close().then(() => process.exit(0), () => process.exit(1));
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'close') close();
  });
  process.on('disconnect', close);
  process.send?.({ type: 'ready', url: sidecar.server.url });
}

main().catch((err: unknown) => {
  process.stderr.write(`fuzz sidecar failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
