/**
 * The router's part of a bench's configuration, both ways: from the flags into config.json's
 * fields (once, before anything starts), and from a run's config to its router. A router option
 * is its flag and check (cli/router-flags.ts), its config.json field (run-format/config.ts) and
 * the two lines here.
 */
import { buildRouter, resolveBorrowing } from '../../router/index.js';
import { strategyQueues } from '../../router/strategy-registry.js';
import { parseReadings } from '../../cli/router-values.js';
import type { SessionRouter, StrategyName } from '../../router/types.js';
import type { BenchConfig } from '../../run-format/config.js';
import { parseRouterFlags, type RouterFlagValues as RouterGroupValues } from '../../cli/router-flags.js';
import { weightedReplicas } from './balance.js';
import { isViaStrategy, ViaAdmissions } from '../via.js';

export interface RouterFlagValues extends RouterGroupValues {
  /** plb readings (parseReadings); default 'plb'. */
  readings?: string | undefined;
}

export type RouterSettings = Pick<
  BenchConfig,
  'reference' | 'partition' | 'slowStartMs' | 'borrowing' | 'readings'
>;

/** The router's settings from its flags; throws BAD_INPUT naming the flag. */
export function resolveRouterSettings(flags: RouterFlagValues): RouterSettings {
  const { borrowing, ...group } = parseRouterFlags(flags);
  return {
    ...group,
    // Recorded resolved (every threshold), which the router takes as it is.
    borrowing: resolveBorrowing(borrowing),
    readings: parseReadings(flags.readings ?? 'paper', '--readings'),
  };
}

/** onRoleChange: the router reports every role change as it makes it. */
export type RouterFactory = (
  replicaIds: string[],
  onRoleChange: (c: { replica: string; from: string; to: string; reason: string; nowMs: number }) => void,
) => SessionRouter;

/** A run's router, from its config alone: what config.json says is what routed. */
export function routerFor(config: BenchConfig): RouterFactory {
  return (ids, onRoleChange) => {
    if (isViaStrategy(config.strategy)) return new ViaAdmissions(ids);
    const balance = config.balance;
    return buildRouter({
      strategy: config.strategy as StrategyName,
      replicas: weightedReplicas(ids, balance?.weights),
      ...(balance?.zones ? { zones: balance.zones, zoneSpill: balance.zoneSpill } : {}),
      reference: config.reference,
      partition: config.partition,
      slowStartMs: config.slowStartMs,
      ...(config.borrowing ? { borrowing: config.borrowing } : {}),
      ...(config.readings ? { readings: config.readings } : {}),
      // Only a strategy that queues takes config.json's admission (the others never did).
      ...(config.admission && strategyQueues(config.strategy) ? { admission: config.admission } : {}),
      onRoleChange,
    });
  };
}
