/**
 * The strategy flags of `plb bench` and `plb proxy`: their options, help and checks, all from the
 * strategy registry (router/strategy-registry.ts), so a new strategy shows and is accepted everywhere at once.
 */
import { Flags } from '@oclif/core';
import { PlbError } from '../core/errors.js';
import {
  isStrategyName,
  ROUTER_STRATEGY_NAMES,
  strategiesFor,
  strategyListText,
  type StrategyName,
  type StrategyUse,
} from '../router/strategy-registry.js';

/** `--strategy` of a bench: the registry's bench strategies, via with its hint. */
export const BENCH_STRATEGY_LIST = strategyListText('bench');

function accepted(name: string, use: StrategyUse): boolean {
  return strategiesFor(use).includes(name);
}

/** A bench's comma list of strategies (the router's and via); throws BAD_INPUT naming the flag. */
export function parseStrategies(text: string, field: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (list.length === 0) throw new PlbError('BAD_INPUT', `--${field}: name at least one strategy`);
  for (const s of list) {
    if (!accepted(s, 'bench'))
      throw new PlbError('BAD_INPUT', `--${field}: unknown strategy "${s}" (${BENCH_STRATEGY_LIST})`);
  }
  return list;
}

/** The router's strategies a command accepts (all of them without `use`). */
function routerStrategies(use?: StrategyUse): StrategyName[] {
  return ROUTER_STRATEGY_NAMES.filter((s) => use === undefined || accepted(s, use));
}

/** One router strategy (`plb proxy`: use 'proxy'); throws BAD_INPUT naming the flag. */
export function parseRouterStrategy(text: string, flag = '--strategy', use?: StrategyUse): StrategyName {
  if (!isStrategyName(text) || !routerStrategies(use).includes(text))
    throw new PlbError(
      'BAD_INPUT',
      `${flag}: unknown strategy "${text}" (${use ? strategyListText(use) : ROUTER_STRATEGY_NAMES.join(', ')})`,
    );
  return text;
}

/** `--strategy` naming one router strategy, typed: `plb proxy` (use 'proxy'), `plb plan show`. */
export const routerStrategyFlag = (use?: StrategyUse) =>
  Flags.custom<StrategyName>({
    options: routerStrategies(use),
    parse: async (input, _ctx, opts) => parseRouterStrategy(input, `--${opts.name}`, use),
  });
