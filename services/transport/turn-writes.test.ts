import { once } from 'node:events';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MAX_TURN_WRITES, endAfterTurn } from './turn-writes.js';

/** A response that records what is written to it, in order. */
function recorder(log: string[], name: string, failing = false) {
  return {
    destroyed: false,
    writeHead(status: number) {
      if (failing) throw new Error('socket gone');
      log.push(`${name} head ${status}`);
    },
    end(body: string) {
      log.push(`${name} ${body}`);
    },
    destroy() {
      this.destroyed = true;
      log.push(`${name} destroyed`);
    },
  };
}
const asResponse = (r: ReturnType<typeof recorder>) => r as unknown as http.ServerResponse;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('answers written at the end of the turn', () => {
  it('holds answers until the turn ends, then writes each once, in order', async () => {
    const log: string[] = [];
    endAfterTurn(asResponse(recorder(log, 'a')), 200, {}, 'A');
    endAfterTurn(asResponse(recorder(log, 'b')), 200, {}, 'B');
    expect(log).toEqual([]);
    await nextTurn();
    expect(log).toEqual(['a head 200', 'a A', 'b head 200', 'b B']);
    await nextTurn();
    expect(log).toHaveLength(4);
  });

  it(`writes at once when a turn holds ${MAX_TURN_WRITES} answers, and the rest at its end`, async () => {
    const log: string[] = [];
    for (let i = 0; i < MAX_TURN_WRITES - 1; i++) endAfterTurn(asResponse(recorder(log, `r${i}`)), 200, {}, 'x');
    expect(log).toEqual([]);
    endAfterTurn(asResponse(recorder(log, 'last')), 200, {}, 'x');
    expect(log).toHaveLength(2 * MAX_TURN_WRITES);
    endAfterTurn(asResponse(recorder(log, 'after')), 200, {}, 'y');
    expect(log).toHaveLength(2 * MAX_TURN_WRITES);
    await nextTurn();
    expect(log.slice(2 * MAX_TURN_WRITES)).toEqual(['after head 200', 'after y']);
  });

  it('an answer that cannot be written ends its own response only', async () => {
    const log: string[] = [];
    const gone = recorder(log, 'gone', true);
    endAfterTurn(asResponse(gone), 200, {}, 'G');
    endAfterTurn(asResponse(recorder(log, 'ok')), 200, {}, 'K');
    await nextTurn();
    expect(gone.destroyed).toBe(true);
    expect(log).toEqual(['gone destroyed', 'ok head 200', 'ok K']);
  });

  it('an answer whose connection closed while it was held is dropped quietly', async () => {
    let held: http.ServerResponse | undefined;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        req.socket.destroy();
        held = res;
        endAfterTurn(res, 200, { 'content-type': 'text/plain' }, 'too late');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const failed = new Promise<Error>((resolve) => http.get({ port, host: '127.0.0.1', path: '/' }).on('error', resolve));
      expect((await failed).message).toMatch(/socket hang up|ECONNRESET/);
      await nextTurn();
      await nextTurn();
      expect(held?.writableEnded).toBe(true);
    } finally {
      server.close();
    }
  });

  it('pipelined requests on one connection are answered in their order', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => endAfterTurn(res, 200, { 'content-type': 'text/plain', 'content-length': String(req.url!.length) }, req.url!));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const socket = net.connect(port, '127.0.0.1');
    try {
      await once(socket, 'connect');
      const paths = Array.from({ length: 80 }, (_, i) => `/p${i}`);
      // All in one write: the server reads them in one turn and holds more than it may.
      socket.write(paths.map((p) => `GET ${p} HTTP/1.1\r\nhost: x\r\n\r\n`).join(''));
      let text = '';
      socket.setEncoding('utf8');
      await new Promise<void>((resolve) => socket.on('data', (c: string) => {
        text += c;
        if (text.split('HTTP/1.1 200').length - 1 === paths.length && text.endsWith(paths[paths.length - 1])) resolve();
      }));
      expect(text.split('\r\n\r\n').slice(1).map((part) => part.split('HTTP/1.1')[0])).toEqual(paths);
    } finally {
      socket.destroy();
      server.close();
    }
  });

  it('on a real server, every client of a busy turn gets its own answer', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => endAfterTurn(res, 200, { 'content-type': 'text/plain' }, `answer to ${req.url}`));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
    try {
      const get = (i: number) => new Promise<string>((resolve, reject) => {
        http.get({ port, host: '127.0.0.1', path: `/${i}`, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        }).on('error', reject);
      });
      // More requests than one turn may hold, over more connections, three times over (keep-alive).
      for (let round = 0; round < 3; round++) {
        const bodies = await Promise.all(Array.from({ length: 300 }, (_, i) => get(i)));
        expect(bodies).toEqual(Array.from({ length: 300 }, (_, i) => `answer to /${i}`));
      }
    } finally {
      agent.destroy();
      server.close();
    }
  });
});
