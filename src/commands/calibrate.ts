import { Flags } from '@oclif/core';
import { CALIBRATE_DEFAULTS } from '../bench/calibrate/calibrate-summary.js';
import type { SimCalibration } from '../cluster/sim/calibration.js';
import { PlbCommand } from '../cli/plb-command.js';
import { DEFAULT_BASE_PORT } from '../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../cluster/state.js';
import { escapeLines } from '../core/text.js';

export default class Calibrate extends PlbCommand {
  static override description =
    'Measure a real replica under its CPU quota (CPU per query template, connect, health check; restart and catch-up times) and write the calibration the simulator uses';

  static override examples = [
    '<%= config.bin %> calibrate --out calibration.json',
    '<%= config.bin %> calibrate --driver docker --base-port 24432 --out calibration/default.json',
    '<%= config.bin %> calibrate --name plb --samples 100 --out -',
    '<%= config.bin %> calibrate --workload workloads/ecommerce.yaml --out calibration-ecommerce.json',
  ];

  static override flags = {
    out: Flags.string({
      description:
        'file to write the calibration JSON to; - prints it on stdout (the summary then goes to stderr)',
      default: 'calibration.json',
    }),
    name: Flags.string({
      description:
        'cluster name: an existing cluster is used as it is; otherwise one is brought up and removed after',
      default: DEFAULT_CLUSTER_NAME,
    }),
    cpus: Flags.string({ description: "CPU quota of the measured replica, cores (default: the cluster's)" }),
    samples: Flags.integer({
      description:
        'queries per template, connects and health checks measured (cheap ones run for at least 3 s)',
      default: CALIBRATE_DEFAULTS.samples,
    }),
    restarts: Flags.integer({
      description: 'kill + start repeats (the median is kept)',
      default: CALIBRATE_DEFAULTS.restarts,
    }),
    note: Flags.string({ description: 'text appended to measured.notes (e.g. what else ran on the host)' }),
    workload: Flags.string({
      description:
        'workload file (YAML) whose own SQL templates are measured too, so --driver sim can run it (its setup runs on the primary)',
    }),
    driver: Flags.string({
      description: 'when no cluster exists: docker, local or auto',
      options: ['auto', 'docker', 'local'],
      default: 'auto',
    }),
    'base-port': Flags.integer({
      description: 'when no cluster exists: primary port (replica i listens on base + i)',
      default: DEFAULT_BASE_PORT,
    }),
  };

  async run(): Promise<SimCalibration | undefined> {
    const { flags } = await this.parse(Calibrate);
    // The measuring code loads when it runs, not with the command list.
    const { executeCalibrate } = await import('../bench/calibrate/calibrate-sim.js');
    const { code, calibration } = await executeCalibrate(flags, {
      log: (l) => this.log(l),
      warn: (l) => process.stderr.write(`${escapeLines(l)}\n`),
      stdout: (t) => process.stdout.write(t),
    });
    if (code !== 0) this.exit(code);
    // --json: the calibration itself on stdout.
    return calibration;
  }
}
