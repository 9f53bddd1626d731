/**
 * The embedded database's thread: PGlite, served on a loopback port by pglite-socket. PGlite
 * runs its SQL synchronously in WebAssembly, so on the request thread a 1,000-row insert or
 * its commit held the event loop for 45–60 ms (more on a busy machine); here the request
 * thread only waits on a socket. Started and stopped by embedded.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import type { EmbeddedReply, EmbeddedRequest, EmbeddedStart } from './embedded.js';

const port = parentPort!;
const { dir, image, ...assets } = workerData as EmbeddedStart;
const db = await PGlite.create(dir, { ...assets, loadDataDir: image === undefined ? undefined : new Blob([readFileSync(image)]) });
const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
await server.start();
port.postMessage({ type: 'ready', conn: server.getServerConn() } satisfies EmbeddedReply);
port.on('message', (m: EmbeddedRequest) => {
  if (m.type === 'save-image') {
    void (async () => {
      try {
        writeFileSync(m.path, Buffer.from(await (await db.dumpDataDir('none')).arrayBuffer()));
        port.postMessage({ type: 'saved' } satisfies EmbeddedReply);
      } catch (err) {
        port.postMessage({ type: 'saved', error: String(err) } satisfies EmbeddedReply);
      }
    })();
    return;
  }
  void (async () => {
    await server.stop();
    await db.close();
    port.close(); // nothing left to hold the thread: it exits
  })();
});
