import { Flags } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import Table from 'cli-table3';
import { openCluster } from '../../cluster/select.js';
import { DEFAULT_CLUSTER_NAME, readClusterRecord } from '../../cluster/state.js';
import { tableStyle } from '../../core/table-style.js';
import { connectInfo, psqlLine } from '../../cluster/connect-info.js';
import { escapeControl } from '../../core/text.js';
import { DEFAULT_FREEMIUM_PORT, DEFAULT_PREMIUM_PORT } from '../../proxy/options.js';

export default class ClusterStatus extends PlbCommand {
  static override description =
    'Per server: role, up/down, port, replication state, replay lag; and how to connect (user, database, password file, a psql line)';

  static override flags = {
    name: Flags.string({ description: 'cluster name', default: DEFAULT_CLUSTER_NAME }),
  };

  async run(): Promise<object | void> {
    const { flags } = await this.parse(ClusterStatus);
    const driver = await openCluster(flags.name);
    const servers = await driver.status();
    const connect = connectInfo(driver.spec.stateDir, flags.name, driver.endpoints());
    const reach = new Map(connect.servers.map((s) => [s.id, s]));
    const netFaults = netFaultsInForce(driver.spec.stateDir, flags.name);
    if (this.jsonEnabled())
      return {
        name: flags.name,
        driver: driver.kind,
        cpusEnforced: cpusEnforced(driver),
        maxConnections: driver.spec.maxConnections,
        memoryMb: driver.spec.memoryMb,
        user: connect.user,
        database: connect.database,
        passwordFile: connect.passwordFile,
        netFaults,
        servers: servers.map((s) => {
          const r = reach.get(s.id);
          return { ...s, ...(r ? { host: r.host, dsn: r.dsn, psql: r.psql } : {}) };
        }),
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
    if (netFaults.length > 0) this.log(`network faults in force: ${netFaults.join('; ')}`);
    const file = escapeControl(connect.passwordFile);
    this.log(
      `user ${connect.user}, database ${connect.database}, password in ${file} (cluster down removes it)`,
    );
    const width = Math.max(...connect.servers.map((s) => s.id.length));
    for (const s of connect.servers) this.log(`  ${s.id.padEnd(width)}  ${escapeControl(s.psql)}`);
    const proxy = psqlLine(connect.passwordFile, '127.0.0.1', DEFAULT_PREMIUM_PORT);
    this.log(`through plb proxy: ${escapeControl(proxy)} (premium; port ${DEFAULT_FREEMIUM_PORT} freemium)`);
  }
}

/** What the local driver's record says is in force (net-faults.ts), e.g. `r1: partition, loss`. */
function netFaultsInForce(stateDir: string, name: string): string[] {
  const list = readClusterRecord(stateDir, name)?.extra?.['netFaults'];
  return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : [];
}

/** Docker always enforces quotas; the local driver where cgroups allow it. */
function cpusEnforced(driver: { kind: string; cpusEnforced?: boolean }): boolean {
  return driver.kind === 'docker' || driver.cpusEnforced === true;
}
