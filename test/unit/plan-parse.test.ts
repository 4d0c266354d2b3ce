import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { loadPlan, parsePlan } from '../../src/faults/plan.js';
import { parseDuration } from '../../src/core/duration.js';

/** Valid header: duration 90 s, warm-up 10 s, reference 20 s, so the first fault may be at 30 s. */
const H = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n';
const ev = (...lines: string[]) => H + 'events:\n' + lines.map((l) => `  - { ${l} }\n`).join('');

const ACTIONS =
  'down, rejoin, stop, pause, unpause, throttle, pause-replay, resume-replay, partition, reset, loss, delay, bandwidth, heal, mark, zone-down, zone-up';
const DURATION_LIKE = 'must be a duration like 90, "90s", "2m", "1m30s" or "500ms"';

// [what, plan text, exact message]
const MALFORMED: [string, string, string][] = [
  [
    'YAML syntax error',
    'name: t\nduration: [90\n',
    'plans/x.yaml:3: yaml: Flow sequence in block collection must be sufficiently indented and end with a ]',
  ],
  ['duplicate key', 'name: t\nname: u\nduration: 90\n', 'plans/x.yaml:2: yaml: Map keys must be unique'],
  ['empty file', '', 'plans/x.yaml:1: plan: must be a mapping with name, duration and events (got nothing)'],
  [
    'top level is a list',
    '- a\n- b\n',
    'plans/x.yaml:1: plan: must be a mapping with name, duration and events (got a list)',
  ],
  ['name missing', 'duration: 90\n', 'plans/x.yaml:1: name: required'],
  [
    'name not a string',
    'name: 42\nduration: 90\n',
    'plans/x.yaml:1: name: must be a non-empty string (got 42)',
  ],
  ['name empty', 'name: ""\nduration: 90\n', 'plans/x.yaml:1: name: must be a non-empty string (got "")'],
  [
    'description a list',
    'name: t\nduration: 90\ndescription: [a]\n',
    'plans/x.yaml:3: description: must be a string (got a list)',
  ],
  [
    'unknown top-level key',
    'name: t\nduration: 90\nrefrence: 20s\n',
    'plans/x.yaml:3: refrence: unknown field (allowed: name, description, duration, warmup, reference, replicas, weights, cpus, zones, events)',
  ],
  ['non-string key', 'name: t\nduration: 90\n1: x\n', 'plans/x.yaml:3: plan: keys must be strings (got 1)'],
  ['duration missing', 'name: t\n', 'plans/x.yaml:1: duration: required'],
  [
    'duration not a duration',
    'name: t\nduration: abc\n',
    `plans/x.yaml:2: duration: ${DURATION_LIKE} (got "abc")`,
  ],
  ['duration zero', 'name: t\nduration: 0\n', 'plans/x.yaml:2: duration: must be > 0 (got 0)'],
  ['warmup negative', 'name: t\nduration: 90\nwarmup: -5\n', 'plans/x.yaml:3: warmup: must be >= 0 (got -5)'],
  [
    'replicas zero',
    'name: t\nduration: 90\nreplicas: 0\n',
    'plans/x.yaml:3: replicas: must be an integer from 1 to 64 (got 0)',
  ],
  [
    'replicas fractional',
    'name: t\nduration: 90\nreplicas: 2.5\n',
    'plans/x.yaml:3: replicas: must be an integer from 1 to 64 (got 2.5)',
  ],
  [
    'replicas too many',
    'name: t\nduration: 90\nreplicas: 65\n',
    'plans/x.yaml:3: replicas: must be an integer from 1 to 64 (got 65)',
  ],
  [
    'duration shorter than warmup + reference',
    'name: t\nduration: 30s\n',
    'plans/x.yaml:2: duration: must be at least warmup 10s + reference 30s = 40s (got 30s)',
  ],
  ['events a mapping', H + 'events:\n  at: 30\n', 'plans/x.yaml:6: events: must be a list (got a mapping)'],
  [
    'event a string',
    H + 'events:\n  - down r1 at 30\n',
    'plans/x.yaml:6: events[0]: must be a mapping with at, replica, action (got "down r1 at 30")',
  ],
  [
    'unknown event key',
    ev('at: 30, replica: r1, action: down, when: now'),
    'plans/x.yaml:6: events[0].when: unknown field (allowed: at, replica, zone, action, cpus, weight, direction, percent, what, link, ms, jitter, rate, for)',
  ],
  [
    'event without action',
    H + 'events:\n  - at: 30\n    replica: r1\n',
    'plans/x.yaml:6: events[0].action: required',
  ],
  [
    'unknown action',
    ev('at: 30, replica: r1, action: down', 'at: 40, replica: r2, action: explode'),
    `plans/x.yaml:7: events[1].action: must be one of ${ACTIONS} (got "explode")`,
  ],
  [
    'replica beyond K',
    ev('at: 30, replica: r6, action: down'),
    'plans/x.yaml:6: events[0].replica: must be one of r1..r5 (got "r6")',
  ],
  [
    'replica badly named',
    H + 'replicas: 3\nevents:\n  - { at: 30, replica: replica1, action: down }\n',
    'plans/x.yaml:7: events[0].replica: must be one of r1..r3 (got "replica1")',
  ],
  [
    'at not a duration',
    ev('at: 1x, replica: r1, action: down'),
    `plans/x.yaml:6: events[0].at: ${DURATION_LIKE} (got "1x")`,
  ],
  [
    'at without value',
    ev('at, replica: r1, action: down'),
    `plans/x.yaml:6: events[0].at: ${DURATION_LIKE} (got nothing)`,
  ],
  [
    'at at the end of the run',
    ev('at: 90s, replica: r1, action: down'),
    'plans/x.yaml:6: events[0].at: must be before duration 90s (got 90s)',
  ],
  [
    'first fault inside the reference window',
    ev('at: 25, replica: r1, action: down'),
    'plans/x.yaml:6: events[0].at: first fault at 25s leaves no full reference window; it must be at or after warmup 10s + reference 20s = 30s',
  ],
  [
    'events out of order',
    ev('at: 50, replica: r1, action: down', 'at: 40, replica: r2, action: down'),
    'plans/x.yaml:7: events[1].at: out of order: 40s is before events[0] at 50s (events must be sorted by time)',
  ],
  [
    'stop a down replica',
    ev('at: 30, replica: r1, action: down', 'at: 40, replica: r1, action: stop'),
    'plans/x.yaml:7: events[1].action: stop r1 needs it up and not paused (it is down since 30s)',
  ],
  [
    'pause-replay on a down replica',
    ev('at: 30, replica: r1, action: down', 'at: 40, replica: r1, action: pause-replay'),
    'plans/x.yaml:7: events[1].action: pause-replay r1 needs it up and not paused (it is down since 30s)',
  ],
  [
    'rejoin an up replica',
    ev('at: 30, replica: r1, action: rejoin'),
    'plans/x.yaml:6: events[0].action: rejoin r1 needs it down or stopped (it is up)',
  ],
  [
    'rejoin a paused replica',
    ev('at: 30, replica: r1, action: pause', 'at: 40, replica: r1, action: rejoin'),
    'plans/x.yaml:7: events[1].action: rejoin r1 needs it down or stopped (it is paused since 30s)',
  ],
  [
    'unpause an up replica',
    ev('at: 30, replica: r1, action: unpause'),
    'plans/x.yaml:6: events[0].action: unpause r1 needs it paused (it is up)',
  ],
  [
    'pause a stopped replica',
    ev('at: 30, replica: r1, action: stop', 'at: 35, replica: r1, action: pause'),
    'plans/x.yaml:7: events[1].action: pause r1 needs it up and not paused (it is stopped since 30s)',
  ],
  [
    'pause twice',
    ev('at: 30, replica: r1, action: pause', 'at: 40, replica: r1, action: pause'),
    'plans/x.yaml:7: events[1].action: pause r1 needs it up and not paused (it is paused since 30s)',
  ],
  [
    'throttle a down replica',
    ev('at: 30, replica: r1, action: down', 'at: 40, replica: r1, action: throttle, cpus: 0.5'),
    'plans/x.yaml:7: events[1].action: throttle r1 needs it running (it is down since 30s)',
  ],
  [
    'throttle without cpus',
    ev('at: 30, replica: r1, action: throttle'),
    'plans/x.yaml:6: events[0].cpus: required for action throttle',
  ],
  [
    'throttle to zero cpus',
    ev('at: 30, replica: r1, action: throttle, cpus: 0'),
    'plans/x.yaml:6: events[0].cpus: must be a number > 0 (got 0)',
  ],
  [
    'cpus on a non-throttle event',
    ev('at: 30, replica: r1, action: down, cpus: 1'),
    'plans/x.yaml:6: events[0].cpus: only allowed with action throttle (action is down)',
  ],
  ['unknown alias', ev('at: 30, replica: *r, action: down'), 'plans/x.yaml:6: yaml: unknown alias *r'],
];

describe('parsePlan rejects malformed plans with file, line and field', () => {
  it('has at least 20 cases', () => expect(MALFORMED.length).toBeGreaterThanOrEqual(20));

  it.each(MALFORMED)('%s', (_what, text, message) => {
    let caught: unknown;
    try {
      parsePlan(text, 'plans/x.yaml');
    } catch (err) {
      caught = err;
    }
    expect(isPlbError(caught, 'PLAN_INVALID')).toBe(true);
    expect((caught as Error).message).toBe(message);
    expect((caught as Error).message).not.toContain('\n');
  });
});

describe('parsePlan reports the error a reader looks for first', () => {
  const messageOf = (text: string): string => {
    try {
      parsePlan(text, 'p.yaml');
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('did not throw');
  };

  it('a misspelt field, not the "required" it causes', () =>
    expect(messageOf('name: t\nduraton: 90\n')).toBe(
      'p.yaml:2: duraton: unknown field (allowed: name, description, duration, warmup, reference, replicas, weights, cpus, zones, events)',
    ));

  it("a rule about a whole event at the event's first line, a field's value at its own", () => {
    expect(messageOf(H + 'events:\n  - at: 30\n    replica: r1\n    action: rejoin\n')).toBe(
      'p.yaml:6: events[0].action: rejoin r1 needs it down or stopped (it is up)',
    );
    expect(messageOf(H + 'events:\n  - at: 30\n    replica: r1\n    action: throttle\n    cpus: -1\n')).toBe(
      'p.yaml:9: events[0].cpus: must be a number > 0 (got -1)',
    );
  });

  it('a replica key beyond K at its key, in block style too', () =>
    expect(messageOf(H + 'weights:\n  r1: 1\n  r7: 2\n')).toBe(
      'p.yaml:7: weights: keys must be replicas r1..r5 (got "r7")',
    ));
});

describe('parsePlan accepts valid plans', () => {
  it('fills defaults and keeps event lines', () => {
    const plan = parsePlan(
      'name: p\nduration: 2m\nevents:\n  - at: 40\n    replica: r2\n    action: stop\n',
      'p.yaml',
    );
    expect(plan).toEqual({
      name: 'p',
      description: '',
      duration: 120,
      warmup: 10,
      referenceWindow: 30,
      replicas: 5,
      events: [{ at: 40, replica: 'r2', action: 'stop', line: 4 }],
    });
  });

  it('allows an empty or absent event list', () => {
    expect(parsePlan('name: p\nduration: 60\nevents: []\n', 'p.yaml').events).toEqual([]);
    expect(parsePlan('name: p\nduration: 60\n', 'p.yaml').events).toEqual([]);
  });

  it('keeps the written order of events at one time', () => {
    const plan = parsePlan(
      ev(
        'at: 30, replica: r3, action: down',
        'at: 30, replica: r1, action: down',
        'at: 30, replica: r3, action: rejoin',
      ),
      'p.yaml',
    );
    expect(plan.events.map((e) => `${e.action} ${e.replica}`)).toEqual(['down r3', 'down r1', 'rejoin r3']);
  });

  it('accepts every action in a legal sequence, with cpus for throttle', () => {
    const plan = parsePlan(
      ev(
        'at: 30, replica: r1, action: pause',
        'at: 31, replica: r1, action: throttle, cpus: 0.25',
        'at: 32, replica: r1, action: unpause',
        'at: 33, replica: r1, action: stop',
        'at: 34, replica: r1, action: rejoin',
        'at: 35, replica: r1, action: down',
        'at: 36, replica: r2, action: pause-replay',
        'at: 37, replica: r2, action: resume-replay',
      ),
      'p.yaml',
    );
    expect(plan.events.map((e) => e.action)).toEqual([
      'pause',
      'throttle',
      'unpause',
      'stop',
      'rejoin',
      'down',
      'pause-replay',
      'resume-replay',
    ]);
    expect(plan.events[1]?.cpus).toBe(0.25);
    expect(plan.events.map((e) => e.line)).toEqual([6, 7, 8, 9, 10, 11, 12, 13]);
  });

  it('allows every replica down (K+ = 0; the router reports NO_REPLICA)', () => {
    const plan = parsePlan(
      'name: p\nduration: 90\nreplicas: 2\nevents:\n' +
        '  - { at: 40, replica: r1, action: down }\n  - { at: 40, replica: r2, action: down }\n',
      'p.yaml',
    );
    expect(plan.events).toHaveLength(2);
  });
});

describe('parseDuration', () => {
  it.each([
    [90, 90],
    [0.5, 0.5],
    ['90', 90],
    ['90s', 90],
    ['2m', 120],
    ['1m30s', 90],
    ['500ms', 0.5],
    ['1h', 3600],
    ['1m30.5s', 90.5],
    ['1s250ms', 1.25],
  ])('%j -> %d s', (input, seconds) => expect(parseDuration(input)).toBe(seconds));

  it.each(['', 's', '1x', '2m1h', 'ms', '1.s', null, true, Infinity])('rejects %j', (input) =>
    expect(parseDuration(input)).toBeUndefined(),
  );
});

describe('plans/', () => {
  const files = readdirSync('plans').filter((f) => f.endsWith('.yaml'));

  it('has the paper plans, their demo versions, the demo and the fault-free one', () =>
    expect(files.sort()).toEqual([
      'cascade.yaml',
      'demo-cascade.yaml',
      'demo-single.yaml',
      'demo.yaml',
      'single-fault.yaml',
      'steady.yaml',
    ]));

  it.each(files)('%s is valid and named after its file', (file) => {
    const plan = loadPlan(`plans/${file}`);
    expect(plan.name).toBe(file.replace(/\.yaml$/, ''));
  });

  it('demo plans run at most 100 s', () => {
    expect(loadPlan('plans/demo-single.yaml').duration).toBeLessThanOrEqual(100);
    expect(loadPlan('plans/demo-cascade.yaml').duration).toBeLessThanOrEqual(100);
  });

  it('single-fault is the paper scenario', () => {
    const plan = loadPlan('plans/single-fault.yaml');
    expect(plan).toMatchObject({ duration: 300, warmup: 60, referenceWindow: 30, replicas: 5 });
    expect(plan.events.map(({ at, replica, action }) => ({ at, replica, action }))).toEqual([
      { at: 120, replica: 'r1', action: 'down' },
      { at: 210, replica: 'r1', action: 'rejoin' },
    ]);
  });

  it('a missing file is a one-line PLAN_INVALID', () => {
    expect(() => loadPlan('plans/nope.yaml')).toThrow('plans/nope.yaml: cannot read plan (no such file)');
  });
});
