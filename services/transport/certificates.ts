/**
 * Serving certificates from PEM files (a cert-manager Secret mounted as a volume), for the
 * servers that speak TLS: the control plane's listener (server.ts) and the injector's webhook.
 * cert-manager renews a Secret in place and the kubelet swaps the mounted files, so the files
 * are re-read on a timer and a changed pair replaces the served one without a restart; a pair
 * that does not load (half-written, key and certificate not matching) is logged and the
 * previous one kept. Also: PEM certificate bundles to trust (a private CA), checked the same way.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { ConfigError } from '../common/settings.js';

/** The two files of a serving certificate, and the settings that name them (for errors). */
export interface CertificateFiles {
  certFile: string;
  keyFile: string;
  certSetting: string;
  keySetting: string;
}

export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
}

/** What every TLS listener here serves: the pair, TLS 1.2 at least. */
export function secureContextOptions(pair: CertificatePair): SecureContextOptions {
  return { cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' };
}

async function readNamed(file: string, setting: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new ConfigError(setting, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/**
 * Reads and checks a pair: throws a ConfigError naming the setting of a file that cannot be read,
 * or of the certificate when the two do not make a usable pair (malformed, or not each other's).
 */
export async function readCertificatePair(files: CertificateFiles): Promise<CertificatePair> {
  const [cert, key] = await Promise.all([readNamed(files.certFile, files.certSetting), readNamed(files.keyFile, files.keySetting)]);
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new ConfigError(files.certSetting, `${files.certFile} and ${files.keyFile} are not a usable certificate and key: ${(err as Error).message}`);
  }
  return { cert, key };
}

/** Expiry of a PEM certificate (its first), Unix seconds; 0 when it does not parse. */
export function notAfterSeconds(cert: Buffer): number {
  try {
    return Math.floor(new Date(new X509Certificate(cert).validTo).getTime() / 1000);
  } catch {
    return 0;
  }
}

export interface CertificateReloader {
  /** Re-reads the files now; true when a changed pair was loaded (and applied). */
  reload(): Promise<boolean>;
  stop(): void;
}

/**
 * Re-reads `files` every `intervalMs` (and on `reload()`), and hands a changed pair that loads to
 * `apply`; a pair that does not load is logged at warn and `current` kept.
 */
export function reloadCertificates(
  files: CertificateFiles,
  current: CertificatePair,
  opts: { intervalMs: number; logger: Logger; apply: (pair: CertificatePair) => void },
): CertificateReloader {
  let pair = current;
  const reload = async (): Promise<boolean> => {
    let next: CertificatePair;
    try {
      const [cert, key] = await Promise.all([readFile(files.certFile), readFile(files.keyFile)]);
      if (cert.equals(pair.cert) && key.equals(pair.key)) return false;
      next = await readCertificatePair(files);
    } catch (err) {
      opts.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'certificate files did not load; serving the previous certificate');
      return false;
    }
    opts.apply(next);
    pair = next;
    opts.logger.info({ notAfter: new Date(notAfterSeconds(next.cert) * 1000).toISOString() }, 'serving certificate reloaded');
    return true;
  };
  let reloading = false;
  const timer = setInterval(() => {
    if (reloading) return;
    reloading = true;
    void reload().finally(() => (reloading = false));
  }, opts.intervalMs);
  timer.unref();
  return { reload, stop: () => clearInterval(timer) };
}

/** The PEM certificates of a bundle, each checked; throws when there is none or one does not parse. */
export function pemCertificates(text: string): string[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  blocks.forEach((b, i) => {
    try {
      new X509Certificate(b);
    } catch (err) {
      throw new Error(`certificate ${i + 1} does not parse: ${(err as Error).message}`);
    }
  });
  return blocks;
}

/** Reads a CA bundle named by `setting`: its certificates as PEM text, or a ConfigError naming the setting. */
export async function readCaBundle(file: string, setting: string): Promise<string> {
  const text = (await readNamed(file, setting)).toString('utf8');
  try {
    return pemCertificates(text).join('\n') + '\n';
  } catch (err) {
    throw new ConfigError(setting, `${file} ${(err as Error).message}`);
  }
}
