import type { SimCalibration } from './calibration.js';

/**
 * The testbed's replicas, primary and harness share the host's cores, and so does whatever else
 * runs there: a replica's CPU quota is a ceiling, not a guarantee (docs/simulator.md has what a
 * loaded host delivered). The model takes that as one number, the calibration's hostShare: the
 * fraction of its quota the host delivers to a replica that wants it all. The CFS budget of each
 * period is the quota times that share.
 */
export function deliveredCores(cpus: number, cal: Pick<SimCalibration, 'hostShare'>): number {
  return cpus * (cal.hostShare ?? 1);
}

/** Phases of a real run: the replicas' mean CPU (fraction of quota) and each class's p95. */
export interface ObservedPhase {
  cpuMean: number | null;
  p95Ms: number[];
}

/**
 * hostShare from real runs: the median CPU fraction of the phases in which the replicas were
 * saturated (a class's p95 above `saturatedP95Ms`: queries waited far longer than they run), or
 * null when no phase was. A replica that is not saturated uses less than it could, so its
 * fraction says nothing of the host.
 */
export function hostShareFromPhases(phases: readonly ObservedPhase[], saturatedP95Ms = 500): number | null {
  const xs = phases
    .filter((p) => p.cpuMean !== null && p.p95Ms.some((x) => x >= saturatedP95Ms))
    .map((p) => p.cpuMean as number)
    .sort((a, b) => a - b);
  if (xs.length === 0) return null;
  const mid = xs.length >> 1;
  const m = xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2;
  return Math.min(1, Math.max(0.01, m));
}
