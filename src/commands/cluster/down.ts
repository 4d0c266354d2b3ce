import { Command, Flags } from '@oclif/core';
import { fail } from '../../cli/fail.js';
import { downCluster } from '../../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../../cluster/state.js';

export default class ClusterDown extends Command {
  static override description =
    'Remove everything of a cluster: servers, data, containers by label (also leftovers of a crash)';

  static override flags = {
    name: Flags.string({ description: 'cluster name', default: DEFAULT_CLUSTER_NAME }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(ClusterDown);
    try {
      for (const line of await downCluster(flags.name)) this.log(line);
    } catch (err) {
      fail(this, err);
    }
  }
}
