import { Args } from '@oclif/core';
import { PlbCommand } from '../../plb-command.js';
import { loadPlan } from '../../faults/plan.js';

export default class PlanValidate extends PlbCommand {
  static override description = 'Check a fault plan against the schema; errors name the file, line and field';

  static override examples = ['<%= config.bin %> plan validate plans/demo-cascade.yaml'];

  static override args = {
    file: Args.string({ description: 'fault plan (YAML)', required: true }),
  };

  async run(): Promise<{ ok: true; name: string; events: number; durationS: number }> {
    const { args } = await this.parse(PlanValidate);
    const plan = loadPlan(args.file);
    const n = plan.events.length;
    this.log(`ok: ${plan.name}, ${n} event${n === 1 ? '' : 's'}, ${plan.duration}s`);
    return { ok: true, name: plan.name, events: n, durationS: plan.duration };
  }
}
