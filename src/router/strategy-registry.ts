/**
 * The strategy registry: one entry per strategy plb compares. Every list of strategy names (the
 * StrategyName type, flag options and help text, the bench's and the proxy's checks, config.json's
 * description, report order, chart colours) is derived from it. The router factories live in
 * src/router/strategies.ts, keyed by StrategyName, so a missing one fails to compile.
 */

/** Where a strategy may be named: `plb bench` (run, matrix, paper) and `plb proxy`. */
export type StrategyUse = 'bench' | 'proxy';

export interface StrategyEntry {
  readonly name: string;
  /** 'router': the embedded router routes (a factory in router/); 'via': an external balancer. */
  readonly kind: 'router' | 'via';
  /** One line for --help and the docs. */
  readonly summary: string;
  /** Limits sessions per replica and queues the rest: takes the --admission-* flags by itself. */
  readonly queues: boolean;
  /** Place in reports (lowest first); absent: after the ranked ones, by name. */
  readonly reportRank?: number;
  /** Colour in charts; absent: the next colour of the fallback palette. */
  readonly color?: string;
  readonly accepted: readonly StrategyUse[];
  /** Said after its name in a list of names (help text, errors). */
  readonly listHint?: string;
}

const BOTH = ['bench', 'proxy'] as const;

/** The strategies in the order the CLI lists them. */
export const STRATEGY_REGISTRY = [
  {
    name: 'plb',
    kind: 'router',
    summary: 'priority-aware: roles, repair-to-target, class-aware least loaded, borrowing, slow start',
    queues: false,
    reportRank: 0,
    color: '#2a9d3a',
    accepted: BOTH,
  },
  {
    name: 'rr',
    kind: 'router',
    summary: 'class-blind round robin over the healthy replicas (5RR)',
    queues: false,
    reportRank: 1,
    color: '#7a7a7a',
    accepted: BOTH,
  },
  {
    name: 'static',
    kind: 'router',
    summary: 'per-class partitions (--partition, default 3:2), round robin inside (3RR+2RR)',
    queues: false,
    reportRank: 2,
    color: '#8e5cc4',
    accepted: BOTH,
  },
  {
    name: 'lc',
    kind: 'router',
    summary: 'least sessions over the healthy replicas',
    queues: false,
    reportRank: 3,
    color: '#e8772e',
    accepted: BOTH,
  },
  {
    name: 'wlc',
    kind: 'router',
    summary: 'weighted least sessions with a slow-start ramp for rejoining replicas',
    queues: false,
    reportRank: 4,
    color: '#8c564b',
    accepted: BOTH,
  },
  {
    name: 'plb-admit',
    kind: 'router',
    summary:
      'plb with per-replica session limits, a priority queue at admission and the SLO guard (--admission-*)',
    queues: true,
    accepted: BOTH,
  },
  {
    name: 'lc-queue',
    kind: 'router',
    summary:
      'least sessions with a per-replica limit and one FIFO queue (HAProxy leastconn + maxconn + timeout queue)',
    queues: true,
    accepted: BOTH,
  },
  {
    name: 'via',
    kind: 'via',
    summary:
      'an external balancer (HAProxy, PgBouncer, pgcat, plb proxy) at --via; runs are named via:<label>',
    queues: false,
    accepted: ['bench'],
    listHint: 'an external balancer, --via',
  },
] as const satisfies readonly StrategyEntry[];

type Entry = (typeof STRATEGY_REGISTRY)[number];

/** The strategies of the embedded router (DESIGN.md). */
export type StrategyName = Extract<Entry, { kind: 'router' }>['name'];

/** `--strategy via`: the external balancer's entry; its runs are named `via:<label>`. */
export const VIA: Extract<Entry, { kind: 'via' }>['name'] = 'via';

const ENTRIES: readonly StrategyEntry[] = STRATEGY_REGISTRY;

/** The embedded router's strategies, in the registry's order. */
export const ROUTER_STRATEGY_NAMES: readonly StrategyName[] = STRATEGY_REGISTRY.filter(
  (s): s is Extract<Entry, { kind: 'router' }> => s.kind === 'router',
).map((s) => s.name);

export function isStrategyName(value: string): value is StrategyName {
  return (ROUTER_STRATEGY_NAMES as readonly string[]).includes(value);
}

/** The entry of a name as runs record it (`via:<label>` is via's); undefined when none. */
export function strategyEntry(name: string): StrategyEntry | undefined {
  const base = name.startsWith(`${VIA}:`) ? VIA : name;
  return ENTRIES.find((s) => s.name === base);
}

/** The names a command accepts, in the registry's order. */
export function strategiesFor(use: StrategyUse): readonly string[] {
  return ENTRIES.filter((s) => s.accepted.includes(use)).map((s) => s.name);
}

/** The names a command accepts as help and errors say them: `plb, rr, ..., or via (hint)`. */
export function strategyListText(use: StrategyUse): string {
  const items = ENTRIES.filter((s) => s.accepted.includes(use)).map((s) =>
    s.listHint === undefined ? s.name : `${s.name} (${s.listHint})`,
  );
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')}, or ${items.at(-1)}`;
}

/** Whether a strategy (as a run names it) queues by itself: the admission flags apply. */
export function strategyQueues(name: string): boolean {
  return strategyEntry(name)?.queues === true;
}

/** The strategies that queue by themselves, in the registry's order. */
export const QUEUEING_STRATEGY_NAMES: readonly string[] = ENTRIES.filter((s) => s.queues).map((s) => s.name);

/** The queueing strategies in a sentence: `plb-admit or lc-queue`, `a, b or c`. */
export function queueingStrategiesText(): string {
  const names = QUEUEING_STRATEGY_NAMES;
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}
