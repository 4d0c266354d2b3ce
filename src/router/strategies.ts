/**
 * The router's half of the strategy registry (strategy-registry.ts beside it holds the data): one factory
 * per strategy, keyed by StrategyName so that a strategy without a factory does not compile.
 */
import { ROUTER_STRATEGY_NAMES, STRATEGY_REGISTRY, type StrategyName } from './strategy-registry.js';
import { AdmittingRouter } from './admission/admission.js';
import { admissionFor } from './admission/admission-defaults.js';
import { LeastSessionsRouter, RoundRobinRouter, StaticRouter } from './baseline-routers.js';
import { PlbRouter } from './plb-router.js';
import type { Router, RouterOptions } from './types.js';

/** Builds a strategy's router; slowStartMs is resolved and checked already. */
export type StrategyFactory = (options: RouterOptions, slowStartMs: number) => Router;

export const STRATEGY_FACTORIES: { readonly [N in StrategyName]: StrategyFactory } = {
  plb: (options, slowStartMs) => new PlbRouter(options, slowStartMs),
  rr: (options) => new RoundRobinRouter(options),
  static: (options) => new StaticRouter(options),
  lc: (options) => new LeastSessionsRouter('lc', options, 0),
  wlc: (options, slowStartMs) => new LeastSessionsRouter('wlc', options, slowStartMs),
  'plb-admit': (options, slowStartMs) =>
    new AdmittingRouter(
      new PlbRouter(options, slowStartMs),
      options.strategy,
      admissionFor(options, slowStartMs),
    ),
  'lc-queue': (options) => {
    // HAProxy's queue knows no classes and no SLO: one FIFO, no guard, nothing kept for premium.
    const { guard: _g, premiumReserve: _p, freemiumReserve: _f, ...plain } = admissionFor(options, 0);
    return new AdmittingRouter(new LeastSessionsRouter('lc', options, 0), options.strategy, {
      ...plain,
      classBlind: true,
    });
  },
};

export interface StrategyInfo {
  name: StrategyName;
  summary: string;
}

/** The router's strategies in the order the CLI lists them (flag options, help text). */
export const STRATEGIES: readonly StrategyInfo[] = STRATEGY_REGISTRY.flatMap((s) =>
  s.kind === 'router' ? [{ name: s.name, summary: s.summary }] : [],
);

export const STRATEGY_NAMES: readonly StrategyName[] = ROUTER_STRATEGY_NAMES;

export function describeStrategies(): string {
  return STRATEGIES.map((s) => `${s.name}: ${s.summary}`).join('\n');
}
