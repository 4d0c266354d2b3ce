// Child process of ownership.test.ts: `cluster up` (upCluster) of a local cluster, to be interrupted.
import { clusterSpec, upCluster } from '../../../src/cluster/select.js';

const [name, port, stateDir] = process.argv.slice(2) as [string, string, string];
await upCluster({
  driver: 'local',
  spec: clusterSpec({ name, replicas: 1, basePort: Number(port), stateDir }),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write('UP\n');
