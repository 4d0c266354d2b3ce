// The fault-action registry: its specs agree with each other, and what lists or runs actions reads it.
import { describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock/index.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import { actionRequirement, stateAfter } from '../../src/faults/actions.js';
import { Injector } from '../../src/faults/injector.js';
import { recoveryTails } from '../../src/metrics/summary/recovery-tail.js';
import { HOOK_NAMES } from '../../src/run-format/cluster-file.js';
import { FAULT_ACTION_SPECS, FAULT_ACTIONS, type FaultAction } from '../../src/run-format/fault-actions.js';
import { faultActionSchema, type FaultEvent } from '../../src/run-format/plan.js';
import { withFakeFaults } from '../helpers/fake-faults.js';

describe('fault-action specs', () => {
  it('are the plan schema enum, in order', () => {
    expect(faultActionSchema.options).toEqual(FAULT_ACTIONS);
  });

  it('agree: the phase kind with K+, the undo with the states', () => {
    for (const a of FAULT_ACTIONS) {
      const s = FAULT_ACTION_SPECS[a];
      if (s.phase === 'down') expect(s.survivors, a).toBe(-1);
      if (s.phase === 'recovery') expect([s.survivors, s.after], a).toEqual([1, 'up']);
      if (s.phase === 'degraded') expect(s.survivors, a).toBe(0);
      // A mark changes nothing: no replica's state, no K+, nothing to undo or check.
      if (s.phase === 'mark')
        expect([s.survivors, s.after, s.undoneBy, s.check], a).toEqual([0, 'unchanged', null, null]);
      if (s.after === 'unchanged') expect(s.survivors, a).toBe(0);
      if (s.undoneBy === null) continue;
      // The undo can be taken right after the action, and leaves the replica where it could take it again.
      for (const from of s.from.states) {
        const mid = stateAfter(a, from);
        expect(actionRequirement(s.undoneBy, mid), `${a} then ${s.undoneBy} from ${from}`).toBeUndefined();
        expect(s.from.states, `${a} undone from ${from}`).toContain(stateAfter(s.undoneBy, mid));
      }
    }
  });

  it('name the cluster file hooks: one per action that runs a command, and cpu', () => {
    expect(HOOK_NAMES).toEqual([...FAULT_ACTIONS.filter((a) => FAULT_ACTION_SPECS[a].hook), 'cpu']);
  });
});

describe('the injector reads the specs', () => {
  function driver(calls: string[]): ClusterDriver {
    const act = (name: string) => async (id: string) => void calls.push(`${name} ${id}`);
    const d: Omit<ClusterDriver, 'faults'> = {
      kind: 'local',
      cpusEnforced: true,
      spec: {
        name: 't',
        replicas: 5,
        basePort: 1,
        cpus: 0.25,
        primaryCpus: 0.5,
        memoryMb: 64,
        maxConnections: 100,
        stateDir: '/tmp',
      },
      up: async () => undefined,
      down: async () => undefined,
      status: async () => [],
      endpoints: () => [],
      credentials: async () => ({ user: 'u', password: 'p', database: 'd' }),
      kill: act('kill'),
      start: act('start'),
      stop: act('stop'),
      pause: act('pause'),
      unpause: act('unpause'),
      setCpus: act('cpus'),
      setReplayPaused: async (id, paused) => void calls.push(`${paused ? 'pause' : 'resume'}-replay ${id}`),
      cpuSeconds: async () => ({}),
      waitReady: async () => undefined,
      connector: () => ({ open: () => Promise.reject(new Error('no server here')) }),
      prepareDataset: async () => ({ loaded: false, ms: 0 }),
    };
    return withFakeFaults(d, calls);
  }

  it('undoes every action left in effect with the action its spec names', async () => {
    const undone = FAULT_ACTIONS.filter(
      (a) => FAULT_ACTION_SPECS[a].undoneBy !== null && FAULT_ACTION_SPECS[a].from.states.includes('up'),
    );
    const events: FaultEvent[] = undone.map((action, i) => ({
      at: 0,
      replica: `r${i + 1}`,
      action,
      line: 0,
      ...(FAULT_ACTION_SPECS[action].fields.cpus === 'required' ? { cpus: 0.1 } : {}),
    }));
    const calls: string[] = [];
    const injector = new Injector({
      driver: driver(calls),
      events,
      clock: realClock(),
      defaultCpus: 0.25,
      onInjected: () => undefined,
    });
    injector.start();
    await new Promise((r) => setTimeout(r, 100));
    await injector.stop();
    calls.length = 0;
    const restored = await injector.restore();
    // One step per replica, each the undo of what that replica was left with.
    const undoOf = new Map(events.map((e) => [e.replica, FAULT_ACTION_SPECS[e.action].undoneBy]));
    expect(restored).toHaveLength(events.length);
    const label: Record<string, string> = {
      rejoin: 'start',
      unpause: 'unpause',
      throttle: 'cpus',
      'resume-replay': 'resume replay',
      heal: 'heal',
    };
    for (const line of restored) {
      const id = line.split(' ').at(-1)!;
      expect(line).toBe(`${label[undoOf.get(id) as FaultAction]} ${id}`);
    }
  });
});

describe('recovery phases', () => {
  const series = { length: 0, endMs: () => 0, latencyUs: () => 0 };
  const phase = (name: string, kind?: 'recovery' | 'down') => ({
    name,
    startMs: 0,
    endMs: 20_000,
    survivors: 5,
    down: [],
    ...(kind ? { kind } : {}),
  });
  it('are found by their kind, not by their name', () => {
    const tails = (p: ReturnType<typeof phase>) =>
      recoveryTails({ premium: series, freemium: series }, [p], { premium: 1, freemium: 1 }, 20_000).map(
        (t) => t.phase,
      );
    expect(tails(phase('rejoin-1', 'recovery'))).toEqual(['rejoin-1']);
    expect(tails(phase('rejoin-1', 'down'))).toEqual([]);
    expect(tails(phase('later-action-1', 'recovery'))).toEqual(['later-action-1']);
  });
});
