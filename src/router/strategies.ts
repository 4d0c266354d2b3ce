import type { StrategyName } from './types.js';

export interface StrategyInfo {
  name: StrategyName;
  summary: string;
}

/** The strategies in the order the CLI lists them (flag options, help text). */
export const STRATEGIES: readonly StrategyInfo[] = [
  {
    name: 'plb',
    summary: 'priority-aware: roles, repair-to-target, class-aware least loaded, borrowing, slow start',
  },
  { name: 'rr', summary: 'class-blind round robin over the healthy replicas (5RR)' },
  {
    name: 'static',
    summary: 'per-class partitions (--partition, default 3:2), round robin inside (3RR+2RR)',
  },
  { name: 'lc', summary: 'least sessions over the healthy replicas' },
  { name: 'wlc', summary: 'weighted least sessions with a slow-start ramp for rejoining replicas' },
  {
    name: 'plb-admit',
    summary:
      'plb with per-replica session limits, a priority queue at admission and the SLO guard (--admission-*)',
  },
  {
    name: 'lc-queue',
    summary:
      'least sessions with a per-replica limit and one FIFO queue (HAProxy leastconn + maxconn + timeout queue)',
  },
];

export const STRATEGY_NAMES: readonly StrategyName[] = STRATEGIES.map((s) => s.name);

export function describeStrategies(): string {
  return STRATEGIES.map((s) => `${s.name}: ${s.summary}`).join('\n');
}

export function isStrategyName(value: string): value is StrategyName {
  return (STRATEGY_NAMES as readonly string[]).includes(value);
}
