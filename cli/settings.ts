/**
 * The variables the command line reads, each with its flag twin. A flag wins over its variable,
 * the variable over the login file (`authz login`), the login file over the default.
 * docs/configuration.md lists them (test/docs/configuration.test.ts checks it).
 */

export interface CliVariable {
  variable: string;
  flag: string;
  default?: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export const CLI_VARIABLES: readonly CliVariable[] = [
  { variable: 'AUTHZ_URL', flag: '--url', default: DEFAULT_URL },
  { variable: 'AUTHZ_API_KEY', flag: '--api-key' },
  { variable: 'AUTHZ_TENANT', flag: '--tenant' },
  { variable: 'AUTHZ_CA_FILE', flag: '--ca-file' },
  { variable: 'AUTHZ_CONFIG', flag: '--config' },
];
