import { describe, expect, it } from 'vitest';
import { parsePlan, planPhases } from '../../src/faults/plan.js';
import { dryRunPlan, renderPlanShow } from '../../src/faults/plan-show.js';

const H = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n';
const ZONES = 'zones: {r1: a, r2: a, r3: b, r4: b, r5: b}\n';
const parse = (text: string) => parsePlan(text, 'p.yaml');

describe('plan weights, cpus and zones', () => {
  it('reads per-replica maps; plans without them are unchanged', () => {
    const p = parse(H + 'weights: {r1: 2, r3: 0.5}\ncpus: {r5: 0.1}\n' + ZONES);
    expect(p.weights).toEqual({ r1: 2, r3: 0.5 });
    expect(p.cpus).toEqual({ r5: 0.1 });
    expect(p.zones).toEqual({ r1: 'a', r2: 'a', r3: 'b', r4: 'b', r5: 'b' });
    const old = parse(H);
    expect('weights' in old || 'cpus' in old || 'zones' in old).toBe(false);
  });

  it('names the line and field of a bad entry', () => {
    expect(() => parse(H + 'weights:\n  r1: 2\n  r2: 0\n')).toThrow(
      'p.yaml:7: weights.r2: must be a number > 0 (got 0)',
    );
    expect(() => parse(H + 'weights: {r9: 1}\n')).toThrow(
      'p.yaml:5: weights: keys must be replicas r1..r5 (got "r9")',
    );
    expect(() => parse(H + 'cpus: [1]\n')).toThrow('p.yaml:5: cpus: must be a mapping');
    expect(() => parse(H + 'zones: {r1: a}\n')).toThrow(
      'p.yaml:5: zones: give every replica a zone, or none (missing: r2, r3, r4, r5)',
    );
    expect(() => parse(H + 'zones: {r1: "a b", r2: a, r3: a, r4: a, r5: a}\n')).toThrow(
      'p.yaml:5: zones.r1: must be a zone name',
    );
  });

  it('expands zone-down and zone-up into one down/rejoin per replica at one time (one phase)', () => {
    const p = parse(
      H +
        ZONES +
        'events:\n  - { at: 40, action: zone-down, zone: a }\n  - { at: 60, action: zone-up, zone: a }\n',
    );
    expect(p.events.map((e) => [e.at, e.replica, e.action, e.zone, e.line])).toEqual([
      [40, 'r1', 'down', 'a', 7],
      [40, 'r2', 'down', 'a', 7],
      [60, 'r1', 'rejoin', 'a', 8],
      [60, 'r2', 'rejoin', 'a', 8],
    ]);
    const phases = planPhases(p).map((x) => [x.name, x.survivors]);
    // One phase per time: the zone's two downs open one (named after the last), K+ 3.
    expect(phases).toEqual([
      ['ref', 5],
      ['down-2', 3],
      ['rejoin-2', 5],
    ]);
  });

  it('checks zone events', () => {
    expect(() => parse(H + 'events:\n  - { at: 40, action: zone-down, zone: a }\n')).toThrow(
      "p.yaml:6: events[0].action: zone-down needs the plan's zones: mapping",
    );
    expect(() => parse(H + ZONES + 'events:\n  - { at: 40, action: zone-down, zone: c }\n')).toThrow(
      'p.yaml:7: events[0].zone: must be one of the plan\'s zones a, b (got "c")',
    );
    expect(() => parse(H + ZONES + 'events:\n  - { at: 40, action: zone-up, zone: a }\n')).toThrow(
      'zone-up a: rejoin r1 needs it down or stopped',
    );
    expect(() =>
      parse(H + ZONES + 'events:\n  - { at: 40, replica: r1, action: zone-down, zone: a }\n'),
    ).toThrow('events[0].replica: not allowed with action zone-down');
    expect(() => parse(H + ZONES + 'events:\n  - { at: 40, replica: r1, action: down, zone: a }\n')).toThrow(
      'events[0].zone: only allowed with action zone-down, zone-up, partition, reset, loss, delay, bandwidth or heal',
    );
  });

  it('throttle may set a weight; no other action may', () => {
    const p = parse(H + 'events:\n  - { at: 40, replica: r2, action: throttle, cpus: 0.1, weight: 0.5 }\n');
    expect(p.events[0]).toMatchObject({ action: 'throttle', cpus: 0.1, weight: 0.5 });
    expect(() => parse(H + 'events:\n  - { at: 40, replica: r2, action: down, weight: 2 }\n')).toThrow(
      'p.yaml:6: events[0].weight: only allowed with action throttle (action is down)',
    );
  });
});

describe('plan show with the guide fields', () => {
  it('runs each zone as its own pool and lists weights, cpus and zones', () => {
    const p = parse(H + 'weights: {r5: 0.5}\ncpus: {r5: 0.1}\n' + ZONES);
    const show = dryRunPlan(p, { strategy: 'plb' });
    expect(show.rows[0]?.target).toBeNull();
    const text = renderPlanShow(show, p);
    expect(text).toContain('weights: r5=0.5\ncpus: r5=0.1\nzones: r1=a r2=a r3=b r4=b r5=b');
  });
});
