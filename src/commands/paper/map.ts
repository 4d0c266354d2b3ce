import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { benchFlags } from '../../bench/options/flags.js';
import { HELP_GROUPS } from '../../cli/router-flags.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { packageRoot } from '../../core/package-info.js';
import { writeFileSafe } from '../../core/safe-write.js';
import { escapeLines } from '../../core/text.js';
import { expandGrid, loadMapGrid } from '../../bench/paper/paper-map-grid.js';
import { cellDone, sweepMap, type CellBenchFlags } from '../../bench/paper/paper-map.js';
import { evaluateMap, renderMapText } from '../../report/paper/map.js';
import { renderMapHtml } from '../../report/paper/map-html.js';
import type { MapJson } from '../../run-format/paper-map.js';
import { runBench } from '../bench/run.js';

// The bench flags a grid cell sets itself; the rest pass through to every run as in `paper run`.
const {
  plan: _plan,
  clients: _clients,
  'think-time': _thinkTime,
  'target-cpu': _targetCpu,
  'queries-per-session': _qps,
  reference: _reference,
  readings: _readings,
  model: _model,
  rate: _rate,
  borrow: _borrow,
  seed: _seed,
  driver: _driver,
  progress: _progress,
  out: _out,
  ...otherBenchFlags
} = benchFlags;

/** The bench's own defaults of the flags a cell may leave out. */
const CELL_DEFAULTS = { rate: String(_rate.default), borrow: String(_borrow.default) };

/**
 * CPU seconds a cell takes on this project's 2-core machine at T=30 (docs/paper-map.md): quick
 * plans measured (81 s for the 10 cells of the quick grid); the paper's plans estimated from one
 * run of each (their simulation is about twice as long).
 */
const CELL_WALL_S = { quick: 9, full: 20 } as const;
/** Those were three runs a cell (RQ2 plb and rr, RQ3 plb); the placebo adds a fourth, RQ3-long. */
const PLACEBO_SHARE = 1 / 3;

export default class PaperMap extends PlbCommand {
  static override description =
    "Where the paper's claims hold: sweep the simulator over a grid of workloads (reference load x queries per session per mix, and one-factor sweeps of the reference split, readings and arrival model) and give every published claim a verdict per cell; writes map.json and map.html (a heatmap per claim). A stopped map resumes: done cells are not run again";

  static override examples = [
    '<%= config.bin %> paper map --quick',
    '<%= config.bin %> paper map --grid plans/paper/map/full.yaml',
    '<%= config.bin %> paper map --quick --dry-run',
  ];

  static override flags = {
    ...otherBenchFlags,
    grid: Flags.string({
      description: 'grid file (YAML; default: the shipped plans/paper/map/full.yaml)',
      exclusive: ['quick'],
      helpGroup: HELP_GROUPS.workload,
    }),
    quick: Flags.boolean({
      description: 'the shipped quick grid, plans/paper/map/quick.yaml (about 2 minutes)',
      default: false,
      helpGroup: HELP_GROUPS.workload,
    }),
    out: Flags.string({
      description: 'folder of the cells, map.json and map.html (default: runs/paper/map/<grid name>)',
      helpGroup: HELP_GROUPS.output,
    }),
    'dry-run': Flags.boolean({
      description: 'print the cells, how many are done and the expected wall time, then stop',
      default: false,
      helpGroup: HELP_GROUPS.output,
    }),
    'skip-html': Flags.boolean({
      description: 'do not write map.html',
      default: false,
      helpGroup: HELP_GROUPS.output,
    }),
  };

  async run(): Promise<MapJson | void> {
    const { flags } = await this.parse(PaperMap);
    const {
      grid: gridFlag,
      quick,
      out: outFlag,
      'dry-run': dryRun,
      'skip-html': skipHtml,
      json: _json,
      ...rest
    } = flags;
    const gridPath =
      gridFlag ?? join(packageRoot(), 'plans', 'paper', 'map', quick ? 'quick.yaml' : 'full.yaml');
    const grid = loadMapGrid(gridPath);
    const { cells, centre } = expandGrid(grid);
    const out = outFlag ?? join('runs', 'paper', 'map', grid.name);
    const say = (l: string): void => {
      process.stderr.write(`${escapeLines(l)}\n`);
    };
    const todo = cells.filter((c) => !cellDone(out, c)).length;
    say(
      `paper map ${grid.name}: ${cells.length} cells (${cells.filter((c) => c.kind === 'heatmap').length} heatmap, ${cells.filter((c) => c.kind === 'sweep').length} sweep, ${cells.filter((c) => c.kind === 'ablation').length} ablation), ${todo} to run; T=${grid.clients}, ${grid.plans} plans, seed ${grid.seed}, ${grid.repeat} repeat(s); into ${out}`,
    );
    say(
      `  expected wall time: about ${Math.ceil((todo * CELL_WALL_S[grid.plans] * (grid.placebo ? 1 + PLACEBO_SHARE : 1) * grid.repeat) / 60)} min (simulated, at T=30; more clients take longer)`,
    );
    if (dryRun) {
      for (const c of cells) say(`  ${c.id} (${c.kind}${c.kind === 'heatmap' ? '' : `: ${c.label}`})`);
      return;
    }
    const run = async (cell: CellBenchFlags): Promise<number> => {
      // A run's own tables and notes are not the map's output; they are shown only when it fails.
      const { value, text } = await captured(() => runBench({ ...rest, ...CELL_DEFAULTS, ...cell }, false));
      if (value !== 0) process.stderr.write(text);
      return value;
    };
    const outcome = await sweepMap(grid, cells, { out, run, log: say });
    say(`${outcome.ran} cell(s) run, ${outcome.skipped} already done, in ${outcome.wallS.toFixed(0)} s`);
    const map = evaluateMap({ ...grid, grid: grid.name, centre, cells, dir: out });
    writeFileSafe(join(out, 'map.json'), `${JSON.stringify(map, null, 2)}\n`, 'map.json');
    say(`wrote ${join(out, 'map.json')}`);
    if (!skipHtml) {
      writeFileSafe(join(out, 'map.html'), await renderMapHtml(map), 'map.html');
      say(`wrote ${join(out, 'map.html')}`);
    }
    if (outcome.code !== 0) this.exit(outcome.code);
    if (this.jsonEnabled()) return map;
    process.stdout.write(`${renderMapText(map)}\n`);
  }
}

/** Runs f with stdout dropped and stderr kept aside (returned), then puts both back. */
async function captured<T>(f: () => Promise<T>): Promise<{ value: T; text: string }> {
  const out = process.stdout.write;
  const err = process.stderr.write;
  let text = '';
  process.stdout.write = (() => true) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { value: await f(), text };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}
