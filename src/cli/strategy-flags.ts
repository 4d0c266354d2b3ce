/**
 * The strategy flags of `plb bench` and `plb proxy`: their options, help and checks, all from the
 * strategy registry (core/strategies.ts), so a new strategy shows and is accepted everywhere at once.
 */
import { Flags } from '@oclif/core';
import { PlbError } from '../core/errors.js';
import {
  isStrategyName,
  strategiesFor,
  strategyListText,
  type StrategyName,
  type StrategyUse,
} from '../core/strategies.js';

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

/** The proxy's one router strategy; throws BAD_INPUT naming the flag. */
export function parseProxyStrategy(text: string, flag = '--strategy'): StrategyName {
  if (!isStrategyName(text) || !accepted(text, 'proxy'))
    throw new PlbError('BAD_INPUT', `${flag}: unknown strategy "${text}" (${strategyListText('proxy')})`);
  return text;
}

/** `plb proxy --strategy`: one of the registry's proxy strategies, typed. */
export const proxyStrategyFlag = Flags.custom<StrategyName>({
  options: [...strategiesFor('proxy')],
  parse: async (input, _ctx, opts) => parseProxyStrategy(input, `--${opts.name}`),
});
