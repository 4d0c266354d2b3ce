import type { Clock } from '../clock/index.js';
import type { ClusterDriver, FaultArgs } from '../cluster/driver.js';
import { errorText, PlbError } from '../core/errors.js';
import {
  FAULT_ACTION_SPECS,
  driverApplies,
  eventFields,
  undoingAction,
  type FaultAction,
  type StatusCheck,
  type UndoingAction,
} from '../run-format/fault-actions.js';
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

/** What the driver's status must show after an action whose spec names this check. */
const EXPECTED: { readonly [C in StatusCheck]: { field: 'up' | 'paused'; value: boolean; wrong: string } } = {
  'not-up': { field: 'up', value: false, wrong: 'still up' },
  paused: { field: 'paused', value: true, wrong: 'not paused' },
  'not-paused': { field: 'paused', value: false, wrong: 'still paused' },
};

/**
 * How a run that ends early undoes what it left in effect: one step per action that undoes
 * another (the specs' `undoneBy`), run in this order (unfrozen first, restarted, then what needs
 * a running server), with the word `restore()` reports it by. `failure`: a failed step is logged
 * with this word (a replica that does not come back matters; the other steps are best effort).
 */
const RESTORE: { readonly [A in UndoingAction]: { label: string; failure?: string } } = {
  heal: { label: 'heal', failure: 'heal' },
  unpause: { label: 'unpause' },
  rejoin: { label: 'start', failure: 'restart' },
  throttle: { label: 'cpus' },
  'resume-replay': { label: 'resume replay' },
};

/**
 * Applies the plan's events at their times, one after another in the order written (events at
 * one time keep their order). It never tells the router: detection is the health checker's job.
 */
export class Injector {
  private stopped = false;
  private readonly wake = new AbortController();
  private loop: Promise<void> | undefined;
  /** What the run changed and must undo when it ends early: the replicas each undoing action is for. */
  private readonly pending = new Map<FaultAction, Set<string>>();
  private readonly checks = new Set<Promise<void>>();

  /** Refuses, before the run starts, a plan with an action its driver does not apply. */
  constructor(private readonly opts: InjectorOptions) {
    const kind = opts.driver.kind;
    const e = opts.events.find((ev) => !driverApplies(ev.action, kind));
    if (e !== undefined)
      throw new PlbError(
        'BAD_INPUT',
        `plan line ${e.line}: ${e.action} ${e.replica}: the ${kind} driver does not apply ${e.action}`,
        { hint: `${e.action} needs --driver ${FAULT_ACTION_SPECS[e.action].drivers?.join(' or ')}` },
      );
  }

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
      await driver.faults[event.action](event.replica, this.args(event));
      this.track(event);
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

  /** The driver call's arguments: the event's fields, the run's quota for a cpus it has not. */
  private args(event: FaultEvent): FaultArgs {
    return { cpus: this.opts.defaultCpus, ...eventFields(event) };
  }

  /** An action ends what its own undo was pending for, and may leave one of its own. */
  private track(event: FaultEvent): void {
    const undoneBy = undoingAction(event.action);
    // A throttle undoes itself: the replica keeps its place in the restore order.
    // A heal of one kind (`what:`) may leave others: the replica's heal stays pending.
    if (undoneBy !== event.action && event.what === undefined)
      this.pending.get(event.action)?.delete(event.replica);
    if (undoneBy === null) return;
    const set = this.pending.get(undoneBy) ?? new Set<string>();
    this.pending.set(undoneBy, set.add(event.replica));
  }

  /**
   * Did the action take? A driver call that returned is not proof (a kill of a server that came
   * straight back, a pause that did not stop it): the driver's status must show the expected state.
   * A replica the status does not list, or a status that fails, cannot be checked: no verdict.
   */
  private async verify(event: FaultEvent): Promise<string | undefined> {
    const check = FAULT_ACTION_SPECS[event.action].check;
    if (check === null) return undefined;
    const expect = EXPECTED[check];
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
    for (const action of Object.keys(RESTORE) as UndoingAction[]) {
      const { label, failure } = RESTORE[action];
      for (const id of this.pending.get(action) ?? []) {
        await driver.faults[action](id, { cpus: this.opts.defaultCpus }).catch((err: unknown) => {
          if (failure !== undefined) this.opts.log?.(`${failure} ${id} failed: ${errorText(err)}`);
        });
        restored.push(`${label} ${id}`);
      }
    }
    this.pending.clear();
    return restored;
  }
}
