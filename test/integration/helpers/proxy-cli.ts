// Child process of proxy.test.ts: `plb proxy` (executeProxy, what the command runs) in front of a
// recorded cluster, until SIGTERM. Exits with executeProxy's code.
import { executeProxy } from '../../../src/proxy/run.js';

const [name, premium, freemium] = process.argv.slice(2) as [string, string, string];
const code = await executeProxy(
  {
    name,
    host: '127.0.0.1',
    'premium-port': Number(premium),
    'freemium-port': Number(freemium),
    'class-from': 'application_name',
    strategy: 'rr',
    reference: '2:1:2',
    partition: '3:2',
    borrow: '1.5:2',
    'slow-start': '10s',
    'health-interval': '500ms',
    fall: 2,
    rise: 2,
    'hang-timeout': '5s',
    'stats-every': 1,
    'stop-timeout': '10s',
  },
  { log: (l) => process.stdout.write(`${l}\n`), warn: (l) => process.stderr.write(`${l}\n`) },
);
process.exit(code);
