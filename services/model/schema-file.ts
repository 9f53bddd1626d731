/**
 * The JSON Schema file of the model format (`npm run schema`), written from format.ts: editors
 * validate and complete model files against it, `authz schema` prints it.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SCHEMA_FILE, tenantModelJsonSchema } from './format.js';

/** Where the schema file lives in a checkout. */
export const SCHEMA_PATH = fileURLToPath(new URL(`../../${SCHEMA_FILE}`, import.meta.url));

/** The schema file's text, as committed. */
export function renderSchema(): string {
  return `${JSON.stringify(tenantModelJsonSchema(), null, 2)}\n`;
}

// `npm run schema`
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(SCHEMA_PATH, renderSchema());
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
