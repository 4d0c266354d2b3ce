// Child process of chaos.test.ts: `plb bench run` (executeBench, what the command runs) on a cluster
// it brings up itself (local or docker driver), to be killed with SIGKILL at some moment.
// Progress goes to stderr.
import { executeBench } from '../../../src/bench/execute.js';
import { benchFlagValues } from '../../helpers/fixtures.js';

const [name, port, out, plan, seed, driver] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const code = await executeBench(
  benchFlagValues(out, name, Number(port), {
    plan,
    seed: Number(seed),
    clients: 4,
    // Big enough that a kill can land inside the load (about half a second here).
    'dataset-rows': 50_000,
    'health-interval': '500ms',
    'hang-timeout': '2s',
    driver,
  }),
  { log: (l) => process.stdout.write(`${l}\n`), warn: (l) => process.stderr.write(`${l}\n`) },
);
process.exit(code);
