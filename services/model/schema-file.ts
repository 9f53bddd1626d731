/**
 * The JSON Schema files of the model and decision-test formats (`npm run schema`), written from
 * format.ts and tests-format.ts: editors validate and complete both files against them, `authz
 * schema` prints them.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SCHEMA_FILE, tenantModelJsonSchema } from './format.js';
import { DECISION_TESTS_SCHEMA_FILE, decisionTestsJsonSchema } from './tests-format.js';

/** Each schema file's path in the repository and its text, as committed. */
export const SCHEMA_FILES: readonly { file: string; render: () => string }[] = [
  { file: SCHEMA_FILE, render: () => `${JSON.stringify(tenantModelJsonSchema(), null, 2)}\n` },
  { file: DECISION_TESTS_SCHEMA_FILE, render: () => `${JSON.stringify(decisionTestsJsonSchema(), null, 2)}\n` },
];

/** Where a schema file lives in a checkout. */
export const schemaPath = (file: string) => fileURLToPath(new URL(`../../${file}`, import.meta.url));

// `npm run schema`
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const s of SCHEMA_FILES) {
    writeFileSync(schemaPath(s.file), s.render());
    process.stdout.write(`wrote ${s.file}\n`);
  }
}
