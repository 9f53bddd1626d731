/**
 * Reading a decision-test file (tests-format.ts) and the model it names, each error with its
 * file, line and path. The model is checked as `authz validate` checks it: at its own file when
 * the tests name a path, inside the test file when it is inline.
 */
import { dirname, resolve } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { MAX_BODY_BYTES } from '../transport/request-limits.js';
import { formatPath, parseModelText, type ModelError, type ParsedModel } from './parse.js';
import { DecisionTestsSchema, type DecisionTests } from './tests-format.js';
import { checkModelText, checkParsedModel, errorCollector, reportSchemaErrors, type CheckedModel } from './validate.js';

let compiled: ValidateFunction | undefined;

/**
 * The file's schema with `model` only typed (string or object): an inline model is checked by
 * the model's own checks, which place each error better than a schema union would. A lookup case
 * is one object with `resources` and `subjects` both optional, and `exactly one` is checked
 * after (lookupKindErrors): one error at the case instead of one per branch of the union.
 */
function validator(): ValidateFunction {
  if (!compiled) {
    const schema = JSON.parse(JSON.stringify(DecisionTestsSchema)) as { properties: Record<string, unknown> };
    schema.properties.model = { anyOf: [{ type: 'string', minLength: 1 }, { type: 'object' }], description: 'The model under test.' };
    const lookups = schema.properties.lookups as { items: { anyOf: { properties: Record<string, unknown>; description: string }[] } };
    const [resources, subjects] = lookups.items.anyOf;
    lookups.items = { ...resources, properties: { ...resources.properties, ...subjects.properties }, required: ['expect'] } as never;
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    compiled = ajv.compile(schema);
  }
  return compiled;
}

export interface CheckedDecisionTests {
  parsed: ParsedModel;
  tests?: DecisionTests;
  /** The model under test, checked (undefined when the test file itself has errors). */
  model?: CheckedModel;
  /** The model's text as a server takes it (the file, or the inline model as JSON), and its file name. */
  modelText?: string;
  modelFile?: string;
  errors: ModelError[];
}

/** Reads `file`'s model, relative to the test file; a file that cannot be read is an error at `model`. */
export type ReadFile = (path: string) => string;

/** Reads and checks a decision-test file and its model. */
export function checkDecisionTestsText(text: string, file: string, readFile: ReadFile): CheckedDecisionTests {
  const tooBig = (f: string, bytes: number): ModelError => ({ file: f, line: 1, column: 1, path: '', message: `the document is ${bytes} bytes; at most ${MAX_BODY_BYTES} are read` });
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) {
    return { parsed: { file, value: undefined, errors: [], locate: () => ({ line: 1, column: 1 }) }, errors: [tooBig(file, Buffer.byteLength(text))] };
  }
  const parsed = parseModelText(text, file);
  const collected = errorCollector(parsed);
  const report = collected.report;
  if (collected.count > 0) return { parsed, errors: collected.all() };
  const validate = validator();
  const lookups = (parsed.value as { lookups?: unknown } | null)?.lookups;
  if (Array.isArray(lookups)) {
    lookups.forEach((c: unknown, i) => {
      if (typeof c === 'object' && c !== null && ('resources' in c) === ('subjects' in c)) {
        report(['lookups', i], 'give exactly one of resources (a LookupResources case) and subjects (a LookupSubjects case)');
      }
    });
  }
  if (!validate(parsed.value) || collected.count > 0) {
    reportSchemaErrors(validate.errors ?? [], report, 'a decision-test file');
    return { parsed, errors: collected.all() };
  }
  const tests = parsed.value as DecisionTests;
  let model: CheckedModel;
  let modelText: string;
  let modelFile: string;
  if (typeof tests.model === 'string') {
    modelFile = resolve(dirname(file), tests.model);
    try {
      modelText = readFile(modelFile);
    } catch (err) {
      report(['model'], `cannot read the model file ${modelFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      return { parsed, tests, errors: collected.all() };
    }
    model = checkModelText(modelText, modelFile);
  } else {
    // The inline model, checked in place: its errors point into the test file.
    modelFile = file;
    modelText = JSON.stringify(tests.model);
    const inline: ParsedModel = { file, value: tests.model, errors: [], locate: (path, key) => parsed.locate(['model', ...path], key) };
    model = checkParsedModel(inline);
    for (const e of model.errors) e.path = formatPath(['model']) + (e.path === '' ? '' : e.path.startsWith('[') ? e.path : `.${e.path}`);
  }
  return { parsed, tests, model, modelText, modelFile, errors: model.errors };
}
