/**
 * What `plb proxy` adds around a running proxy to operate it (run.ts): the admin routes on
 * --metrics-port, and the drain (SIGUSR2 or POST /drain) as a way for the run to end.
 */
import type { HttpRoute } from '../../metrics/metrics-server.js';
import type { ProxyHandle } from '../proxy-server.js';
import { adminRoutes } from './admin-routes.js';
import type { AdminSource } from './admin-view.js';
import { onDrainSignal, ProxyDrain } from './drain.js';

export class AdminRunner {
  private state: { view: AdminSource; drain: ProxyDrain } | undefined;
  private undrain: (() => void) | undefined;
  /** For startMetricsServer; they answer 503 until attach(). */
  readonly routes: Record<string, HttpRoute> = adminRoutes(() => this.state);

  constructor(
    private readonly o: {
      drainTimeoutMs: number;
      log: (line: string) => void;
      signals: Pick<NodeJS.Process, 'on' | 'off'>;
    },
  ) {}

  /** The proxy listens: the view reads it, SIGUSR2 drains it. */
  attach(proxy: ProxyHandle, info: Pick<AdminSource, 'strategy' | 'startedMs' | 'admission'>): void {
    const drain = new ProxyDrain(proxy, { timeoutMs: this.o.drainTimeoutMs, log: this.o.log });
    this.state = {
      drain,
      view: { proxy, ...info, now: () => Date.now(), draining: () => drain.draining },
    };
    this.undrain = onDrainSignal(this.o.signals, drain);
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
    this.undrain?.();
    this.state?.drain.dispose();
  }
}
