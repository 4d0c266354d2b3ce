// Shared by the test files: what the machine has, and bench flags with test-sized defaults.
import type { BenchFlagValues } from '../../src/bench/options.js';
import { findBinDir } from '../../src/cluster/local/binaries.js';

/** True when the PostgreSQL server binaries are installed (local-driver suites skip otherwise). */
export const haveServerBinaries: boolean = (() => {
  try {
    findBinDir();
    return true;
  } catch {
    return false;
  }
})();

/** Every bench flag, small: 4 clients, 1000 rows, the local driver on the given port. */
export function benchFlagValues(
  out: string,
  name: string,
  basePort: number,
  over: Partial<BenchFlagValues> = {},
): BenchFlagValues {
  return {
    strategies: 'plb',
    mixes: '25:75',
    repeat: 1,
    clients: 4,
    model: 'closed',
    rate: '20',
    out,
    'dataset-rows': 1000,
    'queries-per-session': 5,
    'think-time': '10ms',
    'target-cpu': '0.7',
    'hang-timeout': '5s',
    reference: '2:1:2',
    partition: '3:2',
    'slow-start': '10s',
    borrow: '1.5:2',
    'health-interval': '1s',
    fall: 2,
    rise: 2,
    oracle: false,
    progress: 0,
    name,
    driver: 'local',
    'base-port': basePort,
    'keep-cluster': false,
    json: false,
    ...over,
  };
}
