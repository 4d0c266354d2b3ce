// Layers point down (docs/architecture.md): a folder of src/ imports only the folders below it.
// `npm run lint` runs this; a new upward import fails CI.
const layers = [
  // [folder, the folders it may import besides itself]
  ['core', []],
  ['router', ['core']],
  ['clock', ['core']],
  // run-format names the strategies from the router's registry (pure data, no I/O).
  ['run-format', ['core', 'router']],
  ['cluster', ['core', 'clock', 'router', 'run-format']],
  ['faults', ['core', 'clock', 'router', 'run-format', 'cluster']],
  ['metrics', ['core', 'clock', 'router', 'run-format', 'cluster', 'faults']],
  ['workload', ['core', 'clock', 'router', 'run-format', 'cluster', 'faults', 'metrics']],
  // report reads run files and metrics' math: never the bench, a driver or the workload.
  ['report', ['core', 'router', 'run-format', 'faults', 'metrics']],
  // cli: the flag groups and process plumbing commands, the bench and the proxy share.
  ['cli', ['core', 'clock', 'router', 'run-format', 'cluster', 'faults', 'metrics', 'workload']],
  ['bench', ['core', 'clock', 'router', 'run-format', 'cluster', 'faults', 'metrics', 'workload', 'report', 'cli']],
];

const folder = (names) => `^src/(${names.join('|')})/`;

module.exports = {
  forbidden: [
    ...layers.map(([name, below]) => ({
      name: `layer-${name}`,
      comment: `src/${name}/ may import only ${below.length ? below.map((b) => `src/${b}/`).join(', ') : 'nothing of plb'} (layers point down)`,
      severity: 'error',
      from: { path: folder([name]) },
      to: { path: '^src/', pathNot: [folder([name, ...below])] },
    })),
    {
      name: 'proxy-router-and-health-only',
      comment: 'plb proxy loads the router, the health flag group and what a session needs, never the bench or report graph',
      severity: 'error',
      from: { path: '^src/proxy/' },
      to: { path: '^src/(bench|report|workload|commands|baselines)/' },
    },
    {
      name: 'nothing-imports-commands',
      comment: 'commands are the top: only oclif loads them',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/commands/' },
      to: { path: '^src/commands/' },
    },
    {
      name: 'no-circular',
      comment: 'no import cycle between modules',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
  },
};
