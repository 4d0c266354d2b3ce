import Table from 'cli-table3';
import {
  estimateWallS,
  formatWall,
  PAPER_EXPERIMENT_IDS,
  PAPER_EXPERIMENTS,
  QUICK_CLIENT_DIVISOR,
  paperPlanPath,
} from '../../bench/paper/paper-experiments.js';
import { loadPlan } from '../../faults/plan.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { tableStyle } from '../../core/table-style.js';

interface ListedExperiment {
  id: string;
  title: string;
  figures: string;
  plan: string;
  clients: number;
  strategies: readonly string[];
  mixes: readonly string[];
  runs: number;
  /** Docker driver, 3 repeats / 1 repeat / --quick with 1 repeat. */
  wallS: { repeat3: number; repeat1: number; quick1: number };
}

export default class PaperList extends PlbCommand {
  static override description =
    "The PLB paper's experiments plb reproduces, with their plans, scale and expected wall time on a real cluster";

  static override examples = ['<%= config.bin %> paper list', '<%= config.bin %> paper list --json'];

  async run(): Promise<ListedExperiment[] | void> {
    await this.parse(PaperList);
    const rows = PAPER_EXPERIMENT_IDS.map((id): ListedExperiment => {
      const exp = PAPER_EXPERIMENTS[id];
      const plan = loadPlan(paperPlanPath(exp, false));
      const quick = loadPlan(paperPlanPath(exp, true));
      const perRepeat = exp.strategies.length * exp.mixes.length;
      return {
        id,
        title: exp.title,
        figures: exp.figures,
        plan: plan.name,
        clients: exp.clients,
        strategies: exp.strategies,
        mixes: exp.mixes,
        runs: perRepeat,
        wallS: {
          repeat3: estimateWallS(plan, perRepeat * 3, 'docker'),
          repeat1: estimateWallS(plan, perRepeat, 'docker'),
          quick1: estimateWallS(quick, perRepeat, 'docker'),
        },
      };
    });
    if (this.jsonEnabled()) return rows;
    const table = new Table({
      head: ['experiment', 'plan', 'T', 'strategies', 'mixes', 'wall x3', 'x1', '--quick x1'],
      style: tableStyle(),
    });
    for (const r of rows) {
      table.push([
        r.id,
        r.plan,
        r.clients,
        r.strategies.join(','),
        r.mixes.join(','),
        formatWall(r.wallS.repeat3),
        formatWall(r.wallS.repeat1),
        formatWall(r.wallS.quick1),
      ]);
    }
    this.log(table.toString());
    for (const r of rows) this.log(`${r.id}: ${r.title}; ${r.figures}`);
    this.log(`--quick: plans/paper/quick/ (a quarter of the phase lengths) and T/${QUICK_CLIENT_DIVISOR}`);
  }
}
