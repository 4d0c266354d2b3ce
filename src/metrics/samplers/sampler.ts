/**
 * Once a second during a run: replica CPU (and lag with writes on), the router's view, the
 * harness, the timeline flush and the progress line.
 */
import type { Clock } from '../../clock/index.js';
import type { ClusterDriver } from '../../cluster/driver.js';
import { errorText } from '../../core/errors.js';
import type { SessionRouter } from '../../router/types.js';
import { HostCpu } from './host-cpu.js';
import type { Recorder, ReplicaState, RunWriter } from '../types.js';

export interface SamplerInputs {
  driver: Pick<ClusterDriver, 'cpuSeconds'>;
  router: Pick<SessionRouter, 'snapshot'>;
  writer: RunWriter;
  clock: Clock;
  /** Each replica's current CPU quota (a fraction is of the quota). */
  quota: ReadonlyMap<string, number>;
  ids: readonly string[];
  log: (line: string) => void;
  /** Seconds between progress lines (0: none). */
  progressEveryS: number;
  /** What a progress line names (the strategy), and the plan's length. */
  label: string;
  durationS: number;
  /** With the write workload on: replication lag, sampled alongside CPU. */
  sampleLag?: (tMs: number) => Promise<void>;
  /** Each second, after the router's view (many routers: how far they disagree). */
  perSecond?: (tMs: number) => void;
}

export class Sampler {
  private lastCpu: Record<string, number> | null = null;
  private lastCpuAt: number;
  private lastProgress = 0;
  /** The client process's own load; meaningless in virtual time, so only on the real clock. */
  private readonly harness: HarnessMonitor | undefined;
  /** The host the harness runs on (with the local and Docker drivers, the cluster's host too). */
  private readonly host: HostCpu | undefined;

  constructor(private readonly x: SamplerInputs) {
    this.lastCpuAt = x.clock.now();
    const real = x.clock.kind === 'real';
    this.harness = real ? new HarnessMonitor(() => x.clock.now(), x.writer.recorder) : undefined;
    this.host = real ? new HostCpu(() => x.clock.now()) : undefined;
  }

  async sample(): Promise<void> {
    const { writer, clock } = this.x;
    const t = clock.now();
    const h = this.harness?.sampleCpu();
    if (h) writer.recorder.harnessCpu(h.midMs, h.cpu);
    const host = this.host?.sample();
    if (host) writer.recorder.hostCpu(host.midMs, host.busy, host.steal);
    let cpu: Record<string, number> = {};
    const lag = this.x
      .sampleLag?.(t)
      .catch((err: unknown) => this.x.log(`lag sample failed: ${errorText(err)}`));
    try {
      cpu = await this.x.driver.cpuSeconds();
    } catch (err) {
      this.x.log(`cpu sample failed: ${errorText(err)}`);
    }
    await lag;
    const tAfter = clock.now();
    const fractions: Record<string, number | null> = {};
    const dt = (tAfter - this.lastCpuAt) / 1000;
    for (const id of this.x.ids) {
      const cur = cpu[id];
      const prev = this.lastCpu?.[id];
      fractions[id] =
        cur === undefined || prev === undefined || dt <= 0 || cur < prev
          ? null
          : (cur - prev) / dt / (this.x.quota.get(id) ?? 1);
    }
    // A fraction covers [lastCpuAt, tAfter]: stamp it at the middle, so a sample taken just after
    // a fault (covering the second before it) is not counted in the fault's phase.
    writer.recorder.cpu((this.lastCpuAt + tAfter) / 2, fractions);
    this.lastCpu = cpu;
    this.lastCpuAt = tAfter;
    const state: Record<string, ReplicaState> = {};
    for (const s of this.x.router.snapshot())
      state[s.id] = {
        ...s.sessions,
        role: s.role,
        healthy: s.healthy,
        ...(s.weight !== undefined ? { weight: s.weight } : {}),
      };
    writer.recorder.replicaState(t, state);
    this.x.perSecond?.(t);
    writer.tick(t);
    this.progress(t);
  }

  private progress(t: number): void {
    const every = this.x.progressEveryS;
    if (every <= 0 || t - this.lastProgress < every * 1000) return;
    this.lastProgress = t;
    const p = this.x.writer.progress(t, every);
    const f = (c: { p95: number | null; goodput: number }): string =>
      `p95 ${c.p95 === null ? '-' : c.p95.toFixed(1)} ms ${c.goodput.toFixed(0)} q/s`;
    this.x.log(
      `[${this.x.label} ${p.phase} ${(t / 1000).toFixed(0)}/${this.x.durationS}s] premium ${f(p.premium)} | freemium ${f(p.freemium)}`,
    );
  }

  /**
   * Samples once a second until the plan's end; true when an interrupt stopped it early.
   */
  async untilEnd(signal: AbortSignal | undefined): Promise<boolean> {
    const { clock } = this.x;
    const durationMs = this.x.durationS * 1000;
    await this.sample();
    while (clock.now() < durationMs) {
      const next = Math.min(durationMs, (Math.floor(clock.now() / 1000) + 1) * 1000);
      await clock.sleep(next - clock.now(), signal);
      if (signal?.aborted) {
        this.x.log('interrupted: stopping clients, restoring replicas, keeping what was measured');
        return true;
      }
      await this.sample();
    }
    return false;
  }

  /** Stops the harness monitor; returns the run's end time (the plan's end at most). */
  stop(): number {
    this.harness?.stop();
    return Math.min(this.x.clock.now(), this.x.durationS * 1000);
  }
}

const LOOP_PERIOD_MS = 10;

/**
 * The client process's own load: CPU (user + system) as a fraction of one core, sampled by the
 * sampler once a second, and event-loop delay, from a 10 ms timer that records how late it ran
 * (a harness that falls behind inflates every latency it measures). Raw delays go to the
 * recorder, so a phase's p99 is exact, not a summary of per-second summaries.
 */
class HarnessMonitor {
  private cpu = process.cpuUsage();
  private at: number;
  private last: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly now: () => number,
    recorder: Recorder,
  ) {
    this.at = now();
    this.last = this.at;
    this.timer = setInterval(() => {
      const t = now();
      recorder.loopDelay(t, Math.max(0, t - this.last - LOOP_PERIOD_MS));
      this.last = t;
    }, LOOP_PERIOD_MS);
  }

  /** CPU over the interval since the last sample, stamped at its middle (like the CPU fractions). */
  sampleCpu(): { midMs: number; cpu: number } {
    const t = this.now();
    const used = process.cpuUsage(this.cpu);
    this.cpu = process.cpuUsage();
    const wallUs = Math.max(1, (t - this.at) * 1000);
    const midMs = (this.at + t) / 2;
    this.at = t;
    return { midMs, cpu: (used.user + used.system) / wallUs };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
