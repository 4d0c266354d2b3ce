// The scheduler's time slice the simulator uses (SimCalibration.sliceMs): on this project's
// kernels (CONFIG_HZ=250, no forced preemption) a running backend gives the core up at a tick,
// so a slice is one tick, 1000 / CONFIG_HZ ms. Read from the running kernel's build config.
import { existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';
import { gunzipSync } from 'node:zlib';

/** The running kernel's build configuration text, or null when it cannot be read. */
function kernelConfig(): string | null {
  try {
    if (existsSync('/proc/config.gz')) return gunzipSync(readFileSync('/proc/config.gz')).toString('utf8');
    const boot = `/boot/config-${release()}`;
    if (existsSync(boot)) return readFileSync(boot, 'utf8');
  } catch {
    // Unreadable: the caller leaves the slice out (processor sharing).
  }
  return null;
}

/** 1000 / CONFIG_HZ, and the HZ it came from; null when the config does not say. */
export function kernelTickMs(config: string | null = kernelConfig()): { sliceMs: number; hz: number } | null {
  const hz = Number(/^CONFIG_HZ=(\d+)$/m.exec(config ?? '')?.[1]);
  return Number.isInteger(hz) && hz > 0 ? { sliceMs: 1000 / hz, hz } : null;
}
