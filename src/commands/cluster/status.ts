import { Flags } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import Table from 'cli-table3';
import { openCluster } from '../../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../../cluster/state.js';
import { tableStyle } from '../../core/table-style.js';

export default class ClusterStatus extends PlbCommand {
  static override description = 'Per server: role, up/down, port, replication state, replay lag';

  static override flags = {
    name: Flags.string({ description: 'cluster name', default: DEFAULT_CLUSTER_NAME }),
  };

  async run(): Promise<object | void> {
    const { flags } = await this.parse(ClusterStatus);
    const driver = await openCluster(flags.name);
    const servers = await driver.status();
    if (this.jsonEnabled())
      return {
        name: flags.name,
        driver: driver.kind,
        cpusEnforced: cpusEnforced(driver),
        maxConnections: driver.spec.maxConnections,
        memoryMb: driver.spec.memoryMb,
        servers,
      };
    const table = new Table({
      head: ['server', 'role', 'state', 'port', 'replication', 'lag bytes', 'replay lag s', 'cpus'],
      style: tableStyle(),
    });
    for (const s of servers) {
      table.push([
        s.id,
        s.kind,
        s.paused ? 'paused' : s.up ? 'up' : 'down',
        s.port,
        s.replication ?? '-',
        s.lagBytes ?? '-',
        s.replayLagSeconds === null ? '-' : s.replayLagSeconds.toFixed(1),
        s.cpus === null ? '-' : cpusEnforced(driver) ? s.cpus : `${s.cpus} (not enforced)`,
      ]);
    }
    this.log(
      `cluster ${flags.name} (${driver.kind} driver; max_connections ${driver.spec.maxConnections}, memory ${driver.spec.memoryMb} MiB per server)`,
    );
    this.log(table.toString());
  }
}

/** Docker always enforces quotas; the local driver where cgroups allow it. */
function cpusEnforced(driver: { kind: string; cpusEnforced?: boolean }): boolean {
  return driver.kind === 'docker' || driver.cpusEnforced === true;
}
