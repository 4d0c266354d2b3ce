import { Flags } from '@oclif/core';
import { checkedText } from '../cli-flags.js';
import { PlbCommand } from '../plb-command.js';
import Table from 'cli-table3';
import { PlbError } from '../errors.js';
import {
  formatRoleVector,
  fullReference,
  parseRoleVector,
  roleVectorTotal,
  targetRoleTable,
} from '../router/index.js';
import { tableStyle } from '../table-style.js';

interface RolesJson {
  reference: ReturnType<typeof parseRoleVector>;
  replicas: number;
  full: ReturnType<typeof fullReference>;
  targets: ReturnType<typeof targetRoleTable>;
}

export default class Roles extends PlbCommand {
  static override description =
    'Print the PLB target role vector (premium:mixed:freemium) for every number of survivors K+ from K down to 0';

  static override examples = [
    '<%= config.bin %> roles',
    '<%= config.bin %> roles --reference 4:2:4',
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
  };

  async run(): Promise<RolesJson | void> {
    const { flags } = await this.parse(Roles);
    const reference = parseRoleVector(flags.reference, '--reference');
    const replicas = flags.replicas ?? roleVectorTotal(reference);
    if (replicas > 10_000)
      throw new PlbError('BAD_INPUT', `--replicas must be at most 10000, got ${replicas}`);
    const full = fullReference(replicas, reference);
    const rows = targetRoleTable(replicas, reference);
    if (this.jsonEnabled()) return { reference, replicas, full, targets: rows };
    const table = new Table({ head: ['K+', 'premium', 'mixed', 'freemium', 'rule'], style: tableStyle() });
    for (const r of rows) {
      table.push([
        r.survivors,
        r.premium,
        r.mixed,
        r.freemium,
        r.survivors >= 4 ? 'scaled + floors' : 'fixed',
      ]);
    }
    this.log(
      `reference ${formatRoleVector(reference)}, K=${replicas}, full-capacity split ${formatRoleVector(full)}`,
    );
    this.log(table.toString());
  }
}
