import { PlbCommand } from '../cli/plb-command.js';
import { proxyFlags } from '../proxy/options.js';
import type { ProxySummary } from '../proxy/run.js';
import { escapeLines } from '../core/text.js';
import { strategiesFor, strategyEntry } from '../router/strategy-registry.js';

/** The strategies --strategy accepts, one line each, from the registry (what --help says of them). */
const strategyLines = (): string =>
  strategiesFor('proxy')
    .map((n) => `- ${n}: ${strategyEntry(n)?.summary ?? ''}`)
    .join('\n');

export default class Proxy extends PlbCommand {
  static override summary =
    "Session-level PostgreSQL wire-protocol proxy in front of a cluster (plb's or any fleet): one listener per class, the router picks the replica when a client connects and the session stays there";

  static override description = `Strategies (--strategy):\n${strategyLines()}`;

  static override examples = [
    '<%= config.bin %> proxy',
    '<%= config.bin %> proxy --premium-port 6432 --freemium-port 6433 --strategy plb --stats-every 5',
    '<%= config.bin %> proxy --class-from option   # psql "options=-c plb.class=premium"',
    '<%= config.bin %> proxy --primary-port 6434   # writers: to the server not in recovery, followed through a failover',
    '<%= config.bin %> proxy --cluster-file fleet.yaml   # servers plb did not make',
    '<%= config.bin %> proxy --replica 10.0.0.5:5432 --replica 10.0.0.6:5432   # credentials from PGUSER, PGPASSWORD...',
    '<%= config.bin %> proxy --config proxy.yaml --check',
  ];

  static override flags = proxyFlags;

  /** Runs until SIGINT/SIGTERM (SIGHUP reloads); --json: what it counted, printed on stdout when it stops. */
  async run(): Promise<ProxySummary | { ok: true; summary: string }> {
    const { flags, metadata } = await this.parse(Proxy);
    const json = this.jsonEnabled();
    const toStderr = (l: string): void => void process.stderr.write(`${escapeLines(l)}\n`);
    // What the command line gave (not its defaults): those override --config's values.
    const explicit = new Set(
      Object.keys(flags).filter(
        (k) => !(metadata.flags as Record<string, { setFromDefault?: boolean }>)[k]?.setFromDefault,
      ),
    );
    // The proxy's graph (prom-client, pg-protocol, TLS) loads when it runs, not with the command list.
    const { checkProxy, executeProxy } = await import('../proxy/run.js');
    if (flags.check) {
      const r = await checkProxy(flags, explicit);
      if (!json) this.log(r.summary);
      return r;
    }
    return executeProxy(flags, { log: json ? toStderr : (l) => this.log(l), warn: toStderr }, {}, explicit);
  }
}
