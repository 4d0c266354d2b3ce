import { describe, expect, it } from 'vitest';
import type { FaultPlan } from '../../src/run-format/plan.js';
import {
  phaseNameFor,
  replicaStateAfter,
  stateAfter,
  survivorDelta,
  survivorsAfterEvent,
} from '../../src/faults/actions.js';
import { loadPlan, parsePlan, planPhases } from '../../src/faults/plan.js';

const plan = (events: string[], head = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n'): FaultPlan =>
  parsePlan(head + 'events:\n' + events.map((l) => `  - { ${l} }\n`).join(''), 't.yaml');

describe('phase naming and survivors', () => {
  it('names a phase after the action and its count', () => {
    expect(phaseNameFor('down', 1)).toBe('down-1');
    expect(phaseNameFor('rejoin', 2)).toBe('rejoin-2');
    expect(phaseNameFor('throttle', 3)).toBe('throttle-3');
  });

  it('down/stop/pause remove a survivor, rejoin/unpause add one, throttle keeps K+', () => {
    expect(
      ['down', 'stop', 'pause', 'rejoin', 'unpause', 'throttle', 'pause-replay', 'resume-replay'].map((a) =>
        survivorDelta(a as never),
      ),
    ).toEqual([-1, -1, -1, 1, 1, 0, 0, 0]);
    expect(survivorsAfterEvent(5, 'down')).toBe(4);
    expect(survivorsAfterEvent(4, 'unpause')).toBe(5);
  });

  it('maps every action to the state a health checker should see, agreeing with K+ and the plan state', () => {
    const actions = [
      'down',
      'stop',
      'pause',
      'rejoin',
      'unpause',
      'throttle',
      'pause-replay',
      'resume-replay',
    ] as const;
    // A replica with replay paused is lagging, not down.
    expect(actions.map((a) => replicaStateAfter(a))).toEqual([
      'down',
      'down',
      'down',
      'up',
      'up',
      null,
      null,
      null,
    ]);
    for (const a of actions) {
      const healthyAfter = stateAfter(a, 'up') === 'up';
      if (survivorDelta(a) !== 0) expect(replicaStateAfter(a) === 'up').toBe(healthyAfter);
    }
    // An event read back from events.jsonl may carry anything.
    expect(replicaStateAfter('reboot')).toBeNull();
    expect(replicaStateAfter('toString')).toBeNull();
  });
});

describe('planPhases', () => {
  it('splits the demo cascade into ref and one phase per event', () => {
    expect(planPhases(loadPlan('plans/demo-cascade.yaml'))).toEqual([
      { name: 'ref', startS: 10, endS: 30, survivors: 5, down: [] },
      { name: 'down-1', startS: 30, endS: 45, survivors: 4, down: ['r1'] },
      { name: 'down-2', startS: 45, endS: 60, survivors: 3, down: ['r1', 'r2'] },
      { name: 'rejoin-1', startS: 60, endS: 75, survivors: 4, down: ['r2'] },
      { name: 'rejoin-2', startS: 75, endS: 90, survivors: 5, down: [] },
    ]);
  });

  it('puts the paper single fault ref window at 90..120 s', () => {
    expect(planPhases(loadPlan('plans/single-fault.yaml'))).toEqual([
      { name: 'ref', startS: 90, endS: 120, survivors: 5, down: [] },
      { name: 'down-1', startS: 120, endS: 210, survivors: 4, down: ['r1'] },
      { name: 'rejoin-1', startS: 210, endS: 300, survivors: 5, down: [] },
    ]);
  });

  it('makes events at one time one boundary named after the last of them', () => {
    const phases = planPhases(
      plan([
        'at: 30, replica: r1, action: down',
        'at: 30, replica: r2, action: stop',
        'at: 50, replica: r2, action: rejoin',
      ]),
    );
    expect(phases.map((p) => [p.name, p.startS, p.endS, p.survivors, p.down])).toEqual([
      ['ref', 10, 30, 5, []],
      ['stop-1', 30, 50, 3, ['r1', 'r2']],
      ['rejoin-1', 50, 90, 4, ['r1']],
    ]);
  });

  it('counts pause, unpause and throttle; throttle keeps K+', () => {
    const phases = planPhases(
      plan([
        'at: 40, replica: r3, action: pause',
        'at: 50, replica: r4, action: throttle, cpus: 0.1',
        'at: 60, replica: r3, action: unpause',
        'at: 70, replica: r4, action: throttle, cpus: 0.4',
      ]),
    );
    expect(phases.map((p) => [p.name, p.survivors, p.down])).toEqual([
      ['ref', 5, []],
      ['pause-1', 4, ['r3']],
      ['throttle-1', 4, ['r3']],
      ['unpause-1', 5, []],
      ['throttle-2', 5, []],
    ]);
    // The ref window is the reference length before the first fault, even when warm-up ends earlier.
    expect(phases[0]).toMatchObject({ startS: 20, endS: 40 });
  });

  it('sorts down replicas numerically', () => {
    const head = 'name: t\nduration: 90\nreplicas: 12\n';
    const phases = planPhases(
      plan(['at: 40, replica: r10, action: down', 'at: 41, replica: r2, action: down'], head),
    );
    expect(phases.at(-1)?.down).toEqual(['r2', 'r10']);
  });

  it('makes the whole run after warm-up one steady phase when there are no events', () => {
    expect(planPhases(plan([]))).toEqual([{ name: 'steady', startS: 10, endS: 90, survivors: 5, down: [] }]);
  });
});
