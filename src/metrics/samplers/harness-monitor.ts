/**
 * The client process's own load: CPU (user + system) as a fraction of one core, sampled by the
 * sampler once a second, and event-loop delay, from a 10 ms timer that records how late it ran
 * (a harness that falls behind inflates every latency it measures). Raw delays go to the
 * recorder, so a phase's p99 is exact, not a summary of per-second summaries.
 */
import type { Recorder } from '../types.js';

const LOOP_PERIOD_MS = 10;

export class HarnessMonitor {
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
