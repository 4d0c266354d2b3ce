import { benchFlags, seriesFlags } from '../../bench/options/flags.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { runBench } from './run.js';

export default class BenchMatrix extends PlbCommand {
  static override description =
    'Run strategies x mixes x repeats on one cluster, one after another (replicas reset between runs)';

  static override examples = [
    '<%= config.bin %> bench matrix --plan plans/demo-cascade.yaml --strategy plb,rr,static --mix 25:75,50:50,75:25 --repeat 3',
  ];

  static override flags = {
    ...seriesFlags({ strategy: ['plb', 'rr', 'static'], repeat: 3, repeatHelp: 'runs per strategy and mix' }),
    ...benchFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(BenchMatrix);
    const code = await runBench(flags, this.jsonEnabled());
    if (code !== 0) this.exit(code);
  }
}
