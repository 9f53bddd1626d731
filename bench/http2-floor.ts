/**
 * The floor under the Watch fan-out: a bare Node HTTP/2 server (no control plane, no async
 * hooks) writing one 505-byte gRPC-sized frame to each of `--streams` open response streams, a
 * round every 20 ms, the clients in a child process. Prints this process's CPU per stream and
 * write: what Node's HTTP/2 stack and the kernel cost for one message on one stream, whatever
 * the server does around it. `--per-connection N` multiplexes N streams on a connection;
 * `--async-context on` makes an AsyncLocalStorage active first, as the control plane's ORM and
 * tracing do: every write's async resource is then tracked too.
 *
 * Usage: tsx bench/http2-floor.ts [--streams 1000 --writes 200 --per-connection 1 --async-context on]
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { fork } from 'node:child_process';
import { connect, createServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { threadCpuMs } from '../test/processes.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const STREAMS = Number(args.get('streams') ?? 1000);
const WRITES = Number(args.get('writes') ?? 200);
const PER_CONNECTION = Number(args.get('per-connection') ?? 1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (args.get('client') !== undefined) {
  // The child: opens the streams and reads whatever comes.
  let got = 0;
  for (let i = 0; i < STREAMS; i += PER_CONNECTION) {
    const session = connect(args.get('client')!);
    for (let k = 0; k < PER_CONNECTION && i + k < STREAMS; k++) {
      const req = session.request({ ':method': 'POST', ':path': '/floor' });
      req.on('data', (c: Buffer) => (got += c.length));
      req.end();
    }
  }
  setInterval(() => process.send!(got), 100);
} else {
  if (args.get('async-context') === 'on') new AsyncLocalStorage().enterWith({ request: 'none' });
  const streams: ServerHttp2Stream[] = [];
  const server = createServer();
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    streams.push(stream);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const child = fork(import.meta.filename, ['--streams', String(STREAMS), '--per-connection', String(PER_CONNECTION), '--client', url], { execArgv: ['--import', 'tsx'] });
  let received = 0;
  child.on('message', (n: number) => (received = n));
  while (streams.length < STREAMS) await sleep(50);
  await sleep(500);
  const frame = Buffer.alloc(505, 7);
  frame[0] = 0;
  frame.writeUInt32BE(500, 1);
  for (let w = 0; w < 20; w++) {
    for (const s of streams) s.write(frame);
    await sleep(20);
  }
  const cpu0 = threadCpuMs(process.pid)!;
  for (let w = 0; w < WRITES; w++) {
    for (const s of streams) s.write(frame);
    await sleep(20);
  }
  const perWriteUs = ((threadCpuMs(process.pid)! - cpu0) * 1000) / (STREAMS * WRITES);
  await sleep(300);
  console.log(`${STREAMS} streams, ${PER_CONNECTION} per connection, async context ${args.get('async-context') ?? 'off'}, ${WRITES} rounds of one 505-byte frame each: ${perWriteUs.toFixed(2)} µs of CPU per stream and write ` +
    `(this process, idle time between rounds included); the clients received ${received.toLocaleString('en-US')} bytes`);
  child.kill();
  server.close();
  for (const s of streams) s.close();
  process.exit(0);
}
