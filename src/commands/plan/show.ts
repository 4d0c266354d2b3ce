import { parsePartition, parseReadings, parseRoleVector } from '../../cli/router-values.js';
import { Args } from '@oclif/core';
import { defaultPlanPath } from '../../bench/series.js';
import { checkedText } from '../../cli/flags.js';
import { PlbCommand } from '../../cli/plb-command.js';
import { PlbError } from '../../core/errors.js';
import { loadPlan } from '../../faults/plan.js';
import { MAX_SIM_REPLICAS } from '../../core/replica-ids.js';
import { dryRunPlan, renderPlanShow } from '../../faults/plan-show.js';
import { parseBorrowing } from '../../cli/router-flags.js';
import { routerStrategyFlag } from '../../cli/strategy-flags.js';

export default class PlanShow extends PlbCommand {
  static override description =
    'Dry-run a fault plan through the router (no cluster): survivors, target role vector and every role after each event';

  static override examples = [
    '<%= config.bin %> plan show',
    '<%= config.bin %> plan show plans/demo-cascade.yaml --strategy plb',
    '<%= config.bin %> plan show plans/cascade.yaml --strategy plb --reference 2:1:2 --json',
    '<%= config.bin %> plan show --readings paper,repair=shared',
  ];

  static override args = {
    file: Args.string({ description: 'fault plan (YAML); default: the embedded demo cascade' }),
  };

  static override flags = {
    strategy: routerStrategyFlag()({ description: 'router strategy', default: 'plb' }),
    reference: checkedText((v, flag) => parseRoleVector(v, flag))({
      description: 'plb: premium:mixed:freemium reference split (default 2:1:2)',
      helpGroup: 'PLB ROUTER',
    }),
    readings: checkedText((v, flag) => parseReadings(v, flag))({
      description:
        'plb: readings of the repair rules, as for bench run: a preset (plb, paper) and/or key=value pairs (default paper)',
      helpGroup: 'PLB ROUTER',
    }),
    borrow: checkedText((v) => parseBorrowing(v))({
      description:
        'plb: borrowing ratios premium:freemium or off, as for bench run (default 1.5:2; shown only)',
      helpGroup: 'PLB ROUTER',
    }),
    partition: checkedText((v, flag) => parsePartition(v, flag))({
      description: 'static: premium:freemium partition (default 3:2)',
      helpGroup: 'PLB ROUTER',
    }),
  };

  async run(): Promise<ReturnType<typeof dryRunPlan> | void> {
    const { args, flags } = await this.parse(PlanShow);
    const plan = loadPlan(args.file ?? defaultPlanPath(), { maxReplicas: MAX_SIM_REPLICAS });
    const strategy = flags.strategy;
    for (const name of ['reference', 'readings', 'borrow'] as const) {
      if (flags[name] !== undefined && strategy !== 'plb') {
        throw new PlbError(
          'BAD_INPUT',
          `--${name} applies to --strategy plb only (got --strategy ${strategy})`,
        );
      }
    }
    if (flags.partition !== undefined && strategy !== 'static') {
      throw new PlbError(
        'BAD_INPUT',
        `--partition applies to --strategy static only (got --strategy ${strategy})`,
      );
    }
    const show = dryRunPlan(plan, {
      strategy,
      ...(flags.reference !== undefined ? { reference: parseRoleVector(flags.reference) } : {}),
      ...(flags.partition !== undefined ? { partition: parsePartition(flags.partition) } : {}),
      ...(flags.readings !== undefined ? { readings: parseReadings(flags.readings) } : {}),
      ...(flags.borrow !== undefined ? { borrowing: parseBorrowing(flags.borrow) } : {}),
    });
    if (this.jsonEnabled()) return show;
    this.log(renderPlanShow(show, plan));
  }
}
