import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactConfig, tlsFilesOf } from './config.js';

describe('loadConfig', () => {
  it('applies the defaults of contract §2', () => {
    const c = loadConfig({}, []);
    expect(c).toEqual({
      createDatabase: false,
      dataDir: './data',
      port: 8080,
      host: '127.0.0.1',
      resourceScopeGate: 'off',
      watchHeartbeatMs: 1000,
      watchMaxBufferedBytes: 16 * 1024 * 1024,
      watchSnapshotCacheBytes: 128 * 1024 * 1024,
      changeLogRetentionRevisions: 10_000,
      changeLogRetentionHours: 2160,
      changeLogCompactIntervalMs: 300_000,
      minRevisionWaitMs: 1000,
      indexMaxRows: 5_000_000,
      indexMaxBuilds: 4,
      sessionIdleMinutes: 30,
      sessionMaxHours: 12,
      console: true,
      logLevel: 'info',
      decisionLog: { kind: 'off' },
      decisionLogSample: 1,
      decisionLogBufferBytes: 4 * 1024 * 1024,
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(c.databaseUrl).toBeUndefined();
  });

  it('reads environment variables', () => {
    const c = loadConfig(
      {
        DATABASE_URL: 'postgres://u:p@db:5432/authz',
        SERVICE_DATA_DIR: '/var/lib/authz',
        SERVICE_PORT: '9090',
        SERVICE_HOST: '0.0.0.0',
        SERVICE_BOOTSTRAP_API_KEY: 'sk_bootstrap_secret',
        SERVICE_RESOURCE_SCOPE_GATE: 'links-fallback',
        SERVICE_WATCH_HEARTBEAT_MS: '250',
        SERVICE_WATCH_MAX_BUFFERED_BYTES: '1048576',
        SERVICE_WATCH_SNAPSHOT_CACHE_BYTES: '0',
        SERVICE_CHANGE_LOG_RETENTION_REVISIONS: '100',
        SERVICE_CHANGE_LOG_RETENTION_HOURS: '0',
        SERVICE_CHANGE_LOG_COMPACT_INTERVAL_MS: '0',
        SERVICE_MIN_REVISION_WAIT_MS: '0',
        SERVICE_INDEX_MAX_ROWS: '1000',
        SERVICE_LOG_LEVEL: 'debug',
      },
      [],
    );
    expect(c).toMatchObject({
      databaseUrl: 'postgres://u:p@db:5432/authz',
      dataDir: '/var/lib/authz',
      port: 9090,
      host: '0.0.0.0',
      bootstrapApiKey: 'sk_bootstrap_secret',
      resourceScopeGate: 'links-fallback',
      watchHeartbeatMs: 250,
      watchMaxBufferedBytes: 1048576,
      watchSnapshotCacheBytes: 0,
      changeLogRetentionRevisions: 100,
      changeLogRetentionHours: 0,
      changeLogCompactIntervalMs: 0,
      minRevisionWaitMs: 0,
      indexMaxRows: 1000,
      logLevel: 'debug',
    });
  });

  it('has a flag twin for every variable, in both forms; flags win', () => {
    const c = loadConfig({ SERVICE_PORT: '9090', SERVICE_RESOURCE_SCOPE_GATE: 'off' }, [
      '--service-port',
      '7070',
      '--service-resource-scope-gate=strict',
      '--database-url=postgresql://localhost/authz',
    ]);
    expect(c.port).toBe(7070);
    expect(c.resourceScopeGate).toBe('strict');
    expect(c.databaseUrl).toBe('postgresql://localhost/authz');
  });

  it('reads CORS origins (SERVICE_CORS_ORIGINS or its flag), normalised as browsers send them; unset: none', () => {
    expect(loadConfig({}, []).corsOrigins).toBeUndefined();
    expect(loadConfig({ SERVICE_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,HTTPS://Admin.Example.com:443' }, []).corsOrigins)
      .toEqual(['https://app.example.com', 'http://localhost:5173', 'https://admin.example.com']);
    expect(loadConfig({}, ['--service-cors-origins', 'https://a.example']).corsOrigins).toEqual(['https://a.example']);
    for (const bad of ['*', 'app.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'ftp://files.example.com', 'https://u:p@app.example.com', 'https://app.example.com?x=1', ' , ']) {
      expect(() => loadConfig({ SERVICE_CORS_ORIGINS: bad }, []), bad).toThrow(/^SERVICE_CORS_ORIGINS: /);
    }
    expect(() => loadConfig({ SERVICE_CORS_ORIGINS: 'https://ok.example,https://bad.example/' }, [])).toThrow('"https://bad.example/" is not an origin');
  });

  it('refuses wildcard origins in SERVICE_CORS_ORIGINS (they would match nothing), saying to list each origin', () => {
    for (const bad of ['https://*.example.com', 'https://app.example.com,https://*.example.com', '*', 'https://app.*.com', 'http://localhost:*', 'https://%2A.example.com']) {
      const entry = bad.split(',').pop()!;
      expect(() => loadConfig({ SERVICE_CORS_ORIGINS: bad }, []), bad).toThrow(
        `SERVICE_CORS_ORIGINS: ${JSON.stringify(entry)} has a wildcard, and patterns are not supported: list each origin instead`,
      );
    }
    expect(() => loadConfig({}, ['--service-cors-origins', 'https://*.example.com'])).toThrow(/^SERVICE_CORS_ORIGINS: "https:\/\/\*\.example\.com" has a wildcard.*\(from flag --service-cors-origins\)$/);
  });

  it('creates a missing database only when SERVICE_DATABASE_CREATE (or its flag) says true', () => {
    expect(loadConfig({ SERVICE_DATABASE_CREATE: 'true' }, []).createDatabase).toBe(true);
    expect(loadConfig({ SERVICE_DATABASE_CREATE: 'false' }, []).createDatabase).toBe(false);
    expect(loadConfig({ SERVICE_DATABASE_CREATE: 'true' }, ['--service-database-create', 'false']).createDatabase).toBe(false);
    expect(loadConfig({}, ['--service-database-create=true']).createDatabase).toBe(true);
    for (const bad of ['yes', '1', 'TRUE ish']) {
      expect(() => loadConfig({ SERVICE_DATABASE_CREATE: bad }, []), bad).toThrow(`SERVICE_DATABASE_CREATE: must be 'true' or 'false', got ${JSON.stringify(bad)}`);
    }
  });

  it('reads the TLS certificate files (SERVICE_TLS_CERT_FILE and SERVICE_TLS_KEY_FILE or their flags): both or neither', () => {
    expect(loadConfig({}, [])).not.toHaveProperty('tlsCertFile');
    const files = { SERVICE_TLS_CERT_FILE: '/etc/tls/tls.crt', SERVICE_TLS_KEY_FILE: '/etc/tls/tls.key' };
    expect(loadConfig(files, [])).toMatchObject({ tlsCertFile: '/etc/tls/tls.crt', tlsKeyFile: '/etc/tls/tls.key' });
    expect(tlsFilesOf(loadConfig(files, []))).toEqual({ certFile: '/etc/tls/tls.crt', keyFile: '/etc/tls/tls.key', certSetting: 'SERVICE_TLS_CERT_FILE', keySetting: 'SERVICE_TLS_KEY_FILE' });
    expect(tlsFilesOf(loadConfig({}, []))).toBeUndefined();
    expect(loadConfig({}, ['--service-tls-cert-file=/a.crt', '--service-tls-key-file', '/a.key'])).toMatchObject({ tlsCertFile: '/a.crt', tlsKeyFile: '/a.key' });
    expect(() => loadConfig({ SERVICE_TLS_CERT_FILE: '/etc/tls/tls.crt' }, [])).toThrow(/^SERVICE_TLS_KEY_FILE: is required when SERVICE_TLS_CERT_FILE is set/);
    expect(() => loadConfig({}, ['--service-tls-key-file=/a.key'])).toThrow(/^SERVICE_TLS_CERT_FILE: is required when SERVICE_TLS_KEY_FILE is set/);
    expect(() => loadConfig({ SERVICE_TLS_CERT_FILE: ' ', SERVICE_TLS_KEY_FILE: '/a.key' }, [])).toThrow(/^SERVICE_TLS_CERT_FILE: must not be empty/);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', SERVICE_PORT: '' }, []).port).toBe(8080);
  });

  it('rejects bad values, naming the variable', () => {
    const bad: Array<[Record<string, string>, string[], string]> = [
      [{ SERVICE_RESOURCE_SCOPE_GATE: 'sometimes' }, [], 'SERVICE_RESOURCE_SCOPE_GATE'],
      [{}, ['--service-resource-scope-gate', 'maybe'], 'SERVICE_RESOURCE_SCOPE_GATE'],
      [{ SERVICE_PORT: 'eighty' }, [], 'SERVICE_PORT'],
      [{ SERVICE_PORT: '70000' }, [], 'SERVICE_PORT'],
      [{ SERVICE_WATCH_HEARTBEAT_MS: '0' }, [], 'SERVICE_WATCH_HEARTBEAT_MS'],
      [{ SERVICE_MIN_REVISION_WAIT_MS: '-1' }, [], 'SERVICE_MIN_REVISION_WAIT_MS'],
      [{ SERVICE_WATCH_SNAPSHOT_CACHE_BYTES: '-1' }, [], 'SERVICE_WATCH_SNAPSHOT_CACHE_BYTES'],
      [{ SERVICE_WATCH_SNAPSHOT_CACHE_BYTES: '1.5' }, [], 'SERVICE_WATCH_SNAPSHOT_CACHE_BYTES'],
      [{ DATABASE_URL: 'mysql://x' }, [], 'DATABASE_URL'],
      [{ SERVICE_LOG_LEVEL: 'loud' }, [], 'SERVICE_LOG_LEVEL'],
      [{ SERVICE_BOOTSTRAP_API_KEY: 'has space' }, [], 'SERVICE_BOOTSTRAP_API_KEY'],
      [{}, ['--service-port'], 'SERVICE_PORT'],
    ];
    for (const [env, argv, variable] of bad) {
      let err: unknown;
      try {
        loadConfig(env, argv);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify([env, argv])).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(variable);
      expect((err as Error).message).toContain(variable);
    }
    expect(() => loadConfig({}, ['--no-such-flag=1'])).toThrow(/unknown flag --no-such-flag/);
    expect(() => loadConfig({}, ['stray'])).toThrow(ConfigError);
  });
});

describe('redactConfig', () => {
  it('redacts the bootstrap key and the database password', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://authz:s3cret@db:5432/authz', SERVICE_BOOTSTRAP_API_KEY: 'sk_topsecret' }, []);
    const r = redactConfig(c);
    expect(JSON.stringify(r)).not.toContain('s3cret');
    expect(JSON.stringify(r)).not.toContain('sk_topsecret');
    expect(r.bootstrapApiKey).toBe('[redacted]');
    expect(r.databaseUrl).toContain('authz:');
    expect(r.databaseUrl).toContain('@db:5432/authz');
    expect(r.port).toBe(8080);
  });
});
