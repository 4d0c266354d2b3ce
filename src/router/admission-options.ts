// The options of admission control (admission.ts), apart so that types.ts can name them
// without importing the admission router (no import cycle).
import type { AdmissionQueueOptions } from './admission-queue.js';
import type { SessionLimitOptions } from './session-limits.js';
import type { SloGuardOptions } from './slo-guard.js';

export interface AdmissionOptions {
  limits: SessionLimitOptions;
  queue: AdmissionQueueOptions;
  /** Absent: no guard (limits and queue only). */
  guard?: SloGuardOptions;
  /** One FIFO for both classes (HAProxy without set-priority-class): the lc-queue baseline. */
  classBlind?: boolean;
  /** The inner router's slow start, so a rejoining replica's limit ramps with its weight. */
  slowStartMs: number;
}
