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
  // Packing tasks into an offer: arithmetic on Resources only; the restart back-off's arithmetic.
  '^shared/sdk/(offer-fit|restart-backoff)[.]ts$',
  '^master/registry/(state-machine|commands)[.]ts$',
  // The credential a launch pulls with, picked from the registry's secrets.
  '^master/secrets/pull-auth[.]ts$',
  '^master/allocator/',
  '^master/agents/liveness[.]ts$',
  '^master/offers[.]ts$',
  // The leader's counters, and the validation of scheduler calls (the shapes the core takes).
  '^master/(metrics|api/scheduler-calls)[.]ts$',
  '^master/leader/',
  // The built-in frameworks' decisions, and the agent's health-check verdicts.
  '^master/frameworks/jobs/(engine|gang|policies|record|kind-env)[.]ts$',
  '^master/frameworks/marathon/(core|constraints|app-model)[.]ts$',
  // The tuning core, its search algorithms, spaces and early-stopping rules, the paper's strategy.
  '^master/frameworks/tuning/(core|record|metrics-parse|dynamic-priority|trial-command|views)[.]ts$',
  '^master/frameworks/tuning/(algorithms|space|early-stopping|math)/',
  // The built-in frameworks' specs, their validation and what their endpoints answer, which the
  // command line checks and reads with the same code; sizes, quantities and secret names in them.
  '^shared/(jobs|tuning)/',
  '^shared/(quantity|sizes|secret-names)[.]ts$',
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
  ],
  options: {
    // See the header: TypeScript 7 cannot parse for dependency-cruiser, @swc/core can.
    parser: 'swc',
    // Keep type-only imports (only the tsc parser would drop them; say so anyway).
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
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
