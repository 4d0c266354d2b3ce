// The strategy registry (src/router/strategy-registry.ts) and what is derived from it: every list of names,
// the help text, the checks, report order, chart colours, and one router construction.
import { describe, expect, it } from 'vitest';
import {
  isStrategyName,
  QUEUEING_STRATEGY_NAMES,
  ROUTER_STRATEGY_NAMES,
  STRATEGY_REGISTRY,
  strategiesFor,
  strategyEntry,
  strategyListText,
  strategyQueues,
  VIA,
} from '../../src/router/strategy-registry.js';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import { buildRouter, createRouter, STRATEGY_NAMES } from '../../src/router/index.js';
import { STRATEGY_FACTORIES } from '../../src/router/strategies.js';
import { BENCH_STRATEGY_LIST, parseRouterStrategy, parseStrategies } from '../../src/cli/strategy-flags.js';
import { STRATEGY_COLORS } from '../../src/report/charts/chart-style.js';
import { admissionSchema } from '../../src/run-format/config.js';
import Proxy from '../../src/commands/proxy.js';

const ids = ['r1', 'r2', 'r3', 'r4', 'r5'];
const admission = {
  limits: { mode: 'fixed' as const, limit: 2 },
  queue: { capacity: 10, timeoutMs: 1000 },
};

describe('the strategy registry', () => {
  it('has one entry per name, and a factory for every router strategy', () => {
    const names = STRATEGY_REGISTRY.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(STRATEGY_FACTORIES).sort()).toEqual([...ROUTER_STRATEGY_NAMES].sort());
    expect(STRATEGY_NAMES).toEqual(ROUTER_STRATEGY_NAMES);
    expect(strategyEntry(VIA)?.kind).toBe('via');
    expect(isStrategyName(VIA)).toBe(false);
  });

  it('builds every router strategy under its own name', () => {
    for (const strategy of ROUTER_STRATEGY_NAMES)
      expect(createRouter({ strategy, replicas: ids }).strategy).toBe(strategy);
  });

  it('says where each strategy is accepted, in the help text and the checks', () => {
    expect(strategiesFor('bench')).toEqual([...ROUTER_STRATEGY_NAMES, VIA]);
    expect(strategiesFor('proxy')).toEqual(ROUTER_STRATEGY_NAMES);
    expect(BENCH_STRATEGY_LIST).toBe(
      'plb, rr, static, lc, wlc, plb-admit, lc-queue, or via (an external balancer, --via)',
    );
    expect(strategyListText('proxy')).toBe('plb, rr, static, lc, wlc, plb-admit, or lc-queue');
    expect(parseStrategies('plb, lc-queue,via', 'strategy')).toEqual(['plb', 'lc-queue', 'via']);
    expect(() => parseStrategies('plb,fast', 'strategy')).toThrow(/^--strategy: unknown strategy "fast"/);
    expect(parseRouterStrategy('plb-admit', '--strategy', 'proxy')).toBe('plb-admit');
    expect(() => parseRouterStrategy('via', '--strategy', 'proxy')).toThrow(
      /^--strategy: unknown strategy "via" \(plb, rr/,
    );
  });

  it("lists in plb proxy --help every strategy the proxy accepts, with the registry's line for it", () => {
    const help = Proxy.description ?? '';
    for (const s of STRATEGY_REGISTRY)
      if ((s.accepted as readonly string[]).includes('proxy'))
        expect(help).toContain(`- ${s.name}: ${s.summary}`);
      else expect(help).not.toContain(`- ${s.name}:`);
  });

  it('knows which strategies queue, a via run by its base name', () => {
    expect(QUEUEING_STRATEGY_NAMES).toEqual(['plb-admit', 'lc-queue']);
    expect(strategyQueues('lc-queue')).toBe(true);
    expect(strategyQueues('plb')).toBe(false);
    expect(strategyQueues('via:haproxy')).toBe(false);
    expect(strategyEntry('via:haproxy')?.name).toBe(VIA);
    expect(admissionSchema.description).toMatch(/^plb-admit, lc-queue: /);
  });

  it('gives the charts their colours and reports their order', () => {
    expect(STRATEGY_COLORS).toEqual({
      plb: '#2a9d3a',
      rr: '#7a7a7a',
      static: '#8e5cc4',
      lc: '#e8772e',
      wlc: '#8c564b',
    });
    const ranked = STRATEGY_REGISTRY.flatMap((s) => ('reportRank' in s ? [[s.reportRank, s.name]] : []));
    expect(ranked.sort((a, b) => Number(a[0]) - Number(b[0])).map((r) => r[1])).toEqual([
      'plb',
      'rr',
      'static',
      'lc',
      'wlc',
    ]);
  });
});

describe('buildRouter: the one router construction of bench and proxy', () => {
  it('wraps a strategy that does not queue in the limits and the queue when given admission', () => {
    const plain = buildRouter({ strategy: 'rr', replicas: ids });
    expect(plain).not.toBeInstanceOf(AdmittingRouter);
    const limited = buildRouter({ strategy: 'rr', replicas: ids, admission });
    expect(limited).toBeInstanceOf(AdmittingRouter);
    expect(limited.strategy).toBe('rr');
  });

  it('leaves a queueing strategy as its factory made it (no second wrap)', () => {
    const r = buildRouter({ strategy: 'plb-admit', replicas: ids, admission });
    expect(r).toBeInstanceOf(AdmittingRouter);
    expect(createRouter({ strategy: 'lc-queue', replicas: ids })).toBeInstanceOf(AdmittingRouter);
  });
});
