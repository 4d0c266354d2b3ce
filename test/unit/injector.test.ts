import { describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock/index.js';
import { withFakeFaults } from '../helpers/fake-faults.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import { Injector, type InjectedFault } from '../../src/faults/injector.js';
import type { FaultEvent } from '../../src/run-format/plan.js';

function fakeDriver(calls: string[], failOn?: string, stillUp?: string): ClusterDriver {
  const act = (name: string) => async (id: string, cpus?: number) => {
    calls.push(cpus === undefined ? `${name} ${id}` : `${name} ${id} ${cpus}`);
    if (`${name} ${id}` === failOn) throw new Error('boom');
  };
  const d: Omit<ClusterDriver, 'faults'> = {
    kind: 'local',
    cpusEnforced: true,
    spec: {
      name: 't',
      replicas: 3,
      basePort: 1,
      cpus: 0.25,
      primaryCpus: 0.5,
      memoryMb: 64,
      maxConnections: 100,
      stateDir: '/tmp',
    },
    up: async () => undefined,
    down: async () => undefined,
    // A server that shrugs off its kill: the driver call returns, the status says it is up.
    status: async () =>
      stillUp === undefined
        ? []
        : [
            {
              id: stillUp,
              kind: 'replica',
              port: 1,
              up: true,
              paused: false,
              replication: null,
              lagBytes: null,
              replayLagSeconds: null,
              cpus: null,
            },
          ],
    endpoints: () => [],
    credentials: async () => ({ user: 'u', password: 'p', database: 'd' }),
    kill: act('kill'),
    start: act('start'),
    stop: act('stop'),
    pause: act('pause'),
    unpause: act('unpause'),
    setCpus: act('cpus'),
    setReplayPaused: async (id: string, paused: boolean) => {
      calls.push(`${paused ? 'pause-replay' : 'resume-replay'} ${id}`);
    },
    cpuSeconds: async () => ({}),
    waitReady: async () => undefined,
    connector: () => ({ open: () => Promise.reject(new Error('no server here')) }),
    prepareDataset: async () => ({ loaded: false, ms: 0 }),
  };
  return withFakeFaults(d, calls);
}

const ev = (at: number, replica: string, action: FaultEvent['action'], cpus?: number): FaultEvent => ({
  at,
  replica,
  action,
  line: 0,
  ...(cpus !== undefined ? { cpus } : {}),
});

async function runAll(events: FaultEvent[], failOn?: string, stillUp?: string) {
  const calls: string[] = [];
  const faults: InjectedFault[] = [];
  const notTaken: string[] = [];
  const injector = new Injector({
    driver: fakeDriver(calls, failOn, stillUp),
    events,
    clock: realClock(),
    defaultCpus: 0.25,
    onInjected: (f) => faults.push(f),
    onNotTaken: (f, reason) => notTaken.push(`${f.event.action} ${f.event.replica}: ${reason}`),
  });
  injector.start();
  await new Promise((r) => setTimeout(r, 150));
  await injector.stop();
  return { calls, faults, injector, notTaken };
}

describe('Injector', () => {
  it('applies events in the written order and gives events at one time one boundary', async () => {
    const { calls, faults } = await runAll([
      ev(0, 'r2', 'down'),
      ev(0, 'r1', 'pause'),
      ev(0.05, 'r3', 'throttle', 0.1),
    ]);
    expect(calls).toEqual(['kill r2', 'pause r1', 'cpus r3 0.1']);
    expect(faults.map((f) => f.event.replica)).toEqual(['r2', 'r1', 'r3']);
    expect(faults[1]?.tMs).toBe(faults[0]?.tMs);
    expect(faults[2]?.tMs).toBeGreaterThan(faults[0]?.tMs ?? Infinity);
  });

  it('records a failed action as an error instead of throwing', async () => {
    const { faults } = await runAll([ev(0, 'r1', 'down')], 'kill r1');
    expect(faults[0]?.error).toBe('boom');
  });

  it('reports a kill that did not happen (the status still shows the replica up), off the injection path', async () => {
    const { faults, notTaken } = await runAll([ev(0, 'r1', 'down'), ev(0, 'r1', 'rejoin')], undefined, 'r1');
    // Both injected at once (the check does not hold the next event back); only the kill failed.
    expect(faults.map((f) => f.event.action)).toEqual(['down', 'rejoin']);
    expect(faults[0]?.error).toBeUndefined();
    expect(notTaken).toEqual(['down r1: r1 is still up after down']);
  });

  it('restores what the run changed: starts killed replicas, unpauses, resets quotas', async () => {
    const { calls, injector } = await runAll([
      ev(0, 'r1', 'down'),
      ev(0, 'r2', 'pause'),
      ev(0, 'r3', 'throttle', 0.1),
      ev(0, 'r4', 'down'),
      ev(0, 'r4', 'rejoin'),
    ]);
    calls.length = 0;
    expect(await injector.restore()).toEqual(['unpause r2', 'start r1', 'cpus r3']);
    expect(calls).toEqual(['unpause r2', 'start r1', 'cpus r3 0.25']);
    expect(await injector.restore()).toEqual([]);
  });

  it('pauses and resumes replay through the driver, and resumes a replay left paused on restore', async () => {
    const { calls, injector } = await runAll([
      ev(0, 'r1', 'pause-replay'),
      ev(0, 'r2', 'pause-replay'),
      ev(0, 'r1', 'resume-replay'),
    ]);
    expect(calls).toEqual(['pause-replay r1', 'pause-replay r2', 'resume-replay r1']);
    calls.length = 0;
    expect(await injector.restore()).toEqual(['resume replay r2']);
    expect(calls).toEqual(['resume-replay r2']);
  });

  it('drops events not yet due when stopped', async () => {
    const { calls } = await runAll([ev(0, 'r1', 'down'), ev(60, 'r1', 'rejoin')]);
    expect(calls).toEqual(['kill r1']);
  });
});
