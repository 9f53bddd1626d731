/**
 * docs/configuration.md against the settings the processes read: every variable of the control
 * plane's, the sidecar's, the injector's and the command line's settings tables is in its
 * section with the loader's default, and every variable the page lists there is read; every `OTEL_*` variable tracing.ts
 * reads is in the tracing section, and every one listed there is read by tracing.ts or by the
 * OpenTelemetry packages it configures.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../../services/control-plane/config.js';
import { INJECTOR_VARIABLES } from '../../services/injector/config.js';
import { SIDECAR_VARIABLES } from '../../sidecar/config.js';
import { CLI_VARIABLES } from '../../cli/settings.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGE = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');

interface Row {
  variables: string[];
  defaultCell: string;
}

/** The table rows of the `## <heading>` section: the variables named in each row's first cell, and its last cell. */
function rowsOf(heading: string): Row[] {
  const start = PAGE.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`docs/configuration.md has no section "## ${heading}"`);
  const end = PAGE.indexOf('\n## ', start + 1);
  const rows: Row[] = [];
  for (const line of PAGE.slice(start, end === -1 ? undefined : end).split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line.split(' | ');
    rows.push({ variables: [...cells[0].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]), defaultCell: cells.at(-1)!.replace(/ \|$/, '') });
  }
  return rows;
}

/** How a loader's default reads in the page's default column. */
function documentedDefault(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'object' && value !== null && 'kind' in value) return `\`${String((value as { kind: unknown }).kind)}\``;
  return `\`${String(value)}\``;
}

const LOADERS = [
  ['Control plane', 'services/control-plane/config.ts', CONFIG_VARIABLES],
  ['Sidecar', 'sidecar/config.ts', SIDECAR_VARIABLES],
  ['Injector', 'services/injector/config.ts', INJECTOR_VARIABLES],
  ['Command line', 'cli/settings.ts', CLI_VARIABLES],
] as const;

describe('docs/configuration.md', () => {
  it.each(LOADERS)('lists exactly the settings of the %s (%s), one row each, with their defaults', (heading, _file, settings) => {
    const rows = rowsOf(heading);
    const documented = rows.flatMap((r) => r.variables);
    expect([...documented].sort()).toEqual(settings.map((s) => s.variable).sort());
    for (const s of settings) {
      const row = rows.find((r) => r.variables.includes(s.variable))!;
      const expected = documentedDefault(s.default);
      if (expected === undefined) expect([s.variable, /^(required|unset)/.test(row.defaultCell)]).toEqual([s.variable, true]);
      else expect([s.variable, row.defaultCell.startsWith(expected)]).toEqual([s.variable, true]);
    }
  });

  it('lists in CLI_VARIABLES exactly the AUTHZ_ variables the command line reads', () => {
    const sources = readdirSync(join(ROOT, 'cli'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f !== 'settings.ts')
      .map((f) => readFileSync(join(ROOT, 'cli', f), 'utf8'))
      .join('\n');
    const read = new Set([...sources.matchAll(/\benv\.(AUTHZ_[A-Z_]+)/g)].map((m) => m[1]));
    expect([...read].sort()).toEqual(CLI_VARIABLES.map((v) => v.variable).sort());
  });

  it('names each setting once', () => {
    const all = LOADERS.flatMap(([heading]) => rowsOf(heading).flatMap((r) => r.variables));
    expect(all.filter((v, i) => all.indexOf(v) !== i)).toEqual([]);
  });

  it('lists every OTEL_ variable tracing reads, and only variables tracing or the OpenTelemetry SDK reads', () => {
    const tracing = readFileSync(join(ROOT, 'services/transport/tracing.ts'), 'utf8');
    const readByTracing = new Set([...tracing.matchAll(/\benv\.(OTEL_[A-Z_]+)|'(OTEL_[A-Z_]+)'/g)].map((m) => m[1] ?? m[2]));
    const documented = rowsOf('Tracing (OpenTelemetry)').flatMap((r) => r.variables);
    expect([...readByTracing].filter((v) => !documented.includes(v))).toEqual([]);

    const sdk = sdkSources();
    // The exporters read a signal's own variables by a template: `OTEL_EXPORTER_OTLP_${signal}_HEADERS`.
    const readBySdk = (v: string) =>
      sdk.includes(v) || new RegExp(`OTEL_EXPORTER_OTLP_\\$\\{\\w+\\}_${v.replace(/^OTEL_EXPORTER_OTLP_TRACES_/, '')}\\b`).test(sdk);
    expect(documented.filter((v) => !readByTracing.has(v) && !readBySdk(v))).toEqual([]);
  });
});

/** The compiled sources of the OpenTelemetry packages tracing.ts builds its pipeline from. */
function sdkSources(): string {
  const packages = ['core', 'sdk-trace-base', 'resources', 'otlp-exporter-base', 'exporter-trace-otlp-http', 'exporter-trace-otlp-proto'];
  let text = '';
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.js')) text += readFileSync(path, 'utf8');
    }
  };
  for (const p of packages) walk(join(ROOT, 'node_modules/@opentelemetry', p, 'build/src'));
  return text;
}
