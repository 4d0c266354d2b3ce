// A replica added to a running health checker: checked from the next tick, down until `rise`
// checks in a row pass, then 'up' once; a replica that never answers is never said up.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { Connector } from '../../src/cluster/connector.js';
import { HealthChecker, HealthTracker } from '../../src/cluster/health.js';

/** Answers SELECT 1 for the ids in `alive`; refuses the connect for any other. */
function fakeConnector(alive: Set<string>, opened: string[]): Connector {
  return {
    open: async (id) => {
      opened.push(id);
      if (!alive.has(id)) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return { query: async () => 1, end: async () => undefined };
    },
  };
}

describe('a replica added to the health checks', () => {
  it('the tracker: down until rise checks pass in a row', () => {
    const t = new HealthTracker(['r1'], 2, 2);
    t.add('r2');
    expect(t.isHealthy('r2')).toBe(false);
    expect(t.observe('r2', true)).toBeNull();
    expect(t.observe('r2', false)).toBeNull();
    expect(t.observe('r2', true)).toBeNull();
    expect(t.observe('r2', true)).toBe('up');
    expect(t.isHealthy('r1')).toBe(true);
  });

  it('the checker: checks it from then on, says up once its checks pass; never for a dead one', async () => {
    const clock = new VirtualClock();
    const alive = new Set(['r1', 'r2']);
    const opened: string[] = [];
    const changes: string[] = [];
    const hc = new HealthChecker(
      ['r1'],
      fakeConnector(alive, opened),
      { intervalMs: 1000, timeoutMs: 1000, fall: 2, rise: 2, hangMs: 5000, clock },
      (id, state) => changes.push(`${id} ${state}`),
    );
    await clock.run(async () => {
      hc.start();
      await clock.sleep(2500);
      hc.add('r2');
      hc.add('r3');
      expect(hc.isHealthy('r2')).toBe(false);
      await clock.sleep(5000);
      hc.stop();
    });
    expect(opened).toContain('r2');
    expect(opened).toContain('r3');
    expect(changes).toEqual(['r2 up']);
    expect(hc.isHealthy('r2')).toBe(true);
    expect(hc.isHealthy('r3')).toBe(false);
  });
});
