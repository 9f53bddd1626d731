/**
 * The import rules of the architecture (.dependency-cruiser.cjs): no cycles, arrows one way. The
 * rules run over the product's sources, and over a planted tree that breaks each kind of rule,
 * so that a rule that stopped matching anything would fail here too.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: unknown[]; options: Record<string, unknown> };

async function violations(cwd: string, paths: string[], tsConfig?: string): Promise<string[]> {
  const here = process.cwd();
  process.chdir(cwd);
  try {
    const { output } = await cruise(paths, {
      ...config.options,
      ...(tsConfig ? { tsConfig: { fileName: tsConfig } } : { tsConfig: undefined }),
      validate: true,
      ruleSet: { forbidden: config.forbidden } as never,
    });
    return (output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  } finally {
    process.chdir(here);
  }
}

describe('the architecture\'s import rules', () => {
  it('hold for the product\'s sources', async () => {
    expect(await violations(ROOT, ['cmd', 'services', 'sidecar', 'client', 'cli'], 'tsconfig.json')).toEqual([]);
  }, 120_000);

  it('hold for the console\'s sources', async () => {
    expect(await violations(ROOT, ['console/src'], 'console/tsconfig.json')).toEqual([]);
  }, 120_000);

  describe('catch what breaks them', () => {
    const planted = mkdtempSync(join(tmpdir(), 'authz-architecture-'));
    afterAll(() => rmSync(planted, { recursive: true, force: true }));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(planted, path)), { recursive: true });
      writeFileSync(join(planted, path), text);
    };
    write('services/transport/a.ts', "import { b } from './b.js';\nexport const a = () => b;\n");
    write('services/transport/b.ts', "import { a } from './a.js';\nexport const b = () => a;\n");
    write('services/engine/pure.ts', "import { db } from '../store/db.js';\nexport const pure = db;\n");
    write('services/store/db.ts', 'export const db = 1;\n');
    write('services/model/plan.ts', "import { db } from '../store/db.js';\nexport const plan = db;\n");
    write('sidecar/follower.ts', "import { db } from '../services/store/db.js';\nimport { cp } from '../services/control-plane/app.js';\nexport const f = [db, cp];\n");
    write('services/control-plane/app.ts', "import { helper } from '../../test/helper.js';\nexport const cp = helper;\n");
    write('test/helper.ts', 'export const helper = 1;\n');
    write('cmd/sidecar/main.ts', "import { f } from '../../sidecar/follower.js';\nexport const main = f;\n");
    write('services/transport/server.ts', "import { main } from '../../cmd/sidecar/main.js';\nexport const server = main;\n");
    write('client/lookup.ts', "import { db } from '../services/store/db.js';\nexport const lookup = db;\n");
    write('cli/program.ts', "import { lookup } from '../client/lookup.js';\nimport { db } from '../services/store/db.js';\nexport const program = [lookup, db];\n");
    write('services/decision/connect.ts', "import { program } from '../../cli/program.js';\nexport const connect = program;\n");

    write('services/import/client.ts', "import { db } from '../store/db.js';\nexport const client = db;\n");
    write('services/engine/match.ts', 'export const match = 1;\n');
    write('services/engine/model.ts', 'export type Row = { id: string };\n');
    write('services/engine/testdata/reference.ts', "import type { Row } from '../model.js';\nimport { match } from '../match.js';\nexport const ref = (r: Row) => [r, match];\n");

    it('a cycle, the engine, the model module, the sidecar, the client, the import client or the CLI reaching the store, production code importing tests, a library importing a main or the CLI, the reference evaluator importing the engine', async () => {
      const found = await violations(planted, ['cmd', 'services', 'sidecar', 'client', 'cli']);
      expect(found).toEqual(expect.arrayContaining([
        expect.stringMatching(/^no-circular: services\/transport\/(a|b)\.ts/),
        'engine-is-pure: services/engine/pure.ts → services/store/db.ts',
        'model-runs-offline: services/model/plan.ts → services/store/db.ts',
        'sidecar-never-touches-the-store: sidecar/follower.ts → services/store/db.ts',
        'sidecar-never-touches-the-store: sidecar/follower.ts → services/control-plane/app.ts',
        'no-tests-in-production: services/control-plane/app.ts → test/helper.ts',
        'mains-on-top: services/transport/server.ts → cmd/sidecar/main.ts',
        'client-stands-alone: client/lookup.ts → services/store/db.ts',
        'cli-through-the-client: cli/program.ts → services/store/db.ts',
        'cli-on-top: services/decision/connect.ts → cli/program.ts',
        'import-client: services/import/client.ts → services/store/db.ts',
        'reference-is-independent: services/engine/testdata/reference.ts → services/engine/match.ts',
      ]));
      // The CLI importing the client is the arrow the rules allow.
      expect(found.filter((v) => v.includes('cli/program.ts → client/'))).toEqual([]);
      // The reference evaluator's one import from the engine: its types.
      expect(found).not.toContain('reference-is-independent: services/engine/testdata/reference.ts → services/engine/model.ts');
    }, 60_000);
  });
});
