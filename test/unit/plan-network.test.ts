// Plans with the newer network faults: delay, bandwidth, a partition's link, network faults by
// zone; their fields checked at their line, their phases and K+.
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { parsePlan, planPhases } from '../../src/faults/plan.js';
import { dryRunPlan, renderPlanShow } from '../../src/faults/plan-show.js';

const H = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n';
const ZONES = 'zones: { r1: a, r2: a, r3: b, r4: b, r5: b }\n';
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

describe('delay and bandwidth', () => {
  it('keep K+ and open delay-N and bandwidth-N; rates are bits per second', () => {
    const plan = parse(
      ev(
        'at: 30, replica: r1, action: delay, ms: 100, jitter: 20, for: 10s',
        'at: 50, replica: r2, action: bandwidth, rate: 512kbit',
        'at: 60, replica: r2, action: heal, what: bandwidth',
      ),
    );
    expect(plan.events.map((e) => [e.at, e.action, e.ms, e.jitter, e.rate, e.what])).toEqual([
      [30, 'delay', 100, 20, undefined, undefined],
      [40, 'heal', undefined, undefined, undefined, 'delay'],
      [50, 'bandwidth', undefined, undefined, 512_000, undefined],
      [60, 'heal', undefined, undefined, undefined, 'bandwidth'],
    ]);
    expect(planPhases(plan).map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['delay-1', 5],
      ['heal-1', 5],
      ['bandwidth-1', 5],
      ['heal-2', 5],
    ]);
  });

  it('refuse bad values at their line, naming the field', () => {
    expect(messageOf(ev('at: 30, replica: r1, action: delay'))).toBe(
      'p.yaml:6: events[0].ms: required for action delay',
    );
    expect(messageOf(ev('at: 30, replica: r1, action: delay, ms: 0'))).toBe(
      'p.yaml:6: events[0].ms: must be a number of milliseconds > 0 and <= 60000 (got 0)',
    );
    expect(messageOf(ev('at: 30, replica: r1, action: delay, ms: 10, jitter: 20'))).toBe(
      'p.yaml:6: events[0].jitter: must be at most ms (10) (got 20)',
    );
    expect(messageOf(ev('at: 30, replica: r1, action: bandwidth, rate: fast'))).toBe(
      'p.yaml:6: events[0].rate: must be a rate from 8kbit to 10gbit, like "10mbit" or "512kbit" (got "fast")',
    );
    expect(messageOf(ev('at: 30, replica: r1, action: loss, percent: 5, ms: 10'))).toBe(
      'p.yaml:6: events[0].ms: only allowed with action delay (action is loss)',
    );
  });
});

describe("a partition's link", () => {
  it('replication keeps K+ and opens partition-N; all cuts both and opens down-N', () => {
    const plan = parse(
      ev(
        'at: 30, replica: r1, action: partition, link: replication, for: 10s',
        'at: 50, replica: r2, action: partition, link: all',
        'at: 60, replica: r2, action: heal, what: partition',
      ),
    );
    expect(plan.events.map((e) => [e.at, e.replica, e.action, e.what])).toEqual([
      [30, 'r1', 'partition-replication', undefined],
      [40, 'r1', 'heal', 'partition'],
      [50, 'r2', 'partition-replication', undefined],
      [50, 'r2', 'partition', undefined],
      [60, 'r2', 'heal', 'partition'],
    ]);
    expect(planPhases(plan).map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['partition-1', 5],
      ['heal-1', 5],
      ['down-1', 4],
      ['rejoin-1', 5],
    ]);
  });

  it('is a partition field only, one of clients, replication, all', () => {
    expect(messageOf(ev('at: 30, replica: r1, action: partition, link: wal'))).toBe(
      'p.yaml:6: events[0].link: must be one of clients, replication, all (got "wal")',
    );
    expect(messageOf(ev('at: 30, replica: r1, action: reset, link: all'))).toBe(
      'p.yaml:6: events[0].link: only allowed with action partition (action is reset)',
    );
  });
});

describe('network faults by zone', () => {
  it('apply to every replica of the zone at once, and heal them together', () => {
    const plan = parse(
      H +
        ZONES +
        'events:\n  - { at: 30, zone: a, action: partition, for: 20s }\n  - { at: 60, zone: b, action: delay, ms: 50 }\n',
    );
    expect(plan.events.map((e) => [e.at, e.replica, e.action, e.zone])).toEqual([
      [30, 'r1', 'partition', 'a'],
      [30, 'r2', 'partition', 'a'],
      [50, 'r1', 'heal', undefined],
      [50, 'r2', 'heal', undefined],
      [60, 'r3', 'delay', 'b'],
      [60, 'r4', 'delay', 'b'],
      [60, 'r5', 'delay', 'b'],
    ]);
    const phases = planPhases(plan).map((p) => [p.name, p.survivors]);
    expect(phases[1]).toEqual(['down-2', 3]);
    expect(renderPlanShow(dryRunPlan(plan, { strategy: 'rr' }), plan)).toContain('delay r5 (50 ms)');
  });

  it('needs the plan zones, one of them, and a zone or a replica but not both', () => {
    expect(messageOf(ev('at: 30, zone: a, action: partition'))).toBe(
      "p.yaml:6: events[0].action: partition needs the plan's zones: mapping",
    );
    expect(messageOf(H + ZONES + 'events:\n  - { at: 30, zone: c, action: loss, percent: 1 }\n')).toBe(
      'p.yaml:7: events[0].zone: must be one of the plan\'s zones a, b (got "c")',
    );
    expect(messageOf(ev('at: 30, zone: a, replica: r1, action: reset'))).toBe(
      'p.yaml:6: events[0].zone: give a replica or a zone, not both',
    );
    expect(messageOf(ev('at: 30, zone: a, action: throttle, cpus: 0.1'))).toBe(
      'p.yaml:6: events[0].zone: only allowed with action zone-down, zone-up, partition, reset, loss, delay, bandwidth or heal',
    );
  });
});
