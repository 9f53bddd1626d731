/**
 * The import rules of architecture.md, checked by test/architecture.test.ts: no cycles, and
 * arrows only one way (control plane → store → gen; control plane → engine → gen; sidecar →
 * engine → gen; CLI → client → gen; the sidecar never touches the store; the engine never
 * touches the network; the model file's module runs offline; the CLI reaches the service only
 * through the client).
 */
const part = (folder) => `^${folder.replace(/\//g, '\\/')}/`;
const ENGINE = part('services/engine');
const STORE = part('services/store');
const CONTROL_PLANE = part('services/control-plane');
const DECISION = part('services/decision');
const TRANSPORT = part('services/transport');
const COMMON = part('services/common');
const INJECTOR = part('services/injector');
const MODEL = part('services/model');
const SIDECAR = part('sidecar');
const CLIENT = part('client');
const CLI = part('cli');
const IMPORT_CLIENT = part('services/import');
const TESTS = '\\.test\\.ts$|^test/|/testdata/';

/** `from` (production code, not its tests) may import nothing internal but `allowed`. */
const onlyImports = (name, from, allowed, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from, pathNot: TESTS },
  to: { path: '^(services|sidecar|client|cli|gen|test|bench)/', pathNot: [from, ...allowed].join('|') },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A cycle means two modules are one: cut it (a leaf module for what both need, or an interface the lower one owns).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-tests-in-production',
      comment: 'Production code never imports test code, test helpers or benchmarks.',
      severity: 'error',
      from: { path: '^(services|sidecar|client|cli)/', pathNot: TESTS },
      to: { path: `${TESTS}|^bench/` },
    },
    onlyImports('engine-is-pure', ENGINE, [part('gen')], 'The engine sees only generated types: no I/O, no transport, no store.'),
    {
      name: 'reference-is-independent',
      comment: 'The differential tests\' reference evaluator shares nothing with the engine but its types (model.ts): a shared bug would agree with itself.',
      severity: 'error',
      from: { path: '^services/engine/testdata/reference' },
      to: { path: ENGINE, pathNot: '^services/engine/(model\\.ts|testdata/reference)' },
    },
    onlyImports('common-is-a-leaf', COMMON, [part('gen')], 'Shared helpers import nothing of the product.'),
    onlyImports('store-below-the-services', STORE, [COMMON, part('gen')], 'The store knows the database, common helpers and generated types only.'),
    onlyImports('transport-below-the-services', TRANSPORT, [COMMON, part('gen')], 'The transport serves any process: it knows no engine, store or handler.'),
    onlyImports('decision-service', DECISION, [ENGINE, TRANSPORT, COMMON, part('gen')], 'DecisionService over a DecisionSource, for both processes: no store.'),
    onlyImports('sidecar-never-touches-the-store', SIDECAR, [ENGINE, DECISION, TRANSPORT, COMMON, part('gen')], 'The sidecar follows the Watch stream; it never reads the database or imports the control plane.'),
    onlyImports('model-runs-offline', MODEL, [ENGINE, TRANSPORT, COMMON, part('gen')], 'The model file: format, checks, plan and export form, without a database or a server (the command line runs them offline).'),
    onlyImports('import-client', IMPORT_CLIENT, [part('gen')], 'The import client is what the CLI and applications import: Node\'s modules and generated types, nothing of the service.'),
    onlyImports('injector', INJECTOR, [TRANSPORT, COMMON, part('gen')], 'The webhook is its own process.'),
    {
      name: 'mains-on-top',
      comment: 'The processes\' main files (cmd/) compose the libraries below them; nothing imports a main.',
      severity: 'error',
      from: {},
      to: { path: '^cmd/' },
    },
    onlyImports('control-plane', CONTROL_PLANE, [STORE, MODEL, ENGINE, DECISION, TRANSPORT, COMMON, part('gen')], 'The control plane sits on top.'),
    onlyImports('client-stands-alone', CLIENT, [part('gen')], 'Applications import the client: it needs the generated code and Connect, nothing of the service.'),
    onlyImports('cli-through-the-client', CLI, [CLIENT, IMPORT_CLIENT, MODEL, ENGINE, TRANSPORT, COMMON, part('gen')], 'The command line reaches the service only through the client; offline work (the model file, decision tests) may use the model module and the engine.'),
    onlyImports('console-over-the-contract', part('console'), [part('gen'), '^services/model/parse\\.ts$'], 'The console calls the API through the generated code and reads model files with the server\'s own reader (lines and columns alike); nothing else of the product.'),
    {
      name: 'console-on-top',
      comment: 'The console is a browser application, built apart; nothing of the product imports it.',
      severity: 'error',
      from: { path: '^(services|sidecar|client|cli|cmd)/' },
      to: { path: '^console/' },
    },
    {
      name: 'cli-on-top',
      comment: 'The command line composes the client; nothing of the product imports it.',
      severity: 'error',
      from: { path: '^(services|sidecar|client|cmd)/', pathNot: TESTS },
      to: { path: '^cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
