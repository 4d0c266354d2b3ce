import { Rng } from '../../core/rng.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { QueryKind, WorkloadSpec } from '../../run-format/config.js';
import type { Template } from '../templates.js';
import { costsBySql, type SimCalibration } from './calibration.js';

const KINDS: readonly QueryKind[] = ['point', 'range', 'scan'];

/** Salt of the simulator's own stream: the workload's forks of the run seed stay as they are. */
const SIM_SALT = 0x5e1;

/**
 * CPU demand of each statement: lognormal with the calibration's mean and coefficient of
 * variation for the template its text names; anything else (the health check's SELECT 1) costs
 * the health check's CPU.
 */
export class DemandModel {
  private readonly rng: Rng;
  private spare: number | undefined;
  /** By statement text: plb's three (their kind's cost) and a calibrated workload's templates. */
  private readonly params: ReadonlyMap<string, { mu: number; sigma: number; mean: number }>;

  constructor(
    private readonly cal: SimCalibration,
    seed: number,
  ) {
    this.rng = DemandModel.stream(seed);
    const lognormal = ({ meanMs, cv }: { meanMs: number; cv: number }) => {
      const s2 = Math.log1p(cv * cv);
      return { mu: Math.log(Math.max(meanMs, 1e-9)) - s2 / 2, sigma: Math.sqrt(s2), mean: meanMs };
    };
    // The SQL text of each template names it (the parameters vary, the text does not).
    this.params = new Map([...costsBySql(cal)].map(([text, c]) => [text, lognormal(c)] as const));
  }

  /** The simulator's stream for a run seed, apart from the workload's. */
  static stream(seed: number): Rng {
    return new Rng(seed).fork(SIM_SALT);
  }

  /** CPU demand of one statement, ms of one core. */
  forStatement(text: string): number {
    const p = this.params.get(text);
    if (p === undefined) return this.cal.healthCpuMs;
    if (p.sigma === 0 || p.mean <= 0) return p.mean;
    return Math.exp(p.mu + p.sigma * this.normal());
  }

  /** Standard normal (Box-Muller, both values used). */
  private normal(): number {
    if (this.spare !== undefined) {
      const z = this.spare;
      this.spare = undefined;
      return z;
    }
    const u1 = 1 - this.rng.next();
    const u2 = this.rng.next();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }
}

/** Mean CPU of one query of a class with these template weights (ms of one core). */
export function classQueryCpuMs(cal: SimCalibration, weights: Record<QueryKind, number>): number {
  const total = KINDS.reduce((s, k) => s + weights[k], 0);
  return total > 0 ? KINDS.reduce((s, k) => s + (weights[k] * cal.templates[k].meanMs) / total, 0) : 0;
}

/**
 * Mean CPU of one query of a class with these templates (by weight), ms of one core; each
 * template's as the simulator charges it (costsBySql; 0: not calibrated).
 */
export function templatesCpuMs(cal: SimCalibration, ts: readonly Template[]): number {
  const costs = costsBySql(cal);
  const total = ts.reduce((s, t) => s + t.weight, 0);
  return total > 0 ? ts.reduce((s, t) => s + (t.weight * (costs.get(t.sql)?.meanMs ?? 0)) / total, 0) : 0;
}

/**
 * Mean CPU of one query of the workload (ms of one core): each class's by its templates' weights,
 * weighted by the class's share of the queries (clients times queries per session).
 */
export function meanQueryCpuMs(
  cal: SimCalibration,
  workload: WorkloadSpec,
  templates: Record<ServiceClass, readonly Template[]>,
): number {
  const q = (c: ServiceClass) => workload.mix[c] * Math.max(1, workload.classes[c].queriesPerSession);
  const total = q('premium') + q('freemium');
  if (!(total > 0)) return 0;
  return (
    (q('premium') * templatesCpuMs(cal, templates.premium) +
      q('freemium') * templatesCpuMs(cal, templates.freemium)) /
    total
  );
}
