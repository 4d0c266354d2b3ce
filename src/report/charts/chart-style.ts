// The charts' shared look: colours by class and strategy, the width, the colour scale.
import type { ServiceClass } from '../../core/service-class.js';
import { STRATEGY_REGISTRY } from '../../router/strategy-registry.js';

export const CLASS_COLORS: Record<ServiceClass, string> = { premium: '#c47f00', freemium: '#1f6fb4' };
/** The registry's colours (router/strategy-registry.ts); a strategy without one takes the fallback's next. */
export const STRATEGY_COLORS: Record<string, string> = Object.fromEntries(
  STRATEGY_REGISTRY.flatMap((s) => ('color' in s ? [[s.name, s.color]] : [])),
);
const FALLBACK = ['#17becf', '#bcbd22', '#e377c2', '#8c564b', '#aec7e8', '#ffbb78'];
export const WIDTH = 720;

export function colorScale(
  domain: string[],
  known: Record<string, string>,
): { domain: string[]; range: string[] } {
  let i = 0;
  return { domain, range: domain.map((d) => known[d] || FALLBACK[i++ % FALLBACK.length] || '#333') };
}
