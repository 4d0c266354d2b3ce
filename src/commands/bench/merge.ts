import { Args, Flags } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import { mergeRuns } from '../../bench/merge/merge-runs.js';

export default class BenchMerge extends PlbCommand {
  static override description = `Join the run directories of the nodes of one run (plb bench run --workers W --worker-index i, one per node) into one run directory.

Every node's raw values (calls.jsonl) are replayed into one recorder: the per-second histograms are the exact HDR merge of the nodes' values and the summary is computed as for any run (never from the parts' percentiles). Events and the first index's fault events are merged in time order; config.json records the parts. A missing index or an incomplete part makes the merged run incomplete with the reason. Parts with different seeds, plans, strategies, workloads or routers, or one index twice, are refused.`;

  static override examples = [
    '<%= config.bin %> bench merge node0/20261207-120000-plb-demo node1/20261207-120000-plb-demo --out runs/merged',
  ];

  static override strict = false;

  static override args = {
    runDir: Args.string({
      required: true,
      description: 'run directories of the nodes (one per --worker-index)',
    }),
  };

  static override flags = {
    out: Flags.string({ description: 'the merged run directory (must not exist)', required: true }),
  };

  async run(): Promise<{ dir: string; complete: boolean; errors: string[] }> {
    const { argv, flags } = await this.parse(BenchMerge);
    const { dir, summary } = mergeRuns(argv as string[], flags.out);
    const errors = summary.errors ?? [];
    this.log(`merged ${argv.length} part(s) into ${dir}${summary.complete ? '' : ' (incomplete)'}`);
    for (const e of errors) this.warn(e);
    return { dir, complete: summary.complete, errors };
  }
}
