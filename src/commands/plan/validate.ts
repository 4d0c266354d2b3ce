import { Args } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import { loadPlan, MAX_REPLICAS } from '../../faults/plan.js';
import { MAX_SIM_REPLICAS } from '../../core/replica-ids.js';

export default class PlanValidate extends PlbCommand {
  static override description = 'Check a fault plan against the schema; errors name the file, line and field';

  static override examples = ['<%= config.bin %> plan validate plans/demo-cascade.yaml'];

  static override args = {
    file: Args.string({ description: 'fault plan (YAML)', required: true }),
  };

  async run(): Promise<{ ok: true; name: string; events: number; durationS: number }> {
    const { args } = await this.parse(PlanValidate);
    // A plan is valid for some driver: past the real drivers' limit, it is a simulator's plan.
    const plan = loadPlan(args.file, { maxReplicas: MAX_SIM_REPLICAS });
    const n = plan.events.length;
    const simOnly = plan.replicas > MAX_REPLICAS ? ` (${plan.replicas} replicas: --driver sim only)` : '';
    this.log(`ok: ${plan.name}, ${n} event${n === 1 ? '' : 's'}, ${plan.duration}s${simOnly}`);
    return { ok: true, name: plan.name, events: n, durationS: plan.duration };
  }
}
