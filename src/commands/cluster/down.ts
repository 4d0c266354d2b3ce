import { Flags } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import { downCluster } from '../../cluster/select.js';
import { withClusterLock } from '../../cluster/lock.js';
import { DEFAULT_CLUSTER_NAME, defaultStateDir } from '../../cluster/state.js';

export default class ClusterDown extends PlbCommand {
  static override description = `Remove the cluster recorded in this state folder: servers, data, containers carrying its id.

Containers of the same name that this state folder did not make (another user's, another state
folder's, an older plb's) are listed and left alone, unless --name names the cluster explicitly:
then they are removed too, and listed.`;

  static override flags = {
    name: Flags.string({
      description: `cluster name (default ${DEFAULT_CLUSTER_NAME}); given explicitly, also removes what others made under it`,
    }),
  };

  async run(): Promise<{ name: string; lines: string[] }> {
    const { flags } = await this.parse(ClusterDown);
    const name = flags.name ?? DEFAULT_CLUSTER_NAME;
    const stateDir = defaultStateDir();
    const lines = await withClusterLock(stateDir, name, () =>
      downCluster(name, stateDir, { explicit: flags.name !== undefined }),
    );
    for (const line of lines) this.log(line);
    return { name, lines };
  }
}
