/**
 * What `plb proxy` adds around a running proxy to operate it (run.ts): the admin routes on
 * --metrics-port, and the drain (SIGUSR2 or POST /drain) as a way for the run to end.
 */
import type { HttpRoute } from '../../metrics/metrics-server.js';
import type { ProxyHandle } from '../proxy-server.js';
import { adminRoutes } from './admin-routes.js';
import type { AdminSource } from './admin-view.js';
import { DRAIN_SIGNAL, drainTargets, ProxyDrain, type DrainTarget } from './drain.js';

export class AdminRunner {
  private state: { view: AdminSource; drain: ProxyDrain } | undefined;
  /** A drain asked for before the proxy listened: started as soon as it does. */
  private pending: string | undefined;
  private readonly onSignal = (): void => this.drain(DRAIN_SIGNAL);
  /** For startMetricsServer; they answer 503 until attach(). */
  readonly routes: Record<string, HttpRoute> = adminRoutes(() => this.state);

  constructor(
    private readonly o: {
      drainTimeoutMs: number;
      log: (line: string) => void;
      signals: Pick<NodeJS.Process, 'on' | 'off'>;
    },
  ) {
    // From the start: SIGUSR2's default action would end the process.
    o.signals.on(DRAIN_SIGNAL, this.onSignal);
  }

  /** The proxy listens: the view reads it, SIGUSR2 drains it and `others` (the primary listener). */
  attach(
    proxy: ProxyHandle,
    info: Pick<AdminSource, 'strategy' | 'startedMs' | 'drainingReplicas'> & {
      admission:
        | { queue: number; timeoutMs: number; premiumReserve: number; freemiumReserve: number }
        | undefined
        | null;
    },
    others: readonly DrainTarget[] = [],
  ): void {
    const target = others.length === 0 ? proxy : drainTargets([proxy, ...others]);
    const drain = new ProxyDrain(target, { timeoutMs: this.o.drainTimeoutMs, log: this.o.log });
    const a = info.admission;
    const admission = a
      ? {
          queue: a.queue,
          timeoutMs: a.timeoutMs,
          premiumReserve: a.premiumReserve,
          freemiumReserve: a.freemiumReserve,
        }
      : null;
    this.state = {
      drain,
      view: { proxy, ...info, admission, now: () => Date.now(), draining: () => drain.draining },
    };
    if (this.pending !== undefined) drain.start(`${this.pending}, while starting`);
  }

  private drain(why: string): void {
    if (this.state) this.state.drain.start(why);
    else this.pending ??= why;
  }

  /**
   * Resolves at a stop signal or at a drain's end, with how long stop() should let the sessions
   * left go on: the stop timeout after a signal, none after a drain (all ended, or its time passed).
   */
  async until(stop: AbortSignal, stopTimeoutMs: number): Promise<number> {
    const drain = this.state?.drain;
    const stopped = new Promise<'stop'>((resolve) => {
      if (stop.aborted) resolve('stop');
      stop.addEventListener('abort', () => resolve('stop'), { once: true });
    });
    const how = await Promise.race(drain ? [stopped, drain.finished] : [stopped]);
    return how === 'stop' ? stopTimeoutMs : 0;
  }

  dispose(): void {
    this.o.signals.off(DRAIN_SIGNAL, this.onSignal);
    this.state?.drain.dispose();
  }
}
