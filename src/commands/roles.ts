import { parseReadings, parseRoleVector } from '../cli/router-values.js';
import { Flags } from '@oclif/core';
import { checkedText } from '../cli/flags.js';
import { PlbCommand } from '../cli/plb-command.js';
import Table from 'cli-table3';
import { PlbError } from '../core/errors.js';
import {
  formatReadings,
  formatRoleVector,
  fullReference,
  repairTarget,
  roleVectorTotal,
  type PlbReadings,
  type RoleVector,
} from '../router/index.js';
import { tableStyle } from '../core/table-style.js';

/** Where a row's target comes from. */
type TargetRule = 'reference' | 'fixed' | 'scaled + floors' | 'shared' | 'kept';

interface TargetRow {
  survivors: number;
  /** null: repair=none keeps the surviving roles, there is no target. */
  premium: number | null;
  mixed: number | null;
  freemium: number | null;
  rule: TargetRule;
}

interface RolesJson {
  reference: RoleVector;
  replicas: number;
  readings: PlbReadings;
  full: RoleVector;
  targets: TargetRow[];
}

/** The target the router repairs to at every K+ from K down to 0, under the readings. */
function targetRows(replicas: number, full: RoleVector, readings: PlbReadings): TargetRow[] {
  const rows: TargetRow[] = [];
  for (let k = replicas; k >= 0; k--) {
    // At K+=K every reading has the full-capacity split (repair=none: the deployment, kept).
    const t = k === replicas ? full : repairTarget(k, replicas, full, readings);
    const rule: TargetRule =
      t === null
        ? 'kept'
        : k === replicas
          ? 'reference'
          : readings.repair === 'shared'
            ? 'shared'
            : k >= 4
              ? 'scaled + floors'
              : 'fixed';
    rows.push({
      survivors: k,
      premium: t?.premium ?? null,
      mixed: t?.mixed ?? null,
      freemium: t?.freemium ?? null,
      rule,
    });
  }
  return rows;
}

export default class Roles extends PlbCommand {
  static override description =
    'Print the PLB target role vector (premium:mixed:freemium) for every number of survivors K+ from K down to 0';

  static override examples = [
    '<%= config.bin %> roles',
    '<%= config.bin %> roles --reference 4:2:4',
    '<%= config.bin %> roles --reference 3:0:2 --readings reference=floored',
    '<%= config.bin %> roles --reference 2:1:2 --replicas 10 --json',
  ];

  static override flags = {
    reference: checkedText((v, flag) => parseRoleVector(v, flag))({
      description: 'full-capacity split premium:mixed:freemium',
      default: '2:1:2',
    }),
    replicas: Flags.integer({
      description: 'K, the number of replicas, at most 10000 (default: the sum of --reference)',
      min: 1,
      max: 10_000,
    }),
    readings: checkedText((v, flag) => parseReadings(v, flag))({
      description:
        'readings of the repair rules, as for bench run: a preset (plb, paper) and/or key=value pairs (reference=literal|floored, repair=target|none|shared, floors=mixed|classes, ...)',
      default: 'paper',
    }),
  };

  async run(): Promise<RolesJson | void> {
    const { flags } = await this.parse(Roles);
    const reference = parseRoleVector(flags.reference, '--reference');
    const readings = parseReadings(flags.readings, '--readings');
    const replicas = flags.replicas ?? roleVectorTotal(reference);
    if (replicas > 10_000)
      throw new PlbError('BAD_INPUT', `--replicas: must be at most 10000 (got ${replicas})`);
    const full = fullReference(replicas, reference, readings.reference, readings.floors);
    const rows = targetRows(replicas, full, readings);
    if (this.jsonEnabled()) return { reference, replicas, readings, full, targets: rows };
    const table = new Table({ head: ['K+', 'premium', 'mixed', 'freemium', 'rule'], style: tableStyle() });
    const cell = (n: number | null) => (n === null ? '-' : n);
    for (const r of rows) table.push([r.survivors, cell(r.premium), cell(r.mixed), cell(r.freemium), r.rule]);
    this.log(
      `reference ${formatRoleVector(reference)}, K=${replicas}, full-capacity split ${formatRoleVector(full)}`,
    );
    this.log(`readings: ${formatReadings(readings)}`);
    this.log(table.toString());
  }
}
