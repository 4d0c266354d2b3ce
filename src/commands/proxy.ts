import { PlbCommand } from '../cli/plb-command.js';
import { proxyFlags } from '../proxy/options.js';
import type { ProxySummary } from '../proxy/run.js';
import { escapeLines } from '../core/text.js';
import { strategiesFor, strategyEntry } from '../core/strategies.js';

/** The strategies --strategy accepts, one line each, from the registry (what --help says of them). */
const strategyLines = (): string =>
  strategiesFor('proxy')
    .map((n) => `- ${n}: ${strategyEntry(n)?.summary ?? ''}`)
    .join('\n');

export default class Proxy extends PlbCommand {
  static override summary =
    'Session-level PostgreSQL wire-protocol proxy in front of a cluster: one listener per class, the router picks the replica when a client connects and the session stays there';

  static override description = `Strategies (--strategy):\n${strategyLines()}`;

  static override examples = [
    '<%= config.bin %> proxy',
    '<%= config.bin %> proxy --premium-port 6432 --freemium-port 6433 --strategy plb --stats-every 5',
    '<%= config.bin %> proxy --class-from option   # psql "options=-c plb.class=premium"',
    '<%= config.bin %> proxy --primary-port 6434   # writers: to the server not in recovery, followed through a failover',
  ];

  static override flags = proxyFlags;

  /** Runs until SIGINT/SIGTERM; --json: what it counted, printed on stdout when it stops. */
  async run(): Promise<ProxySummary> {
    const { flags } = await this.parse(Proxy);
    const json = this.jsonEnabled();
    const toStderr = (l: string): void => void process.stderr.write(`${escapeLines(l)}\n`);
    // The proxy's graph (prom-client, pg-protocol, TLS) loads when it runs, not with the command list.
    const { executeProxy } = await import('../proxy/run.js');
    return executeProxy(flags, { log: json ? toStderr : (l) => this.log(l), warn: toStderr });
  }
}
