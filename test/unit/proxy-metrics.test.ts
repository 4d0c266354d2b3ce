import { describe, expect, it } from 'vitest';
import { proxyRegistry, type ProxyView } from '../../src/proxy/proxy-metrics.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import type { ReplicaSnapshot } from '../../src/router/types.js';

const rep = (id: string, premium: number, freemium: number, healthy = true): ReplicaSnapshot => ({
  id,
  healthy,
  role: 'mixed',
  weight: 1,
  sessions: { premium, freemium },
});

function line(text: string, name: string): number | undefined {
  const hit = text.split('\n').find((l) => l.startsWith(`${name} `));
  return hit === undefined ? undefined : Number(hit.slice(name.length + 1));
}

describe('plb proxy --metrics-port', () => {
  it('reads the router and the counters at each scrape; nothing before the proxy listens', async () => {
    const at: { view?: ProxyView } = {};
    const registry = proxyRegistry(() => at.view);
    expect(await registry.metrics()).not.toMatch(/^plb_replica_sessions\{/m);
    const stats = new ProxyStats(['r1', 'r2', 'r3']);
    stats.replica('r1').opened = 7;
    stats.classes.premium.refused = 2;
    let snap = [rep('r1', 2, 4), rep('r2', 0, 2), rep('r3', 0, 0, false)];
    at.view = { snapshot: () => snap, stats };
    const text = await registry.metrics();
    expect(line(text, 'plb_replica_sessions{replica="r1",class="freemium"}')).toBe(4);
    expect(line(text, 'plb_replica_healthy{replica="r3"}')).toBe(0);
    expect(line(text, 'plb_replica_sessions_counted{replica="r1",what="opened"}')).toBe(7);
    expect(line(text, 'plb_class_sessions_counted{class="premium",what="refused"}')).toBe(2);
    // r1 6 and r2 2 open sessions over the healthy two: spread 6/4 = 1.5; r1 has 3/4 of them for 1/2 of the weight.
    expect(line(text, 'plb_signal_session_share_spread')).toBe(1.5);
    expect(line(text, 'plb_signal_weight_deviation')).toBe(0.5);
    snap = [rep('r1', 1, 0), rep('r2', 0, 1), rep('r3', 0, 0, false)];
    expect(line(await registry.metrics(), 'plb_signal_session_share_spread')).toBe(1);
  });
});
