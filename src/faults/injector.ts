import type { Clock } from '../clock/index.js';
import type { ClusterDriver } from '../cluster/driver.js';
import { errorText } from '../core/errors.js';
import type { FaultEvent } from '../run-format/plan.js';

export interface InjectedFault {
  event: FaultEvent;
  /**
   * The phase boundary (DESIGN.md: the time the fault was injected): when plb issued the action.
   * A rejoin's restart (recovery, catching up) therefore counts in the rejoin phase, and its
   * detection delay includes the time the server took to come back.
   */
  tMs: number;
  /** Run time the action was issued. */
  issuedMs: number;
  /** Run time the driver call returned. */
  doneMs: number;
  error?: string;
}

export interface InjectorOptions {
  driver: ClusterDriver;
  events: readonly FaultEvent[];
  /** The run's clock. */
  clock: Clock;
  /** Replica CPU quota to restore after a throttle. */
  defaultCpus: number;
  onInjected: (fault: InjectedFault) => void;
  /** A fault whose action returned but did not take (checked after, off the injection path). */
  onNotTaken?: (fault: InjectedFault, reason: string) => void;
  /** Log line for the terminal. */
  log?: (line: string) => void;
}

/**
 * The state a replica must be in after each action. Not checked: throttle, and rejoin (the
 * driver's start resolves only once the server accepts connections, and a busy server can miss a
 * status query's timeout: a saturated server is not a dead one).
 */
const EXPECTED: Partial<
  Record<FaultEvent['action'], { field: 'up' | 'paused'; value: boolean; wrong: string }>
> = {
  down: { field: 'up', value: false, wrong: 'still up' },
  stop: { field: 'up', value: false, wrong: 'still up' },
  pause: { field: 'paused', value: true, wrong: 'not paused' },
  unpause: { field: 'paused', value: false, wrong: 'still paused' },
};

/**
 * Applies the plan's events at their times, one after another in the order written (events at
 * one time keep their order). It never tells the router: detection is the health checker's job.
 */
export class Injector {
  private stopped = false;
  private readonly wake = new AbortController();
  private loop: Promise<void> | undefined;
  /** What the run changed and must undo when it ends early. */
  private readonly down = new Set<string>();
  private readonly paused = new Set<string>();
  private readonly throttled = new Set<string>();
  private readonly replayPaused = new Set<string>();
  private readonly checks = new Set<Promise<void>>();

  constructor(private readonly opts: InjectorOptions) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let previous: InjectedFault | undefined;
    for (const event of this.opts.events) {
      // A timer may fire a little early: sleep until the clock really says so.
      while (!this.stopped && event.at * 1000 - this.opts.clock.now() > 0)
        await this.opts.clock.sleep(event.at * 1000 - this.opts.clock.now(), this.wake.signal);
      if (this.stopped) return;
      // Events the plan puts at one time share one boundary, the first one's (one phase, not two).
      const sameTime = previous !== undefined && previous.event.at === event.at ? previous.tMs : undefined;
      previous = await this.apply(event, sameTime);
    }
  }

  private async apply(event: FaultEvent, boundaryMs: number | undefined): Promise<InjectedFault> {
    const { driver } = this.opts;
    const tMs = this.opts.clock.now();
    let error: string | undefined;
    try {
      switch (event.action) {
        case 'down':
          await driver.kill(event.replica);
          this.down.add(event.replica);
          break;
        case 'stop':
          await driver.stop(event.replica);
          this.down.add(event.replica);
          break;
        case 'rejoin':
          await driver.start(event.replica);
          this.down.delete(event.replica);
          break;
        case 'pause':
          await driver.pause(event.replica);
          this.paused.add(event.replica);
          break;
        case 'unpause':
          await driver.unpause(event.replica);
          this.paused.delete(event.replica);
          break;
        case 'throttle':
          await driver.setCpus(event.replica, event.cpus ?? this.opts.defaultCpus);
          this.throttled.add(event.replica);
          break;
        case 'pause-replay':
          await driver.setReplayPaused(event.replica, true);
          this.replayPaused.add(event.replica);
          break;
        case 'resume-replay':
          await driver.setReplayPaused(event.replica, false);
          this.replayPaused.delete(event.replica);
          break;
      }
    } catch (err) {
      error = errorText(err);
    }
    if (error !== undefined) this.opts.log?.(`fault ${event.action} ${event.replica} failed: ${error}`);
    const fault: InjectedFault = {
      event,
      tMs: boundaryMs ?? tMs,
      issuedMs: tMs,
      doneMs: this.opts.clock.now(),
    };
    if (error !== undefined) fault.error = error;
    this.opts.onInjected(fault);
    // Checked in the background: the next event (often at the same time) must not wait for it.
    if (error === undefined) {
      const check = this.verify(event).then((reason) => {
        if (reason === undefined) return;
        this.opts.log?.(`fault ${event.action} ${event.replica} failed: ${reason}`);
        this.opts.onNotTaken?.(fault, reason);
      });
      this.checks.add(check);
      void check.finally(() => this.checks.delete(check));
    }
    return fault;
  }

  /**
   * Did the action take? A driver call that returned is not proof (a kill of a server that came
   * straight back, a pause that did not stop it): the driver's status must show the expected state.
   * A replica the status does not list, or a status that fails, cannot be checked: no verdict.
   */
  private async verify(event: FaultEvent): Promise<string | undefined> {
    const expect = EXPECTED[event.action];
    if (expect === undefined) return undefined;
    let s;
    try {
      s = (await this.opts.driver.status()).find((x) => x.id === event.replica);
    } catch {
      return undefined;
    }
    if (s === undefined) return undefined;
    const actual = expect.field === 'up' ? s.up : s.paused;
    return actual === expect.value ? undefined : `${event.replica} is ${expect.wrong} after ${event.action}`;
  }

  /** Stops injecting (pending events are dropped); waits for the event in progress and its check. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    await this.loop;
    await Promise.all([...this.checks]);
  }

  /** Undoes what this run did to the cluster: starts killed replicas, unpauses, restores quotas and replay. */
  async restore(): Promise<string[]> {
    const { driver } = this.opts;
    const restored: string[] = [];
    for (const id of this.paused) {
      await driver.unpause(id).catch(() => undefined);
      restored.push(`unpause ${id}`);
    }
    for (const id of this.down) {
      await driver
        .start(id)
        .catch((err: unknown) => this.opts.log?.(`restart ${id} failed: ${errorText(err)}`));
      restored.push(`start ${id}`);
    }
    for (const id of this.throttled) {
      await driver.setCpus(id, this.opts.defaultCpus).catch(() => undefined);
      restored.push(`cpus ${id}`);
    }
    for (const id of this.replayPaused) {
      await driver.setReplayPaused(id, false).catch(() => undefined);
      restored.push(`resume replay ${id}`);
    }
    this.paused.clear();
    this.down.clear();
    this.throttled.clear();
    this.replayPaused.clear();
    return restored;
  }
}
