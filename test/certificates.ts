/**
 * Test certificates, as cert-manager issues them in deploy/: a CA of its own signing a serving
 * certificate for loopback (`127.0.0.1`, `localhost`), written as PEM files into a fresh
 * directory. Each call makes a new CA, so two calls give two CAs that do not trust each other.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';

export interface TestCertificates {
  dir: string;
  /** PEM texts. */
  ca: string;
  cert: string;
  key: string;
  /** Their files: `ca.crt`, `tls.crt`, `tls.key`, as in a cert-manager Secret. */
  caFile: string;
  certFile: string;
  keyFile: string;
  /** Another serving pair from the same CA (a renewal), not written. */
  renew(): Promise<{ cert: string; key: string }>;
  remove(): void;
}

async function leaf(ca: { cert: string; key: string }, names: string[]): Promise<{ cert: string; key: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: names[0] }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, ...names.map((value) => ({ type: 2 as const, value }))] },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/** A CA and a serving certificate it signed for 127.0.0.1 and `names` (default `localhost`). */
export async function testCertificates(names: string[] = ['localhost']): Promise<TestCertificates> {
  const caPems = await selfsigned.generate([{ name: 'commonName', value: 'authz test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const ca = { cert: caPems.cert, key: caPems.private };
  const serving = await leaf(ca, names);
  const dir = mkdtempSync(join(tmpdir(), 'authz-tls-'));
  const files = { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  writeFileSync(files.caFile, ca.cert);
  writeFileSync(files.certFile, serving.cert);
  writeFileSync(files.keyFile, serving.key);
  return {
    dir,
    ca: ca.cert,
    ...serving,
    ...files,
    renew: () => leaf(ca, names),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
