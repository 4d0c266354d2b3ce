import { Command, Flags } from '@oclif/core';
import { benchFlags, executeBench } from '../../bench/options.js';
import { escapeLines } from '../../text.js';

export default class BenchMatrix extends Command {
  static override description =
    'Run strategies x mixes x repeats on one cluster, one after another (replicas reset between runs)';

  static override examples = [
    '<%= config.bin %> bench matrix --plan plans/demo-cascade.yaml --strategies plb,rr,static --mixes 25:75,50:50,75:25 --repeat 3',
  ];

  static override flags = {
    ...benchFlags,
    strategies: Flags.string({ description: 'comma list of strategies', default: 'plb,rr,static' }),
    mixes: Flags.string({ description: 'comma list of premium:freemium mixes', default: '25:75' }),
    repeat: Flags.integer({ description: 'runs per strategy and mix', default: 3 }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(BenchMatrix);
    const code = await executeBench(flags, {
      log: (l) => this.log(l),
      warn: (l) => process.stderr.write(`${escapeLines(l)}\n`),
    });
    if (code !== 0) this.exit(code);
  }
}
