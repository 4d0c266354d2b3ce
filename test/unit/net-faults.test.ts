// Network faults in plans: their specs, the plan rules for stacking and healing (line-numbered
// errors), the phases and plan show's K+, the iptables rules the local driver adds, and every
// driver, the simulator's too, taking them.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock/index.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import { chainName, faultRules } from '../../src/cluster/net/iptables.js';
import { isPlbError } from '../../src/core/errors.js';
import { Injector } from '../../src/faults/injector.js';
import { loadPlan, parsePlan, planPhases } from '../../src/faults/plan.js';
import { dryRunPlan, renderPlanShow } from '../../src/faults/plan-show.js';
import { driverApplies, FAULT_ACTION_SPECS, NETWORK_ACTIONS } from '../../src/run-format/fault-actions.js';
import { detectionRecords } from '../../src/metrics/summary/detections.js';
import type { RunEvent } from '../../src/metrics/types.js';
import { withFakeFaults } from '../helpers/fake-faults.js';
import { benchFlagValues } from '../helpers/fixtures.js';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';

const H = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n';
const ev = (...lines: string[]) => H + 'events:\n' + lines.map((l) => `  - { ${l} }\n`).join('');
const parse = (text: string) => parsePlan(text, 'p.yaml');

function messageOf(text: string): string {
  try {
    parse(text);
  } catch (err) {
    expect(isPlbError(err, 'PLAN_INVALID')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('did not throw');
}

describe('network fault specs', () => {
  it('partition and reset lower K+ like down; loss keeps it; heal brings the replica back', () => {
    expect(FAULT_ACTION_SPECS.partition).toMatchObject({ survivors: -1, phase: 'down', undoneBy: 'heal' });
    expect(FAULT_ACTION_SPECS.reset).toMatchObject({ survivors: -1, phase: 'down', undoneBy: 'heal' });
    expect(FAULT_ACTION_SPECS.loss).toMatchObject({ survivors: 0, phase: 'degraded', undoneBy: 'heal' });
    expect(FAULT_ACTION_SPECS.heal).toMatchObject({ survivors: 1, after: 'up', undoneBy: null });
    for (const a of NETWORK_ACTIONS) expect(FAULT_ACTION_SPECS[a].network).toBe(true);
  });

  it('are applied by every driver (the simulator models them)', () => {
    for (const a of [...NETWORK_ACTIONS, 'heal'] as const) {
      expect(driverApplies(a, 'local')).toBe(true);
      expect(driverApplies(a, 'external')).toBe(true);
      expect(driverApplies(a, 'docker')).toBe(true);
      expect(driverApplies(a, 'sim')).toBe(true);
    }
    expect(driverApplies('down', 'sim')).toBe(true);
  });
});

describe('plans with network faults', () => {
  it('stack per replica, and the phases follow K+', () => {
    const plan = parse(
      ev(
        'at: 30, replica: r1, action: loss, percent: 5',
        'at: 40, replica: r1, action: partition, direction: in',
        'at: 50, replica: r1, action: reset',
        'at: 60, replica: r1, action: heal',
        'at: 70, replica: r2, action: loss, percent: 100',
        'at: 80, replica: r2, action: heal, what: loss',
      ),
    );
    expect(plan.events.map((e) => [e.action, e.direction, e.percent, e.what, e.line])).toEqual([
      ['loss', undefined, 5, undefined, 6],
      ['partition', 'in', undefined, undefined, 7],
      ['reset', undefined, undefined, undefined, 8],
      ['heal', undefined, undefined, undefined, 9],
      ['loss', undefined, 100, undefined, 10],
      ['heal', undefined, undefined, 'loss', 11],
    ]);
    expect(planPhases(plan).map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['loss-1', 5],
      ['down-1', 4],
      ['down-2', 4],
      ['rejoin-1', 5],
      ['loss-2', 5],
      ['heal-1', 5],
    ]);
    const show = dryRunPlan(plan, { strategy: 'rr' });
    expect(show.rows.map((r) => r.survivors)).toEqual([5, 5, 4, 4, 5, 5, 5]);
    expect(show.rows[2]?.replicas[0]?.state).toBe('cut');
    expect(renderPlanShow(show, plan)).toContain('partition r1 (in)');
    expect(renderPlanShow(show, plan)).toContain('loss r1 (5 %)');
  });

  it('a for: heals the fault after that long, in time order with the other events', () => {
    const plan = parse(
      ev(
        'at: 30, replica: r1, action: partition, for: 10s',
        'at: 35, replica: r2, action: loss, percent: 5, for: 100s',
        'at: 45, replica: r1, action: reset',
      ),
    );
    expect(plan.events.map((e) => [e.at, e.replica, e.action, e.what, e.line])).toEqual([
      [30, 'r1', 'partition', undefined, 6],
      [35, 'r2', 'loss', undefined, 7],
      [40, 'r1', 'heal', 'partition', 6],
      [45, 'r1', 'reset', undefined, 8],
    ]);
    expect(planPhases(plan).map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['down-1', 4],
      ['loss-1', 4],
      ['rejoin-1', 5],
      ['down-2', 4],
    ]);
  });

  // [what, plan, exact message]
  const BAD: [string, string, string][] = [
    [
      'heal with nothing in force',
      ev('at: 30, replica: r1, action: heal'),
      'p.yaml:6: events[0].action: heal r1: needs a network fault in force (it has none)',
    ],
    [
      'heal of a kind not in force',
      ev('at: 30, replica: r1, action: loss, percent: 1', 'at: 40, replica: r1, action: heal, what: reset'),
      'p.yaml:7: events[1].what: heal r1: reset is not in force (in force: loss)',
    ],
    [
      'a partial heal that leaves the replica cut off',
      ev(
        'at: 30, replica: r1, action: partition',
        'at: 31, replica: r1, action: loss, percent: 1',
        'at: 40, replica: r1, action: heal, what: loss',
      ),
      'p.yaml:8: events[2].what: heal r1: leaves partition in force: heal it whole (without what) or end those first',
    ],
    [
      'the same fault twice',
      ev('at: 30, replica: r2, action: partition', 'at: 40, replica: r2, action: partition, direction: out'),
      'p.yaml:7: events[1].action: partition r2: already in force since 30s (heal it first)',
    ],
    [
      'a kill of a cut-off replica',
      ev('at: 30, replica: r1, action: reset', 'at: 40, replica: r1, action: down'),
      'p.yaml:7: events[1].action: down r1 needs it up and not paused (it is cut since 30s)',
    ],
    [
      'a partition of a killed replica',
      ev('at: 30, replica: r1, action: down', 'at: 40, replica: r1, action: partition'),
      'p.yaml:7: events[1].action: partition r1 needs it up (or only cut off by the network) (it is down since 30s)',
    ],
    [
      'loss without percent',
      ev('at: 30, replica: r1, action: loss'),
      'p.yaml:6: events[0].percent: required for action loss',
    ],
    [
      'loss over 100 %',
      ev('at: 30, replica: r1, action: loss, percent: 150'),
      'p.yaml:6: events[0].percent: must be a percentage > 0 and <= 100 (got 150)',
    ],
    [
      'a direction that is none',
      ev('at: 30, replica: r1, action: partition, direction: sideways'),
      'p.yaml:6: events[0].direction: must be one of in, out, both (got "sideways")',
    ],
    [
      'a direction on a reset',
      ev('at: 30, replica: r1, action: reset, direction: in'),
      'p.yaml:6: events[0].direction: only allowed with action partition (action is reset)',
    ],
    [
      'heal of an action that is no network fault',
      ev('at: 30, replica: r1, action: partition', 'at: 40, replica: r1, action: heal, what: down'),
      'p.yaml:7: events[1].what: must be one of partition, reset, loss, delay, bandwidth (got "down")',
    ],
    [
      'a for: on an action that is no network fault',
      ev('at: 30, replica: r1, action: down, for: 5s'),
      'p.yaml:6: events[0].for: only allowed with action partition, reset, loss, delay, bandwidth (action is down)',
    ],
    [
      'a for: that ends a fault healed before',
      ev('at: 30, replica: r1, action: loss, percent: 1, for: 20s', 'at: 40, replica: r1, action: heal'),
      'p.yaml:6: events[0].for: loss r1 ends at 50s, but it was healed before',
    ],
    [
      'a for: that would leave the replica cut off',
      ev('at: 30, replica: r1, action: loss, percent: 1, for: 20s', 'at: 40, replica: r1, action: partition'),
      'p.yaml:6: events[0].for: loss r1 ends at 50s: heal r1: leaves partition in force: heal it whole (without what) or end those first',
    ],
  ];
  it.each(BAD)('refuses %s, at its line', (_what, text, message) => expect(messageOf(text)).toBe(message));

  it('plans/guide network plans are valid and named after their file', () => {
    const files = readdirSync('plans/guide').filter((f) =>
      ['partitioned-replica', 'one-way-partition', 'lossy-link'].some((n) => f === `${n}.yaml`),
    );
    expect(files).toHaveLength(3);
    for (const f of files) {
      const plan = loadPlan(`plans/guide/${f}`);
      expect(plan.name).toBe(`guide-${f.replace(/\.yaml$/, '')}`);
      expect(plan.events.some((e) => e.action === 'heal')).toBe(true);
    }
  });
});

describe('the local driver rules', () => {
  it('are on lo only, scoped to the port, one way or both', () => {
    const t = { port: 25433, primaryPort: 25432 };
    const inbound = ['-i', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', '25433'];
    const outbound = ['-o', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', '25433'];
    expect(faultRules('partition', t, {})).toEqual([
      [...inbound, '-j', 'DROP'],
      [...outbound, '-j', 'DROP'],
    ]);
    expect(faultRules('partition', t, { direction: 'in' })).toEqual([[...inbound, '-j', 'DROP']]);
    expect(faultRules('partition', t, { direction: 'out' })).toEqual([[...outbound, '-j', 'DROP']]);
    const rst = ['!', '--tcp-flags', 'RST', 'RST', '-j', 'REJECT', '--reject-with', 'tcp-reset'];
    expect(faultRules('reset', t, {})).toEqual([
      [...inbound, ...rst],
      [...outbound, ...rst],
    ]);
    const drop = ['-m', 'statistic', '--mode', 'random', '--probability', '0.0500', '-j', 'DROP'];
    expect(faultRules('loss', t, { percent: 5 })).toEqual([
      [...inbound, ...drop],
      [...outbound, ...drop],
    ]);
    for (const r of [...faultRules('partition', t, {}), ...faultRules('loss', t, { percent: 1 })])
      expect(r.includes('lo')).toBe(true);
  });

  it("live in a chain named after the cluster's id", () =>
    expect(chainName('0123456789ab')).toBe('PLB-01234567'));
});

describe('the injector', () => {
  it('takes a network fault on the simulated driver', () => {
    const driver = withFakeFaults({ kind: 'sim' } as unknown as Omit<ClusterDriver, 'faults'>);
    const make = () =>
      new Injector({
        driver,
        events: [{ at: 40, replica: 'r2', action: 'partition', line: 7 }],
        clock: realClock(),
        defaultCpus: 0.25,
        onInjected: () => undefined,
      });
    expect(make).not.toThrow();
  });
});

describe('detection records', () => {
  it('expect one only where a network fault changes what the router could notice', () => {
    const fault = (tMs: number, replica: string, action: string) => ({ type: 'fault', tMs, replica, action });
    const events = [
      fault(1000, 'r1', 'partition'),
      { type: 'detect', tMs: 1500, replica: 'r1', state: 'down' },
      fault(2000, 'r1', 'reset'),
      fault(3000, 'r1', 'heal'),
      { type: 'detect', tMs: 3200, replica: 'r1', state: 'up' },
      fault(4000, 'r2', 'loss'),
      fault(5000, 'r2', 'heal'),
    ] as unknown as RunEvent[];
    expect(detectionRecords(events).map((r) => [r.replica, r.action, r.delayMs])).toEqual([
      ['r1', 'partition', 500],
      ['r1', 'heal', 200],
    ]);
  });
});

describe('bench resolution', () => {
  it('a bench on the simulated driver takes a plan with network faults', () => {
    const out = mkdtempSync(join(tmpdir(), 'plb-net-resolve-'));
    try {
      const flags = benchFlagValues(out, 'net', 20432, {
        plan: 'plans/guide/partitioned-replica.yaml',
        driver: 'sim',
      });
      expect(resolveBenchFlags(flags).cluster.driver).toBe('sim');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
