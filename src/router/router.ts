import { PlbError } from '../core/errors.js';
import { admissionFor, AdmittingRouter } from './admission.js';
import { LeastSessionsRouter, RoundRobinRouter, StaticRouter } from './baseline-routers.js';
import { PlbRouter } from './plb-router.js';
import { DEFAULT_SLOW_START_MS } from './slow-start.js';
import { STRATEGY_NAMES } from './strategies.js';
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
  switch (strategy) {
    case 'plb':
      return new PlbRouter(options, slowStartMs);
    case 'rr':
      return new RoundRobinRouter(options);
    case 'static':
      return new StaticRouter(options);
    case 'lc':
      return new LeastSessionsRouter('lc', options, 0);
    case 'wlc':
      return new LeastSessionsRouter('wlc', options, slowStartMs);
    case 'plb-admit':
      return new AdmittingRouter(
        new PlbRouter(options, slowStartMs),
        strategy,
        admissionFor(options, slowStartMs),
      );
    case 'lc-queue': {
      // HAProxy's queue knows no classes and no SLO: one FIFO, no guard, nothing kept for premium.
      const { guard: _g, premiumReserve: _p, freemiumReserve: _f, ...plain } = admissionFor(options, 0);
      return new AdmittingRouter(new LeastSessionsRouter('lc', options, 0), strategy, {
        ...plain,
        classBlind: true,
      });
    }
  }
}
