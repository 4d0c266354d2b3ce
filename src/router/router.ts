import { PlbError } from '../core/errors.js';
import { strategyQueues } from './strategy-registry.js';
import { AdmittingRouter } from './admission/admission.js';
import { DEFAULT_SLOW_START_MS } from './slow-start.js';
import { STRATEGY_FACTORIES, STRATEGY_NAMES } from './strategies.js';
import { ZonedRouter } from './zones.js';
import type { Router, RouterOptions } from './types.js';

/** A router for one strategy over a fixed list of replicas (all healthy at the start). */
export function createRouter(options: RouterOptions): Router {
  if (options?.zones !== undefined) return new ZonedRouter(options, options.zones, createRouter);
  const strategy = options?.strategy;
  if (!STRATEGY_NAMES.includes(strategy)) {
    throw new PlbError(
      'BAD_INPUT',
      `strategy must be one of ${STRATEGY_NAMES.join(', ')}, got '${String(strategy)}'`,
    );
  }
  const slowStartMs = options.slowStartMs ?? DEFAULT_SLOW_START_MS;
  if (!(slowStartMs >= 0) || !Number.isFinite(slowStartMs)) {
    throw new PlbError('BAD_INPUT', `slowStartMs must be a finite number >= 0, got ${String(slowStartMs)}`);
  }
  return STRATEGY_FACTORIES[strategy](options, slowStartMs);
}

/**
 * The one router construction of `plb bench` and `plb proxy`, from their resolved settings. With
 * admission options every strategy gets the session limits and the queue: a queueing strategy
 * (plb-admit, lc-queue) has them inside already, any other is wrapped in them as it is.
 */
export function buildRouter(options: RouterOptions): Router {
  const router = createRouter(options);
  if (options.admission === undefined || strategyQueues(options.strategy)) return router;
  return new AdmittingRouter(router, options.strategy, {
    ...options.admission,
    slowStartMs: options.slowStartMs ?? DEFAULT_SLOW_START_MS,
  });
}
