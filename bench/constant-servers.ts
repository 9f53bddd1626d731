/**
 * The baselines of `bench:sidecar`: servers that answer every call with the same decision and do
 * nothing else, run in a process of their own (`node --import tsx bench/constant-servers.ts
 * http|grpc`). They print `listening <port>` once ready.
 *   http [port]: node:http, reading the JSON body and answering a constant JSON decision;
 *   grpc: @grpc/grpc-js, DecisionService.Evaluate answering a constant decision.
 */
import * as http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { loadApiPackage } from '../test/interop/grpc-js-client.js';

const DECISION = '{"allowed":true,"decidedByPolicy":false,"reason":"role","revision":1,"trace":[]}';

const kind = process.argv[2];
if (kind === 'http') {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(DECISION)) });
      res.end(DECISION);
    });
  });
  server.listen(Number(process.argv[3] ?? 0), '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`));
} else if (kind === 'grpc') {
  const pkg = loadApiPackage() as unknown as { authz: { v1: { DecisionService: { service: grpc.ServiceDefinition } } } };
  const server = new grpc.Server();
  server.addService(pkg.authz.v1.DecisionService.service, {
    evaluate: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, { allowed: true, decidedByPolicy: false, reason: 'role', revision: '1', trace: [] }),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    process.stdout.write(`listening ${port}\n`);
  });
} else {
  process.stderr.write('usage: constant-servers.ts http|grpc\n');
  process.exit(2);
}
