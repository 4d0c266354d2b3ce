import { Command } from '@oclif/core';
import { proxyFlags } from '../proxy/options.js';
import { executeProxy } from '../proxy/run.js';
import { escapeLines } from '../text.js';

export default class Proxy extends Command {
  static override description =
    'Session-level PostgreSQL wire-protocol proxy in front of a cluster: one listener per class, the router picks the replica when a client connects';

  static override examples = [
    '<%= config.bin %> proxy',
    '<%= config.bin %> proxy --premium-port 6432 --freemium-port 6433 --strategy plb --stats-every 5',
    '<%= config.bin %> proxy --class-from option   # psql "options=-c plb.class=premium"',
  ];

  static override flags = proxyFlags;

  async run(): Promise<void> {
    const { flags } = await this.parse(Proxy);
    const code = await executeProxy(flags, {
      log: (l) => this.log(l),
      warn: (l) => process.stderr.write(`${escapeLines(l)}\n`),
    });
    if (code !== 0) this.exit(code);
  }
}
