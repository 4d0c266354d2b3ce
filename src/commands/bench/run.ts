import { Command, Flags } from '@oclif/core';
import { benchFlags, executeBench } from '../../bench/options.js';
import { escapeLines } from '../../text.js';

export default class BenchRun extends Command {
  static override description =
    'Run classed sessions through the router under a fault plan and record per-phase metrics';

  static override examples = [
    '<%= config.bin %> bench run',
    '<%= config.bin %> bench run --plan plans/demo-cascade.yaml --strategy plb,rr,static',
    '<%= config.bin %> bench run --plan plans/single-fault.yaml --strategy plb --clients 60 --mix 50:50 --seed 7',
  ];

  static override flags = {
    ...benchFlags,
    strategy: Flags.string({
      description: 'plb, rr, static, lc or wlc; a comma list runs each in turn and prints them side by side',
      default: 'plb',
    }),
    mix: Flags.string({ description: 'premium:freemium share of clients (or sessions)', default: '25:75' }),
    repeat: Flags.integer({
      description: 'runs per strategy (seeds seed, seed+1, ...); reported as median and IQR',
      default: 1,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(BenchRun);
    const code = await executeBench(
      { ...flags, strategies: flags.strategy, mixes: flags.mix },
      { log: (l) => this.log(l), warn: (l) => process.stderr.write(`${escapeLines(l)}\n`) },
      { strategies: 'strategy', mixes: 'mix' },
    );
    if (code !== 0) this.exit(code);
  }
}
