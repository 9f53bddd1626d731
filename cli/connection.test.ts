import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configFilePath, ConfigFileError, readLogin, writeLogin } from './config-file.js';
import { resolveConnection, type GlobalOptions } from './connection.js';
import { UsageError } from './exit.js';
import { CliIo } from './io.js';

const dir = mkdtempSync(join(tmpdir(), 'authz-cli-connection-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function ioWith(env: Record<string, string>): { io: CliIo; stderr: () => string } {
  let stderr = '';
  const io = new CliIo({ stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) }, stdin: process.stdin as never, env, home: dir });
  return { io, stderr: () => stderr };
}

const stored = join(dir, 'stored.json');
writeLogin(stored, { url: 'https://authz.example.com/', apiKey: 'azk_stored_key_0123456789abcdefghij', tenant: 'tenant_stored', caFile: '/etc/ca.pem' });
const none: GlobalOptions = { timeout: 1000, config: stored };

describe('which URL, key and tenant a command uses', () => {
  it('takes the flag, else the variable, else the login file, else the default', () => {
    const { io } = ioWith({});
    expect(resolveConnection({ timeout: 1000, config: join(dir, 'absent.json') }, io)).toMatchObject({ url: 'http://127.0.0.1:8080', urlSource: 'default' });
    expect(resolveConnection(none, io)).toMatchObject({
      url: 'https://authz.example.com',
      urlSource: 'login file',
      apiKey: 'azk_stored_key_0123456789abcdefghij',
      apiKeySource: 'login file',
      tenant: 'tenant_stored',
      caFile: '/etc/ca.pem',
    });
    const env = ioWith({ AUTHZ_API_KEY: 'azk_from_env_key_0123456789abcdef', AUTHZ_TENANT: 'tenant_env', AUTHZ_URL: 'https://authz.example.com' }).io;
    expect(resolveConnection(none, env)).toMatchObject({ urlSource: 'environment', apiKey: 'azk_from_env_key_0123456789abcdef', apiKeySource: 'environment', tenant: 'tenant_env', tenantSource: 'environment' });
    expect(resolveConnection({ ...none, apiKey: 'azk_flag_key_0123456789abcdefghij', tenant: 'tenant_flag' }, env)).toMatchObject({ apiKeySource: 'flag', tenant: 'tenant_flag', tenantSource: 'flag' });
    // An empty variable counts as unset.
    expect(resolveConnection(none, ioWith({ AUTHZ_TENANT: '', AUTHZ_URL: '' }).io)).toMatchObject({ tenant: 'tenant_stored', urlSource: 'login file' });
  });

  it('uses the login file\'s key, tenant and CA only for the URL it was saved with', () => {
    const c = resolveConnection({ ...none, url: 'http://127.0.0.1:9999' }, ioWith({}).io);
    expect(c).toMatchObject({ url: 'http://127.0.0.1:9999', otherLogin: 'https://authz.example.com' });
    expect([c.apiKey, c.tenant, c.caFile]).toEqual([undefined, undefined, undefined]);
    const fromEnv = resolveConnection(none, ioWith({ AUTHZ_URL: 'https://authz.example.com:8443' }).io);
    expect(fromEnv.apiKey).toBeUndefined();
    // The same server spelled with a trailing slash is the same URL.
    expect(resolveConnection({ ...none, url: 'https://authz.example.com/' }, ioWith({}).io).apiKey).toBe('azk_stored_key_0123456789abcdefghij');
  });

  it('refuses a malformed URL as a usage error naming where it came from', () => {
    expect(() => resolveConnection({ ...none, url: 'authz.example.com' }, ioWith({}).io)).toThrow(new UsageError('--url: not a URL: "authz.example.com" (expected http://host:port or https://host:port)'));
    expect(() => resolveConnection(none, ioWith({ AUTHZ_URL: 'ftp://x' }).io)).toThrow(/^AUTHZ_URL: not an http/);
  });

  it('redacts every key it learns of, and warns about a login file others can read', () => {
    const loose = join(dir, 'loose.json');
    writeLogin(loose, { url: 'http://127.0.0.1:8080', apiKey: 'azk_loose_key_0123456789abcdefghijk' });
    chmodSync(loose, 0o640);
    const { io, stderr } = ioWith({});
    resolveConnection({ timeout: 1, config: loose, apiKey: 'azk_flag_key_0123456789abcdefghij' }, io);
    expect(stderr()).toBe(`warning: ${loose} is readable by other users (mode 0640): run chmod 600 ${loose}\n`);
    expect(io.redact('a azk_loose_key_0123456789abcdefghijk b azk_flag_key_0123456789abcdefghij')).toBe('a [redacted] b [redacted]');
  });
});

describe('the login file', () => {
  it('is written with mode 0600 in a directory of mode 0700, replacing a wider file whole', () => {
    const path = join(dir, 'nested', 'authz', 'config.json');
    writeLogin(path, { url: 'http://a', apiKey: 'k1' });
    expect([statSync(path).mode & 0o777, statSync(join(dir, 'nested', 'authz')).mode & 0o777]).toEqual([0o600, 0o700]);
    chmodSync(path, 0o666);
    writeLogin(path, { url: 'http://b', tenant: 't' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ url: 'http://b', tenant: 't' });
    expect(readLogin(path)).toEqual({ login: { url: 'http://b', tenant: 't' }, mode: 0o600 });
  });

  it('says what is wrong with a file it cannot use', () => {
    const bad = join(dir, 'bad.json');
    for (const [text, message] of [
      ['{', 'not readable as JSON'],
      ['[]', 'must hold a JSON object'],
      ['{"apiKey":"k"}', 'url is missing'],
      ['{"url":"http://a","tenant":5}', 'tenant must be a string'],
    ]) {
      writeFileSync(bad, text);
      expect(() => readLogin(bad)).toThrow(ConfigFileError);
      expect(() => readLogin(bad)).toThrow(message);
    }
    expect(readLogin(join(dir, 'missing.json'))).toBeUndefined();
  });

  it('lives at AUTHZ_CONFIG, else under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configFilePath({ AUTHZ_CONFIG: '/x/c.json', XDG_CONFIG_HOME: '/xdg' }, '/home/u')).toBe('/x/c.json');
    expect(configFilePath({ XDG_CONFIG_HOME: '/xdg' }, '/home/u')).toBe('/xdg/authz/config.json');
    expect(configFilePath({}, '/home/u')).toBe('/home/u/.config/authz/config.json');
  });
});
