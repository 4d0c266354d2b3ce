import { describe, expect, it } from 'vitest';
import { loadPlan, parsePlan } from '../../src/faults/plan.js';
import { dryRunPlan, renderPlanShow } from '../../src/faults/plan-show.js';

const roles = (row: { replicas: { healthy: boolean; state: string; role: string }[] }) =>
  row.replicas.map((r) => (r.healthy ? r.role : r.state));

describe('dryRunPlan', () => {
  const cascade = loadPlan('plans/demo-cascade.yaml');

  it('plb: one row per event with K+, the target vector and a role for every replica', () => {
    const show = dryRunPlan(cascade, { strategy: 'plb' });
    expect(show.reference).toEqual({ premium: 2, mixed: 1, freemium: 2 });
    expect(show.rows.map((r) => [r.at, r.event?.action ?? 'start', r.phase, r.survivors])).toEqual([
      [0, 'start', null, 5],
      [30, 'down', 'down-1', 4],
      [45, 'down', 'down-2', 3],
      [60, 'rejoin', 'rejoin-1', 4],
      [75, 'rejoin', 'rejoin-2', 5],
    ]);
    expect(show.rows.map((r) => r.target)).toEqual([
      // The default readings (the paper's): floors on premium and freemium only, so 2:0:2 at K+=4.
      { premium: 2, mixed: 1, freemium: 2 },
      { premium: 2, mixed: 0, freemium: 2 },
      { premium: 2, mixed: 0, freemium: 1 },
      { premium: 2, mixed: 0, freemium: 2 },
      { premium: 2, mixed: 1, freemium: 2 },
    ]);
    expect(roles(show.rows[0]!)).toEqual(['premium', 'premium', 'mixed', 'freemium', 'freemium']);
    for (const row of show.rows) {
      // The router met the target among the healthy replicas after every event.
      const healthy = row.replicas.filter((r) => r.healthy);
      expect(healthy).toHaveLength(row.survivors);
      const count = (role: string) => healthy.filter((r) => r.role === role).length;
      expect({ premium: count('premium'), mixed: count('mixed'), freemium: count('freemium') }).toEqual(
        row.target,
      );
    }
    expect(show.rows[2]!.replicas.filter((r) => !r.healthy).map((r) => r.id)).toEqual(['r1', 'r2']);
  });

  it('rr: no target vector, every healthy replica shared', () => {
    const show = dryRunPlan(cascade, { strategy: 'rr' });
    expect(show.reference).toBeNull();
    expect(show.rows.every((r) => r.target === null)).toBe(true);
    expect(roles(show.rows[2]!)).toEqual(['down', 'down', 'mixed', 'mixed', 'mixed']);
  });

  it('static: the partition, unchanged by faults', () => {
    const show = dryRunPlan(cascade, { strategy: 'static', partition: { premium: 2, freemium: 3 } });
    expect(roles(show.rows[1]!)).toEqual(['down', 'premium', 'freemium', 'freemium', 'freemium']);
  });

  it('uses the given reference and shows paused, stopped and throttled replicas', () => {
    const plan = parsePlan(
      'name: t\nduration: 90\nreplicas: 6\nevents:\n' +
        '  - { at: 40, replica: r1, action: pause }\n' +
        '  - { at: 40, replica: r6, action: stop }\n' +
        '  - { at: 50, replica: r2, action: throttle, cpus: 0.2 }\n',
      't.yaml',
    );
    const show = dryRunPlan(plan, { strategy: 'plb', reference: { premium: 1, mixed: 1, freemium: 1 } });
    expect(show.reference).toEqual({ premium: 2, mixed: 2, freemium: 2 });
    // Two events at 40 s: only the last opens the phase.
    expect(show.rows.map((r) => r.phase)).toEqual([null, null, 'stop-1', 'throttle-1']);
    const last = show.rows[3]!;
    expect(last.survivors).toBe(4);
    expect(last.replicas.map((r) => r.state)).toEqual(['paused', 'up', 'up', 'up', 'up', 'stopped']);
    expect(last.replicas[1]!.cpus).toBe(0.2);
    expect(renderPlanShow(show, plan)).toMatch(/@0\.2cpu/);
  });

  it('renders a table with the events and the phases', () => {
    const out = renderPlanShow(dryRunPlan(cascade, { strategy: 'plb' }), cascade);
    expect(out).toContain('strategy plb, reference 2:1:2');
    expect(out).toMatch(/45s\s*│ down r2\s*│ down-2\s*│ 3\s*│ 2:0:1/);
    expect(out).toContain('phases: ref 10..30s K+=5 | down-1 30..45s K+=4');
  });
});
