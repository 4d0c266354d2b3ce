import { benchFlags, parseBenchFlags, seriesFlags, type BenchFlagValues } from '../../bench/options/flags.js';
import { executeBenchSettings } from '../../bench/execute.js';
import { errorJson, errorLine } from '../../core/fail.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { escapeLines } from '../../core/text.js';

export default class BenchRun extends PlbCommand {
  static override description =
    'Run classed sessions through the router under a fault plan and record per-phase metrics';

  static override examples = [
    '<%= config.bin %> bench run',
    '<%= config.bin %> bench run --plan plans/demo-cascade.yaml --strategy plb,rr,static',
    '<%= config.bin %> bench run --plan plans/single-fault.yaml --strategy plb --clients 60 --mix 50:50 --seed 7',
  ];

  static override flags = {
    ...seriesFlags({
      strategy: ['plb'],
      repeat: 1,
      repeatHelp: 'runs per strategy and mix (seeds seed, seed+1, ...); reported as median and IQR',
    }),
    ...benchFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(BenchRun);
    const code = await runBench(flags, this.jsonEnabled());
    if (code !== 0) this.exit(code);
  }
}

/**
 * Both bench commands (and the paper's): the flags parsed by their groups' parsers, the typed
 * settings handed to the bench. With --json, stdout gets the JSON of the results alone (or of the
 * error); progress and notes go to stderr either way.
 */
export function runBench(
  flags: Omit<BenchFlagValues, 'strategies' | 'mixes' | 'json'> & { strategy: string[]; mix: string[] },
  json: boolean,
): Promise<number> {
  const { strategy, mix, ...rest } = flags;
  return executeBenchSettings(
    () => parseBenchFlags({ ...rest, strategies: strategy.join(','), mixes: mix.join(','), json }),
    {
      // Tables escape names themselves (their colour codes must stay).
      log: (l) => process.stdout.write(`${l}\n`),
      warn: (l) => process.stderr.write(`${escapeLines(l)}\n`),
      error: (err) =>
        json
          ? process.stdout.write(`${JSON.stringify(errorJson(err), null, 2)}\n`)
          : process.stderr.write(`Error: ${errorLine(err)}\n`),
    },
  );
}
