import { describe, expect, it } from 'vitest';
import { ConfigError } from '../services/common/settings.js';
import { loadSidecarConfig, redactSidecarConfig, SIDECAR_VARIABLES } from './config.js';

const REQUIRED = { SIDECAR_CONTROL_PLANE_URL: 'http://authz-control-plane.authz:8080/', SIDECAR_API_KEY: 'azk_service_secret_0123456789', SIDECAR_TENANT_ID: 'tenant_acme' };

describe('loadSidecarConfig', () => {
  it('applies the defaults of contract §2 around the three required settings', () => {
    const c = loadSidecarConfig(REQUIRED, []);
    expect(c).toMatchObject({
      controlPlaneUrl: 'http://authz-control-plane.authz:8080',
      apiKey: REQUIRED.SIDECAR_API_KEY,
      tenantId: 'tenant_acme',
      host: '127.0.0.1',
      port: 8181,
      maxStalenessMs: 30_000,
      minRevisionWaitMs: 1000,
      watchCompression: 'none',
      watchThread: 'off',
      logLevel: 'info',
      probeHost: '0.0.0.0',
      probePort: 0,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads SIDECAR_PROBE_PORT and SIDECAR_PROBE_HOST or their flags', () => {
    expect(loadSidecarConfig({ ...REQUIRED, SIDECAR_PROBE_PORT: '8182' }, [])).toMatchObject({ port: 8181, probePort: 8182, probeHost: '0.0.0.0' });
    expect(loadSidecarConfig(REQUIRED, ['--sidecar-probe-port=9000', '--sidecar-probe-host', '::'])).toMatchObject({ probePort: 9000, probeHost: '::' });
    // both 0 (free ports, tests): nothing to collide
    expect(loadSidecarConfig({ ...REQUIRED, SIDECAR_PORT: '0', SIDECAR_PROBE_PORT: '0' }, [])).toMatchObject({ port: 0, probePort: 0 });
    // the probe listener on, the decision listener on a free port
    expect(loadSidecarConfig({ ...REQUIRED, SIDECAR_PORT: '0', SIDECAR_PROBE_PORT: '8182' }, [])).toMatchObject({ port: 0, probePort: 8182 });
  });

  it('refuses a probe port equal to the decision port, naming SIDECAR_PROBE_PORT', () => {
    for (const [env, argv] of [
      [{ ...REQUIRED, SIDECAR_PROBE_PORT: '8181' }, []],
      [{ ...REQUIRED, SIDECAR_PORT: '9000', SIDECAR_PROBE_PORT: '9000' }, []],
      [{ ...REQUIRED, SIDECAR_PROBE_PORT: '9000' }, ['--sidecar-port=9000']],
    ] as [Record<string, string>, string[]][]) {
      let err: unknown;
      try {
        loadSidecarConfig(env, argv);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify([env, argv])).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe('SIDECAR_PROBE_PORT');
      expect((err as ConfigError).message).toMatch(/^SIDECAR_PROBE_PORT: must differ from SIDECAR_PORT \(both \d+\)/);
    }
  });

  it('reads SIDECAR_ALLOWED_HOSTS or its flag, each host in canonical form; unset: none', () => {
    expect(loadSidecarConfig(REQUIRED, []).allowedHosts).toBeUndefined();
    expect(loadSidecarConfig({ ...REQUIRED, SIDECAR_ALLOWED_HOSTS: ' Authz-Sidecar , 10.0.0.7,::1,[FD00:0::7],sidecar.internal.' }, []).allowedHosts)
      .toEqual(['authz-sidecar', '10.0.0.7', '[::1]', '[fd00::7]', 'sidecar.internal']);
    expect(loadSidecarConfig(REQUIRED, ['--sidecar-allowed-hosts', 'app']).allowedHosts).toEqual(['app']);
  });

  it('refuses an entry of SIDECAR_ALLOWED_HOSTS that is not a host name or address, naming the variable and the entry', () => {
    for (const bad of ['http://app', 'app:8181', '[::1]:8181', 'app/x', 'user@app', '*', '*.example.com', 'a..b', ',', '1.2.3.4.5']) {
      let err: unknown;
      try {
        loadSidecarConfig({ ...REQUIRED, SIDECAR_ALLOWED_HOSTS: bad }, []);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable, bad).toBe('SIDECAR_ALLOWED_HOSTS');
      if (bad !== ',') expect((err as ConfigError).message, bad).toContain(`${JSON.stringify(bad)} is not a host name or address`);
    }
  });

  it('reads flag twins of every variable, and a flag wins over the environment', () => {
    for (const v of SIDECAR_VARIABLES) expect(v.flag).toBe('--' + v.variable.toLowerCase().replace(/_/g, '-'));
    const c = loadSidecarConfig({ ...REQUIRED, SIDECAR_PORT: '9000' }, [
      '--sidecar-port', '9191', '--sidecar-max-staleness-ms=5000', '--sidecar-min-revision-wait-ms', '0', '--sidecar-watch-compression=gzip', '--sidecar-tenant-id=tenant_other',
      '--sidecar-watch-thread=auto',
    ]);
    expect([c.port, c.maxStalenessMs, c.minRevisionWaitMs, c.watchCompression, c.tenantId, c.watchThread]).toEqual([9191, 5000, 0, 'gzip', 'tenant_other', 'auto']);
  });

  it('refuses a missing or bad value, naming its variable', () => {
    const cases: [Record<string, string>, string[], string][] = [
      [{ ...REQUIRED, SIDECAR_CONTROL_PLANE_URL: '' }, [], 'SIDECAR_CONTROL_PLANE_URL'],
      [{ SIDECAR_API_KEY: 'k', SIDECAR_TENANT_ID: 'tenant_a' }, [], 'SIDECAR_CONTROL_PLANE_URL'],
      [{ ...REQUIRED, SIDECAR_CONTROL_PLANE_URL: 'ftp://cp' }, [], 'SIDECAR_CONTROL_PLANE_URL'],
      [{ ...REQUIRED, SIDECAR_CONTROL_PLANE_URL: 'not a url' }, [], 'SIDECAR_CONTROL_PLANE_URL'],
      [{ SIDECAR_CONTROL_PLANE_URL: 'http://cp', SIDECAR_TENANT_ID: 'tenant_a' }, [], 'SIDECAR_API_KEY'],
      [{ ...REQUIRED, SIDECAR_TENANT_ID: 'acme' }, [], 'SIDECAR_TENANT_ID'],
      [{ ...REQUIRED, SIDECAR_PORT: '70000' }, [], 'SIDECAR_PORT'],
      [{ ...REQUIRED, SIDECAR_PORT: '80x' }, [], 'SIDECAR_PORT'],
      [{ ...REQUIRED, SIDECAR_MAX_STALENESS_MS: '0' }, [], 'SIDECAR_MAX_STALENESS_MS'],
      [{ ...REQUIRED, SIDECAR_MIN_REVISION_WAIT_MS: '-1' }, [], 'SIDECAR_MIN_REVISION_WAIT_MS'],
      [{ ...REQUIRED, SIDECAR_WATCH_COMPRESSION: 'brotli' }, [], 'SIDECAR_WATCH_COMPRESSION'],
      [{ ...REQUIRED, SIDECAR_WATCH_THREAD: 'yes' }, [], 'SIDECAR_WATCH_THREAD'],
      [{ ...REQUIRED, SIDECAR_LOG_LEVEL: 'loud' }, [], 'SIDECAR_LOG_LEVEL'],
      [{ ...REQUIRED, SIDECAR_PROBE_PORT: '65536' }, [], 'SIDECAR_PROBE_PORT'],
      [{ ...REQUIRED, SIDECAR_PROBE_PORT: 'metrics' }, [], 'SIDECAR_PROBE_PORT'],
      [{ ...REQUIRED, SIDECAR_PROBE_HOST: ' ' }, [], 'SIDECAR_PROBE_HOST'],
      [REQUIRED, ['--sidecar-probe-host='], 'SIDECAR_PROBE_HOST'],
      [REQUIRED, ['--sidecar-port'], 'SIDECAR_PORT'],
      [REQUIRED, ['--sidecar-port=abc'], 'SIDECAR_PORT'],
    ];
    for (const [env, argv, variable] of cases) {
      let err: unknown;
      try {
        loadSidecarConfig(env, argv);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify([env, argv])).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message, JSON.stringify([env, argv])).toContain(variable);
    }
    expect(() => loadSidecarConfig(REQUIRED, ['--service-port=1'])).toThrow(/unknown flag --service-port/);
  });

  it('reads SIDECAR_CONTROL_PLANE_CA_FILE or its flag, for an https:// control plane only', () => {
    expect(loadSidecarConfig(REQUIRED, []).controlPlaneCaFile).toBeUndefined();
    const https = { ...REQUIRED, SIDECAR_CONTROL_PLANE_URL: 'https://authz-control-plane.authz.svc:8080' };
    expect(loadSidecarConfig({ ...https, SIDECAR_CONTROL_PLANE_CA_FILE: '/etc/authz-sidecar/ca/ca.crt' }, []).controlPlaneCaFile).toBe('/etc/authz-sidecar/ca/ca.crt');
    expect(loadSidecarConfig(https, ['--sidecar-control-plane-ca-file=/ca.pem']).controlPlaneCaFile).toBe('/ca.pem');
    // a CA for a plain-text control plane: the URL is the likely mistake
    expect(() => loadSidecarConfig({ ...REQUIRED, SIDECAR_CONTROL_PLANE_CA_FILE: '/ca.pem' }, [])).toThrow(/^SIDECAR_CONTROL_PLANE_CA_FILE: is only for an https:\/\/ control plane, and SIDECAR_CONTROL_PLANE_URL is http:\/\//);
    expect(() => loadSidecarConfig({ ...https, SIDECAR_CONTROL_PLANE_CA_FILE: ' ' }, [])).toThrow(/^SIDECAR_CONTROL_PLANE_CA_FILE: must not be empty/);
  });

  it('never prints the API key', () => {
    const shown = JSON.stringify(redactSidecarConfig(loadSidecarConfig(REQUIRED, [])));
    expect(shown).not.toContain(REQUIRED.SIDECAR_API_KEY);
    expect(shown).toContain('tenant_acme');
  });

  it('reads SIDECAR_CORS_ORIGINS or its flag; unset: no CORS', () => {
    expect(loadSidecarConfig(REQUIRED, []).corsOrigins).toBeUndefined();
    expect(loadSidecarConfig({ ...REQUIRED, SIDECAR_CORS_ORIGINS: 'https://app.example.com,http://localhost:3000' }, []).corsOrigins)
      .toEqual(['https://app.example.com', 'http://localhost:3000']);
    expect(loadSidecarConfig(REQUIRED, ['--sidecar-cors-origins=https://a.example']).corsOrigins).toEqual(['https://a.example']);
  });

  it('refuses a value that is not a list of origins, naming the variable', () => {
    for (const bad of ['https://app.example.com/', '*', 'localhost:3000']) {
      const err = (() => {
        try {
          loadSidecarConfig({ ...REQUIRED, SIDECAR_CORS_ORIGINS: bad }, []);
        } catch (e) {
          return e;
        }
      })();
      expect(err, bad).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe('SIDECAR_CORS_ORIGINS');
    }
  });

  it('refuses wildcard origins in SIDECAR_CORS_ORIGINS (they would match nothing), saying to list each origin', () => {
    for (const bad of ['https://*.example.com', 'http://localhost:3000,https://*.example.com', '*', 'https://%2A.example.com']) {
      const entry = bad.split(',').pop()!;
      expect(() => loadSidecarConfig({ ...REQUIRED, SIDECAR_CORS_ORIGINS: bad }, []), bad).toThrow(
        `SIDECAR_CORS_ORIGINS: ${JSON.stringify(entry)} has a wildcard, and patterns are not supported: list each origin instead`,
      );
    }
  });
});
