import { PlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';

/**
 * The SLO guard: watches premium's recent query latency (p95 over a sliding window) against a
 * target and, while it is above, takes capacity from freemium in a fixed order: first the premium
 * replicas freemium borrowed, then its share of the mixed (shared) replicas, then its own
 * replicas' limits. Freemium never goes below `minShare` of the session limit of any replica of
 * its own or mixed role: that floor is its guaranteed share (it is never starved). Pure: time is
 * passed in; it moves one step per interval (up when above target, down when below it by the
 * hysteresis), so one slow second neither starves nor floods freemium.
 */
export type SloTarget = { kind: 'absolute'; ms: number } | { kind: 'relative'; factor: number };

export interface SloGuardOptions {
  target: SloTarget;
  /** The share of every own or mixed replica's limit freemium always keeps, in [0, 1] (default 0.25). */
  minShare?: number;
  /**
   * The window premium's p95 is taken over, ms (default 15000): a p95 over a few seconds of
   * premium queries swings by several times on its own, and a guard chasing it never settles.
   */
  windowMs?: number;
  /** A relative target's reference: premium's p95 over this window before the first failure (default 30000, as ref). */
  referenceWindowMs?: number;
  /** How often the guard moves, ms (default 1000). */
  intervalMs?: number;
  /** Tightening (and loosening) per interval while above (below) target (default 0.25 of the full range). */
  step?: number;
  /** Loosen only below target x (1 - hysteresis) (default 0.1). */
  hysteresis?: number;
}

/** Where a freemium session would land, as the guard sees it. */
export type Place = 'own' | 'shared' | 'borrowed';

export const DEFAULT_MIN_SHARE = 0.25;
/** Fewer premium samples than this in the window: no verdict, the guard holds its level. */
const MIN_SAMPLES = 20;
const MAX_SAMPLES = 16_384;

export class SloGuard {
  readonly minShare: number;
  private readonly windowMs: number;
  private readonly referenceWindowMs: number;
  private readonly intervalMs: number;
  private readonly step: number;
  private readonly hysteresis: number;
  /** Ring of premium samples: end time and latency. */
  private readonly at = new Float64Array(MAX_SAMPLES);
  private readonly lat = new Float64Array(MAX_SAMPLES);
  private head = 0;
  private count = 0;
  private nextMs: number | undefined;
  private refMs: number | undefined;
  /** 0 = freemium has everything; 1 = freemium holds only its floor. */
  level = 0;
  /** Premium's p95 in the last full window (null: too few samples). */
  lastP95: number | null = null;

  constructor(readonly opts: SloGuardOptions) {
    const t = opts.target;
    if (t.kind === 'absolute' && !(t.ms > 0 && Number.isFinite(t.ms)))
      throw new PlbError('BAD_INPUT', `SLO target must be a duration > 0 (got ${String(t.ms)} ms)`);
    if (t.kind === 'relative' && !(t.factor > 0 && Number.isFinite(t.factor)))
      throw new PlbError('BAD_INPUT', `SLO target factor must be > 0 (got ${String(t.factor)})`);
    this.minShare = opts.minShare ?? DEFAULT_MIN_SHARE;
    if (!(this.minShare >= 0 && this.minShare <= 1))
      throw new PlbError('BAD_INPUT', `SLO guard min share must be in [0, 1] (got ${String(this.minShare)})`);
    this.windowMs = opts.windowMs ?? 15_000;
    this.referenceWindowMs = opts.referenceWindowMs ?? 30_000;
    this.intervalMs = opts.intervalMs ?? 1000;
    this.step = opts.step ?? 0.25;
    this.hysteresis = opts.hysteresis ?? 0.1;
  }

  /** The premium p95 target in ms, or undefined while a relative target has no reference yet. */
  targetMs(): number | undefined {
    const t = this.opts.target;
    if (t.kind === 'absolute') return t.ms;
    return this.refMs === undefined ? undefined : this.refMs * t.factor;
  }

  /** The reference premium p95 a relative target is a multiple of (set by freezeReference). */
  referenceMs(): number | undefined {
    return this.refMs;
  }

  observe(cls: ServiceClass, latencyMs: number, nowMs: number): void {
    if (cls !== 'premium' || !(latencyMs >= 0)) return;
    this.at[this.head] = nowMs;
    this.lat[this.head] = latencyMs;
    this.head = (this.head + 1) % MAX_SAMPLES;
    if (this.count < MAX_SAMPLES) this.count++;
  }

  /** Premium's p95 over the window ending at nowMs (null: fewer than MIN_SAMPLES). */
  p95(nowMs: number, windowMs = this.windowMs): number | null {
    const xs: number[] = [];
    for (let k = 0; k < this.count; k++) {
      const i = (this.head - 1 - k + MAX_SAMPLES) % MAX_SAMPLES;
      if ((this.at[i] as number) < nowMs - windowMs) break;
      xs.push(this.lat[i] as number);
    }
    if (xs.length < MIN_SAMPLES) return null;
    xs.sort((a, b) => a - b);
    return xs[Math.min(xs.length - 1, Math.ceil(0.95 * xs.length) - 1)] as number;
  }

  /**
   * The reference for a relative target: premium's p95 just before the first failure (the
   * router calls this on its first markDown). Later calls keep the first reference.
   */
  freezeReference(nowMs: number): void {
    if (this.refMs !== undefined) return;
    const p = this.p95(nowMs, this.referenceWindowMs);
    if (p !== null) this.refMs = p;
  }

  /** Moves the level at most once per interval. */
  update(nowMs: number): void {
    if (this.nextMs === undefined) this.nextMs = nowMs + this.intervalMs;
    if (nowMs < this.nextMs) return;
    this.nextMs = nowMs + this.intervalMs;
    const p = this.p95(nowMs);
    this.lastP95 = p;
    const target = this.targetMs();
    if (p === null || target === undefined) return;
    if (p > target) this.level = Math.min(1, this.level + this.step);
    else if (p < target * (1 - this.hysteresis)) this.level = Math.max(0, this.level - this.step);
  }

  /**
   * How many freemium sessions a replica with session limit `limit` may hold at this level.
   * borrowed: all of it at level 0, none above. shared: shrinks over the first half of the range;
   * own: over the second half. Own and shared never drop below ceil(minShare x limit).
   */
  freemiumCap(place: Place, limit: number): number {
    if (this.level <= 0) return limit;
    if (place === 'borrowed') return 0;
    const floor = Math.ceil(this.minShare * limit);
    const cut = place === 'shared' ? Math.min(1, 2 * this.level) : Math.max(0, 2 * this.level - 1);
    return Math.max(floor, Math.round(limit * (1 - cut)));
  }
}
