import { Flags } from '@oclif/core';
import { checkedText } from '../../cli/flags.js';
import { PlbCommand } from '../../cli/plb-command.js';
import {
  clusterSpec,
  DEFAULT_BASE_PORT,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_REPLICAS,
  parseDriverChoice,
  parseCpus,
  upCluster,
} from '../../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../../cluster/state.js';

export default class ClusterUp extends PlbCommand {
  static override description = 'Bring up a primary and K streaming hot standbys on 127.0.0.1';

  static override examples = [
    '<%= config.bin %> cluster up',
    '<%= config.bin %> cluster up --replicas 3 --driver local --base-port 56432',
  ];

  static override flags = {
    replicas: Flags.integer({ description: 'number of streaming standbys', default: DEFAULT_REPLICAS }),
    driver: Flags.string({
      description: 'docker, local, or auto (docker when its engine answers); external is refused',
      options: ['auto', 'docker', 'local', 'external'],
      default: 'auto',
    }),
    cpus: checkedText((v, flag) => parseCpus(flag, v))({
      description: 'CPU quota per replica, cores (the local driver enforces it only as root with cgroups)',
    }),
    'primary-cpus': checkedText((v, flag) => parseCpus(flag, v))({
      description: 'CPU quota of the primary, cores',
    }),
    'cpu-pool': Flags.boolean({
      description:
        "docker: the replicas share one CPU quota of replicas x --cpus, so a dead replica's CPU goes to the survivors (the simulator's --sim-cpu pooled)",
    }),
    memory: Flags.integer({
      description: 'memory limit per server, MiB (default: sized from --max-connections, at least 512)',
    }),
    'max-connections': Flags.integer({
      description:
        'max_connections of every server; a bench of T sessions needs T + 20 (one survivor holds them all)',
      default: DEFAULT_MAX_CONNECTIONS,
    }),
    image: Flags.string({ description: 'Docker image (docker driver only)' }),
    'base-port': Flags.integer({
      description: 'primary port; replica i listens on base + i',
      default: DEFAULT_BASE_PORT,
    }),
    name: Flags.string({ description: 'cluster name', default: DEFAULT_CLUSTER_NAME }),
  };

  async run(): Promise<{ name: string; driver: string; endpoints: unknown[] }> {
    const { flags } = await this.parse(ClusterUp);
    const spec = clusterSpec({
      name: flags.name,
      replicas: flags.replicas,
      basePort: flags['base-port'],
      ...(flags.cpus !== undefined ? { cpus: parseCpus('--cpus', flags.cpus) } : {}),
      ...(flags['primary-cpus'] !== undefined
        ? { primaryCpus: parseCpus('--primary-cpus', flags['primary-cpus']) }
        : {}),
      maxConnections: flags['max-connections'],
      ...(flags.memory !== undefined ? { memoryMb: flags.memory } : {}),
      ...(flags.image !== undefined ? { image: flags.image } : {}),
      ...(flags['cpu-pool'] ? { cpuPool: true } : {}),
    });
    const t0 = Date.now();
    const { driver } = await upCluster({
      driver: parseDriverChoice(flags.driver),
      spec,
      log: (line) => this.log(line),
    });
    this.log(`cluster ${spec.name} up in ${((Date.now() - t0) / 1000).toFixed(1)} s (${driver.kind} driver)`);
    for (const ep of driver.endpoints())
      this.log(`  ${ep.id.padEnd(8)} ${ep.kind.padEnd(8)} ${ep.host}:${ep.port}`);
    this.log(
      `  max_connections ${driver.spec.maxConnections} per server, memory ${driver.spec.memoryMb} MiB per server`,
    );
    if (spec.cpuPool)
      this.log(`  CPU pool: the replicas share ${+(spec.replicas * spec.cpus).toFixed(2)} cores`);
    this.log(`  user plb, database plb; password in ${spec.stateDir}/${spec.name}/password`);
    if (driver.kind === 'local' && !(driver as { cpusEnforced?: boolean }).cpusEnforced)
      this.log('  note: no writable cgroups here: CPU quotas are recorded but not enforced');
    return { name: spec.name, driver: driver.kind, endpoints: driver.endpoints() };
  }
}
