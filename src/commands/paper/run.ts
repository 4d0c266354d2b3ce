import { admissionFlags } from '../../bench/options/admission-options.js';
import { strategyQueues } from '../../router/strategy-registry.js';
import { Args, Flags } from '@oclif/core';
import { benchFlags, presetSeriesFlags, seriesFlags } from '../../bench/options/flags.js';
import { HELP_GROUPS } from '../../cli/router-flags.js';
import {
  estimateWallS,
  formatWall,
  PAPER_EXPERIMENT_IDS,
  paperClients,
  paperExperiment,
  paperPlanPath,
} from '../../bench/paper/paper-experiments.js';
import { loadPlan } from '../../faults/plan.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { runBench } from '../bench/run.js';

// The bench flags whose value the experiment chooses unless the command line gives one.
const {
  plan: _plan,
  clients: _clients,
  'think-time': _thinkTime,
  out: _out,
  ...otherBenchFlags
} = benchFlags;
const { repeat } = seriesFlags({
  strategy: [],
  repeat: 3,
  repeatHelp: 'runs per strategy and mix, reported as median and IQR',
});

export default class PaperRun extends PlbCommand {
  static override description =
    "Run one of the PLB paper's experiments at its scale (plans/paper/): the plan, T, strategies and mixes the paper used, with repeats; the report adds the paper's figures and the paper-vs-measured table";

  static override examples = [
    '<%= config.bin %> paper run rq3 --repeat 1',
    '<%= config.bin %> paper run rq2 --quick',
    '<%= config.bin %> paper run fig5 --dry-run',
    '<%= config.bin %> paper run rq3 --readings paper --mix 25:75',
  ];

  static override args = {
    experiment: Args.string({
      description: `the experiment: ${PAPER_EXPERIMENT_IDS.join(', ')} (plb paper list)`,
      required: true,
      options: [...PAPER_EXPERIMENT_IDS],
    }),
  };

  static override flags = {
    ...otherBenchFlags,
    ...presetSeriesFlags(),
    repeat,
    out: Flags.string({
      description: 'folder for run directories (default: runs/paper/<experiment>)',
      helpGroup: HELP_GROUPS.output,
    }),
    quick: Flags.boolean({
      description:
        'a first look: the same events at a quarter of the phase lengths and a fifth of the clients',
      default: false,
      helpGroup: HELP_GROUPS.workload,
    }),
    'dry-run': Flags.boolean({
      description: 'print the series, its expected wall time and the equivalent bench command, then stop',
      default: false,
      helpGroup: HELP_GROUPS.output,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PaperRun);
    const exp = paperExperiment(args.experiment);
    const { quick, 'dry-run': dryRun, ...rest } = flags;
    const planPath = paperPlanPath(exp, quick);
    const plan = loadPlan(planPath);
    const strategy = flags.strategy ?? [...exp.strategies];
    const mix = flags.mix ?? [...exp.mixes];
    const T = flags.clients ?? paperClients(exp, quick);
    const outDir = flags.out ?? `runs/paper/${exp.id}${quick ? '-quick' : ''}`;
    const runs = strategy.length * mix.length * flags.repeat;
    const wall = formatWall(estimateWallS(plan, runs, flags.driver));
    const say = (l: string): void => {
      process.stderr.write(`${l}\n`);
    };
    say(`${exp.title}`);
    say(`  shows: ${exp.figures}`);
    say(
      `  ${runs} run(s): ${strategy.join(',')} x ${mix.join(',')} x ${flags.repeat} repeat(s), T=${T}, plan ${plan.name} (${plan.duration} s)`,
    );
    say(
      `  expected wall time: about ${wall}${flags.driver === 'sim' ? ' (simulated)' : ''}; runs go to ${outDir}`,
    );
    if (dryRun) {
      say(
        `  same as: plb bench matrix --plan ${planPath} --strategy ${strategy.join(',')} --mix ${mix.join(',')} --repeat ${flags.repeat} --clients ${T} --think-time ${flags['think-time']} --out ${outDir}${admissionArgs(flags, strategy)}`,
      );
      return;
    }
    const code = await runBench(
      {
        ...rest,
        'think-time': flags['think-time'] ?? 'auto',
        plan: planPath,
        strategy,
        mix,
        clients: T,
        out: outDir,
      },
      this.jsonEnabled(),
    );
    if (code !== 0) this.exit(code);
  }
}

/** The admission flags of a dry run's command, when a strategy takes them. */
function admissionArgs(flags: Record<string, unknown>, strategies: readonly string[]): string {
  if (!strategies.some((s) => strategyQueues(s))) return '';
  return Object.keys(admissionFlags)
    .filter((k) => flags[k] !== undefined)
    .map((k) => ` --${k} ${String(flags[k])}`)
    .join('');
}
