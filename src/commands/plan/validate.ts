import { Args, Command } from '@oclif/core';
import { fail } from '../../fail.js';
import { loadPlan } from '../../faults/plan.js';

export default class PlanValidate extends Command {
  static override description = 'Check a fault plan against the schema; errors name the file, line and field';

  static override examples = ['<%= config.bin %> plan validate plans/demo-cascade.yaml'];

  static override args = {
    file: Args.string({ description: 'fault plan (YAML)', required: true }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(PlanValidate);
    try {
      const plan = loadPlan(args.file);
      const n = plan.events.length;
      this.log(`ok: ${plan.name}, ${n} event${n === 1 ? '' : 's'}, ${plan.duration}s`);
    } catch (err) {
      fail(this, err);
    }
  }
}
