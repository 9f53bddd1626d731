import { rootCertificates } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { normalizeBaseUrl, tlsOptions } from './transport.js';

describe('the connection options', () => {
  it('trusts a given CA besides the default roots, not instead of them', () => {
    const ca = '-----BEGIN CERTIFICATE-----\nMIIB…\n-----END CERTIFICATE-----\n';
    expect(tlsOptions(ca).ca).toEqual([...rootCertificates, ca]);
    expect(tlsOptions(undefined)).toEqual({});
  });

  it('normalises the base URL and keeps a path prefix', () => {
    expect(normalizeBaseUrl('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normalizeBaseUrl('https://authz.example.com/api//')).toBe('https://authz.example.com/api');
  });
});
