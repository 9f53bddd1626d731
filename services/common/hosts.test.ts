import { describe, expect, it } from 'vitest';
import { canonicalHost, isLoopbackHost, isUnspecifiedHost } from './hosts.js';

describe('canonicalHost', () => {
  it('spells a host as the URL parser does: lower case, no trailing dot, IPv4 dotted, IPv6 compressed in brackets', () => {
    const cases: [string, string][] = [
      ['LOCALHOST.', 'localhost'], ['App.Example.COM', 'app.example.com'], ['authz_sidecar', 'authz_sidecar'],
      ['127.1', '127.0.0.1'], ['0x7f.1', '127.0.0.1'], ['2130706433', '127.0.0.1'], ['0', '0.0.0.0'],
      ['::1', '[::1]'], ['[0:0::1]', '[::1]'], ['[FD00::7]', '[fd00::7]'], ['::', '[::]'], ['::ffff:127.0.0.1', '[::ffff:7f00:1]'],
    ];
    for (const [text, host] of cases) expect([text, canonicalHost(text)]).toEqual([text, host]);
  });

  it('refuses anything but a bare name or address', () => {
    for (const text of ['', '.', 'a..b', 'app:80', '[::1]:80', 'http://app', 'user@app', 'app/x', '*', '*.example.com', '[::1', 'fe80::1%eth0', '1.2.3.4.5', '256.1.1.1', 'exämple.com', 'a b']) {
      expect([text, canonicalHost(text)]).toEqual([text, undefined]);
    }
  });
});

describe('isLoopbackHost', () => {
  it('is localhost and the names under it, 127.0.0.0/8, [::1] and IPv4-mapped 127.x', () => {
    for (const text of ['localhost', 'app.localhost', '127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1']) expect([text, isLoopbackHost(canonicalHost(text)!)]).toEqual([text, true]);
    for (const text of ['localhost.example.com', 'notlocalhost', '128.0.0.1', '10.0.0.1', '0.0.0.0', '::', '::2', 'fe80::1', '::ffff:10.0.0.1']) {
      expect([text, isLoopbackHost(canonicalHost(text)!)]).toEqual([text, false]);
    }
  });

  it('tells the unspecified addresses', () => {
    expect(['0.0.0.0', '::', '[::]', '0'].map((t) => isUnspecifiedHost(canonicalHost(t)!))).toEqual([true, true, true, true]);
    expect(isUnspecifiedHost('127.0.0.1')).toBe(false);
  });
});
