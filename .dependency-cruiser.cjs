// Cairn's import rules, checked by dependency-cruiser (test/unit/import-rules.test.ts runs them
// in `npm test`; `npm run lint:imports` prints the same report). docs/architecture.md, "Import
// rules", says what each rule is for. Paths are relative to the repository root; test/ and bench/
// are not cruised, so they may import anything.
//
// TypeScript 7 has no JavaScript compiler API, and dependency-cruiser's TypeScript parser needs
// one: without the `parser: 'swc'` below, .ts files would be read as JavaScript, found to have no
// imports, and every rule would pass. The planted-violation test guards against that.

/** The pure cores: no sockets, disks, clocks, processes or crypto; a shell does their I/O. */
const CORE = [
  '^shared/raft/(?!(sqlite-storage|wire)[.]ts$)',
  '^shared/gossip/(?!(udp-node|wire)[.]ts$)',
  '^shared/(random|resources|agent-messages|mesos-v1|errors|prometheus|docker-auth|host-paths)[.]ts$',
  // Packing tasks into an offer: arithmetic on Resources only; the restart back-off's arithmetic;
  // an offer as the frameworks hold it.
  '^shared/sdk/(offer-fit|restart-backoff|held-offer)[.]ts$',
  // The one placement pipeline: feasibility checks, ranking and selection over Resources.
  '^shared/placement/',
  '^master/registry/(state-machine|commands)[.]ts$',
  '^master/allocator/',
  '^master/offers[.]ts$',
  // The leader's counters, and the validation of scheduler calls (the shapes the core takes).
  '^master/(metrics|scheduler-calls)[.]ts$',
  '^master/leader/',
  // The built-in frameworks' decisions, and the agent's health-check verdicts.
  '^master/frameworks/jobs/(engine|policies|record|kind-env)[.]ts$',
  '^master/frameworks/services/(core|app-model)[.]ts$',
  // The tuning core, its search algorithms, spaces and early-stopping rules, the paper's strategy.
  '^master/frameworks/tuning/(core|record|metrics-parse|dynamic-priority|trial-command|views|algorithm-catalog)[.]ts$',
  '^master/frameworks/tuning/(algorithms|space|early-stopping|math)/',
  // The built-in frameworks' specs, their validation and what their endpoints answer, which the
  // command line checks and reads with the same code; sizes, quantities and secret names in them.
  '^shared/(jobs|tuning)/',
  '^shared/(quantity|sizes|secret-names)[.]ts$',
  // What a framework stores and the quota keys it is charged under (the frameworks' contract),
  // and the bounds on every string a client sends.
  '^shared/framework-host/(store|quotas)[.]ts$',
  '^shared/field-limits[.]ts$',
  '^agent/health/health-state[.]ts$',
  // Sharing: priority classes, quotas, the victim selector and the usage view.
  '^master/sharing/',
  // Sharing's shapes both the master and the command line use: role names, priority classes,
  // object limits and the sharing endpoints' answers.
  '^shared/sharing/',
];


/** Node built-ins that reach the world outside the process (with or without `node:`). */
const IO_BUILTINS = [
  'fs', 'net', 'dgram', 'http', 'https', 'child_process', 'worker_threads', 'crypto', 'dns',
  'tls', 'timers',
];

/** npm packages that do I/O (their @types too: a type-only import still ties a core to one). */
const IO_PACKAGES = [
  'ws', 'better-sqlite3', 'protobufjs', 'fastify', 'pino', 'dockerode', 'execa',
  'systeminformation', 'dns-packet',
];

const ioBuiltin = `^(node:)?(${IO_BUILTINS.join('|')})(/|$)`;
const ioPackage = `(^|node_modules/)(@types/)?(${IO_PACKAGES.join('|')})(/|$)`;

/** Every rule is an error: any violation fails `npm test`. */
function rule(name, comment, from, to) {
  return { name, comment, severity: 'error', from, to };
}

/**
 * The master's layers, lowest first: a folder (or a file directly in master/) imports only
 * its own layer and those below it, never one above. Derived from the imports as they are:
 * pure leaves and the store at the bottom, then policy, names and authentication, the leader's
 * core, its shell, the frameworks and their host, and the HTTP endpoints on top, under the
 * daemon that wires them. A new folder gets a place here (an unplaced one is in no rule).
 */
const MASTER_LAYERS = [
  // The registry's commands, state machine and store; the allocator; outstanding offers; counters;
  // the built-in frameworks' principal name; the scheduler calls' shapes and their validation
  // (the leader core takes them, auth and secrets check them, the API parses them).
  { name: 'base', units: ['registry', 'allocator', 'offers.ts', 'metrics.ts', 'data-dir-modes.ts', 'builtin-principal.ts', 'scheduler-calls.ts'] },
  // Quotas, priority classes and victims; the registry's log replicated by Raft.
  { name: 'policy', units: ['sharing', 'replication'] },
  { name: 'dns', units: ['dns'] },
  { name: 'auth', units: ['auth'] },
  { name: 'leader', units: ['leader'] },
  // The leader's shell (master.ts), the agents' endpoint and links and the frameworks' event
  // streams it drives, and what every endpoint is handed (context.ts).
  { name: 'shell', units: ['agents', 'master.ts', 'event-stream.ts', 'context.ts'] },
  // Stored secrets and who may use them: the host hands that rule to the frameworks' routes.
  { name: 'secrets', units: ['secrets'] },
  { name: 'frameworks', units: ['frameworks'] },
  // The host that runs the frameworks on the leader.
  { name: 'framework-host', units: ['framework-host'] },
  { name: 'api', units: ['api'] },
  { name: 'ui', units: ['ui'] },
  // The daemon: its gossip member, the server that wires every part, the entry the CLI starts.
  { name: 'daemon', units: ['membership.ts', 'server.ts', 'entry.ts'] },
];

/** A unit of MASTER_LAYERS as a path pattern: a folder and all below it, or one file. */
function masterUnit(unit) {
  return unit.endsWith('.ts') ? `^master/${unit.replace(/[.]/g, '[.]')}$` : `^master/${unit}/`;
}

/** One rule per layer but the top: nothing in it imports a layer above it. */
function masterLayerRules() {
  return MASTER_LAYERS.slice(0, -1).map((layer, i) => rule(
    `master-layer-${layer.name}`,
    `master/ is layered (MASTER_LAYERS): ${layer.units.join(', ')} import nothing of a layer ` +
      'above theirs, so each layer can be read, tested and changed with only those below it ' +
      'in mind.',
    { path: layer.units.map(masterUnit) },
    { path: MASTER_LAYERS.slice(i + 1).flatMap((l) => l.units).map(masterUnit) },
  ));
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    rule(
      'shared-imports-no-daemon',
      'shared/ is what the master, the agent, the CLI and the SDK have in common; if it ' +
        'imported master/, agent/ or bin/ it would drag a daemon into every one of them.',
      { path: '^shared/' },
      { path: '^(master|agent|bin)/' },
    ),
    rule(
      'agent-and-master-apart',
      'The agent and the master are separate daemons that talk only through the frames in ' +
        'shared/; anything both need belongs in shared/.',
      { path: '^(agent|master)/' },
      // $1 is the folder the import is made from: the other one is forbidden.
      { path: '^(agent|master)/', pathNot: '^$1/' },
    ),
    rule(
      'cli-imports-only-daemon-entries',
      'The command line reaches the cluster through its APIs and starts a daemon through its ' +
        'entry (master/entry.ts, agent/entry.ts: startMaster, startAgent and what they are ' +
        "started with); what else it shares with them (specs and their validation, the answers' " +
        "shapes, the daemons' defaults) lives in shared/. Anything else of master/ or agent/ is " +
        "that daemon's own, free to change without the command line.",
      { path: '^bin/' },
      { path: '^(master|agent)/', pathNot: '^(master|agent)/entry[.]ts$' },
    ),
    rule(
      'sqlite-through-the-adapter',
      'Only shared/sqlite/ names a SQLite engine: it picks node:sqlite or better-sqlite3 for the ' +
        'running Node and makes both behave alike. A file importing one directly would run on ' +
        'one engine only, and better-sqlite3 is absent where it could not be built and aborts ' +
        'Node 24 processes now and then (WiseLibs/better-sqlite3#1515).',
      { pathNot: '^shared/sqlite/' },
      { path: ['(^|node_modules/)(@types/)?better-sqlite3(/|$)', '^(node:)?sqlite$'] },
    ),
    rule(
      'no-cycles',
      'A cycle makes its modules one unit: none can be read, tested or loaded without the ' +
        'others, and ES module cycles see half-initialised bindings at start.',
      {},
      { circular: true },
    ),
    rule(
      'core-imports-no-io',
      'A pure core takes commands, ticks and a seeded random source and returns data; the ' +
        'shell does the I/O. That is what lets a simulation replay a seed exactly and a unit ' +
        'test run without sockets, disks or timers. Type-only imports count too: a core that ' +
        "names pino's Logger is coupled to the logger.",
      { path: CORE },
      { path: [ioBuiltin, ioPackage] },
    ),
    rule(
      'core-imports-only-cores',
      'A core may import only other cores: any other file of the repository may do I/O now ' +
        'or later, and a core importing it would stop being pure without anyone noticing.',
      { path: CORE },
      { dependencyTypes: ['local'], pathNot: CORE },
    ),
    rule(
      'frameworks-import-only-shared',
      "A built-in framework imports shared/ and its own folder only: it sees the cluster " +
        'through the contract the host hands it (shared/framework-host/contract.ts), and another ' +
        "framework through the API that one exports (tuning submits jobs through shared/jobs/api.ts).",
      { path: '^master/frameworks/([^/]+)/' },
      { path: '^(master|agent|bin)/', pathNot: '^master/frameworks/$1/' },
    ),
    rule(
      'frameworks-run-on-the-runtime',
      'A built-in framework reaches the scheduler API through the framework runtime ' +
        '(shared/framework-runtime/: its offer loop, its one offer-interest switch, write-then-act), ' +
        "never through the SDK's client itself, so that a test or the simulator can drive it over another transport.",
      { path: '^master/frameworks/' },
      { path: '^shared/sdk/scheduler-client[.]ts$' },
    ),
    rule(
      'framework-runtime-io-through-transport',
      'The framework runtime does its I/O through its transport interface (transport.ts); only the ' +
        'production transport (http-transport.ts) and the default wiring (io.ts) know HTTP. It knows ' +
        'no framework: nothing of shared/jobs/, shared/tuning/ or shared/sharing/.',
      { path: '^shared/framework-runtime/(?!(http-transport|io)[.]ts$)' },
      { path: ['^shared/sdk/scheduler-client[.]ts$', '^shared/(jobs|tuning|sharing)/', '^(node:)?(http|https|net|dgram)$'] },
    ),
    rule(
      'frameworks-import-no-allocator',
      'Frameworks (the event stream and the built-in ones) see offers, as any framework ' +
        "would; the allocator's internals are the master's business, reached through offers.",
      { path: '^master/frameworks/' },
      { path: '^master/allocator/' },
    ),
    rule(
      'no-unresolvable',
      'An import the cruiser cannot resolve is one it cannot check; it is also one Node ' +
        'will fail to load.',
      {},
      { couldNotResolve: true },
    ),
    ...masterLayerRules(),
    {
      ...rule(
        'no-master-folder-cycles',
        'Folders of master/ import each other one way: two folders that import each other, ' +
          'directly or round a loop, are one unit in two places, and no layering can hold ' +
          'them. Checked between folders, nested ones too, where no module cycle need exist.',
        { path: '^master/' },
        { path: '^master/', circular: true },
      ),
      // Between folders: needs `metrics` below (dependency-cruiser derives folders with them).
      scope: 'folder',
    },
  ],
  options: {
    // See the header: TypeScript 7 cannot parse for dependency-cruiser, @swc/core can.
    parser: 'swc',
    // Keep type-only imports (only the tsc parser would drop them; say so anyway).
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // Folders and their dependencies, for the rule on cycles between master/'s folders.
    metrics: true,
    enhancedResolveOptions: {
      // Resolve packages as Node does (dependency-cruiser ignores `exports` unless told).
      exportsFields: ['exports'],
      extensions: ['.ts', '.js', '.d.ts', '.cjs', '.mjs', '.json'],
      conditionNames: ['import', 'require', 'node', 'types', 'default'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
