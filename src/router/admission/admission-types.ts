import type { AdmissionQueueOptions } from './admission-queue.js';
import type { SessionLimitOptions } from './session-limits.js';
import type { SloGuardOptions } from './slo-guard.js';

/** The options of priority admission (admission.ts): limits, the queue, the SLO guard. */
export interface AdmissionOptions {
  limits: SessionLimitOptions;
  queue: AdmissionQueueOptions;
  /** Absent: no guard (limits and queue only). */
  guard?: SloGuardOptions;
  /**
   * The share of a premium replica's limit freemium may not take, in [0, 1] (absent: 0): the
   * last ceil(share x limit) free slots of a replica of premium's role are premium's, so a
   * freemium flood that borrows or overflows onto it still leaves premium a slot at once.
   */
  premiumReserve?: number;
  /**
   * The same for freemium's own replicas against premium, in [0, 1] (absent: 0): premium,
   * borrowing or overflowing onto a replica of freemium's role, leaves its last
   * ceil(share x limit) slots, so freemium is never starved (the bench sets it to the guard's
   * min share: one share freemium always keeps, against the guard and against premium).
   */
  freemiumReserve?: number;
  /** One FIFO for both classes (HAProxy without set-priority-class): the lc-queue baseline. */
  classBlind?: boolean;
  /** The inner router's slow start, so a rejoining replica's limit ramps with its weight. */
  slowStartMs: number;
}
